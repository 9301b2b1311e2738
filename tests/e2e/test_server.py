"""The server as a whole: one error shape for malformed requests, slow stream readers that stall
nobody else, 100 concurrent execs across 10 sandboxes, and configuration errors at start-up."""

import concurrent.futures
import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BIN, ServerTestCase, main


class ErrorShapeTest(ServerTestCase):
    def test_bad_json_unknown_routes_methods_fields(self):
        s = self.server
        self.assertError(s.request("POST", "/v1/sandboxes", body="{not json",
                                   headers={"Content-Type": "application/json"}),
                         400, "invalid_request")
        self.assertError(s.request("POST", "/v1/sandboxes", body="[1, 2]"), 400, "invalid_request")
        self.assertError(s.request("GET", "/v1/nope"), 404, "not_found")
        self.assertError(s.request("GET", "/nope"), 404, "not_found")
        # "/" is the web console's index when its assets are built (bin/console), and the
        # one error shape when they are not; either way never a 500 or a stack trace.
        r = s.request("GET", "/")
        if r.status == 200:
            self.assertIn("text/html", r.headers["content-type"])
        else:
            self.assertError(r, 404, "not_found")
        r = s.request("PUT", "/v1/sandboxes")
        self.assertError(r, 405, "method_not_allowed")
        self.assertIn("POST", r.headers["allow"])
        r = s.request("POST", "/v1/sandboxes", {"memory_mb": 256, "colour": "blue"})
        self.assertError(r, 400, "invalid_request")
        self.assertIn("colour", r.json()["error"]["message"])
        r = s.request("POST", "/v1/sandboxes", {"cpus": "two"})
        self.assertError(r, 400, "invalid_request")
        self.assertIn("cpus", r.json()["error"]["message"])
        r = s.request("POST", "/v1/sandboxes", body=json.dumps({"env": {"A": "x" * (2 << 20)}}))
        self.assertError(r, 413, "payload_too_large")
        r = s.request("POST", "/v1/sandboxes/sb_0000000000000000/timeout", {"timeout_seconds": 5})
        self.assertError(r, 404, "not_found")

    def test_a_failed_host_call_shows_no_host_text_to_clients(self):
        # The ns backend's state directory vanishes under a running server: the create fails at
        # a host call (mkdir). The client's answer and the sandbox's record say what failed,
        # never the host path or the host's errno text (ADR 0016).
        data = self.server.data_dir
        state, away = os.path.join(data, "sandboxes"), os.path.join(data, "sandboxes.away")
        os.rename(state, away)
        try:
            r = self.server.request("POST", "/v1/sandboxes", {"template": "base"})
        finally:
            os.rename(away, state)
        self.assertError(r, 502, "backend_error")
        message = r.json()["error"]["message"]
        for host_text in (data, "/var/", "No such file"):
            self.assertNotIn(host_text, message)
        self.assertIn("a host operation failed", message)
        # The operator's log has the whole account (the error's detail), with the request id
        # the client's message names.
        log = self.server.log_tail(200)
        self.assertIn("No such file", log)
        self.assertIn(state, log)
        listed = self.server.request("GET", "/v1/sandboxes?status=error").json()["sandboxes"]
        self.assertEqual(len(listed), 1, listed)  # the failed create's record, with its reason
        self.assertIn("a host operation failed", listed[0]["error_message"])
        for sb in listed:
            self.assertNotIn(data, json.dumps(sb))
            self.assertNotIn("No such file", json.dumps(sb))
            self.server.request("DELETE", "/v1/sandboxes/" + sb["id"])
        self.assertEqual(self.server.run(self.create()["id"], "echo ok")["stdout"], "ok\n")

    def test_request_ids_and_healthz(self):
        r = self.server.request("GET", "/healthz", headers={"X-Request-Id": "my-trace-1"})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json()["status"], "ok")
        self.assertEqual(r.headers["x-request-id"], "my-trace-1")
        r = self.server.request("GET", "/v1/sandboxes")
        self.assertRegex(r.headers["x-request-id"], r"^req_[0-9a-f]{16}$")

    def test_garbage_and_oversized_headers_do_not_hurt_the_server(self):
        cases = ((b"NOT HTTP AT ALL\r\n\r\n", b" 400 "),
                 (b"GET / HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n", b" 431 "),
                 (b"POST /v1/sandboxes HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", None))
        for raw, status in cases:
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as c:
                answer = b""
                try:
                    c.sendall(raw)
                    c.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # the server may answer and close before we finish
                try:
                    while True:
                        chunk = c.recv(65536)
                        if not chunk:
                            break
                        answer += chunk
                except OSError:
                    pass
                if status:
                    self.assertIn(status, answer.split(b"\r\n", 1)[0], answer[:200])
        self.assertEqual(self.server.request("GET", "/healthz").status, 200)


class SlowReaderTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_EXEC_OUTPUT_BYTES": str(1 << 30)}

    def test_a_stream_nobody_reads_stalls_nobody_else(self):
        s = self.server
        a = self.create()["id"]
        b = self.create()["id"]
        # A client that asks for 300 MB of output and never reads it.
        body = json.dumps({"command": "yes flood | head -c 300000000; echo end",
                           "timeout": 120})
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(("POST /v1/sandboxes/%s/exec/stream HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (a, len(body), body)).encode())
        try:
            time.sleep(1.5)  # let the buffers fill
            t0 = time.time()
            for _ in range(20):
                self.assertEqual(s.request("GET", "/healthz", timeout=5).status, 200)
            self.assertEqual(s.request("GET", "/v1/sandboxes", timeout=5).status, 200)
            self.assertEqual(s.run(b, "echo other sandbox")["stdout"], "other sandbox\n")
            # The same sandbox still serves other channels.
            self.assertEqual(s.run(a, "echo same sandbox")["stdout"], "same sandbox\n")
            self.assertLess(time.time() - t0, 5)
            # Back-pressure: the flood is held up by its unread stream, not finished.
            self.assertIn("yes", s.run(a, "ps -eo comm")["stdout"].split())
        finally:
            slow.close()
        # The reader went away: its command is stopped.
        deadline = time.time() + 15
        while time.time() < deadline:
            ps = s.run(a, "ps -eo comm")["stdout"].split()
            if "yes" not in ps and "head" not in ps:
                break
            time.sleep(0.2)
        self.assertNotIn("yes", ps)


class ConcurrencyTest(ServerTestCase):
    def test_100_concurrent_execs_across_10_sandboxes(self):
        s = self.server
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            sandboxes = list(pool.map(lambda _: self.create()["id"], range(10)))
        self.assertEqual(len(set(sandboxes)), 10)

        def one(i):
            sid = sandboxes[i % 10]
            r = s.exec(sid, {"command": "echo $((%d * %d)); sleep 0.3; echo done-%d >&2" % (i, i, i),
                             "timeout": 60})
            return i, sid, r

        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(100) as pool:
            results = list(pool.map(one, range(100)))
        elapsed = time.time() - t0
        for i, sid, r in results:
            self.assertEqual(r.status, 200, (i, sid, r))
            body = r.json()
            self.assertEqual(body["stdout"], "%d\n" % (i * i), (i, body))
            self.assertEqual(body["stderr"], "done-%d\n" % i, (i, body))
            self.assertEqual(body["exit_code"], 0)
        print("100 concurrent execs over 10 sandboxes: %.2f s" % elapsed)
        self.assertLess(elapsed, 60)

    def test_concurrent_streams(self):
        sid = self.create()["id"]

        def one(i):
            _, status, events = self.server.stream(sid, {"command": "for j in 1 2 3; do echo %d-$j; sleep 0.1; done" % i})
            return status, "".join(e.get("data", "") for e in events if e["type"] == "stdout"), events[-1]

        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            for i, (status, out, last) in enumerate(pool.map(one, range(20))):
                self.assertEqual(status, 200)
                self.assertEqual(out, "%d-1\n%d-2\n%d-3\n" % (i, i, i))
                self.assertEqual(last["type"], "exit")


class CliClientTest(ServerTestCase):
    """The CLI's client verbs against the real server (ADR 0007)."""

    def cli(self, *args, stdin=None):
        env = dict(os.environ)
        env["AGENT_SANDBOX_URL"] = "http://127.0.0.1:%d" % self.server.port
        if self.server.__dict__.get("api_key"):
            env["AGENT_SANDBOX_API_KEY"] = self.server.api_key
        return subprocess.run([BIN] + list(args), env=env, capture_output=True, timeout=120,
                              input=stdin)

    def test_verbs(self):
        p = self.cli("create", "--memory-mb", "256", "--timeout", "300", "-e", "GREETING=hi")
        self.assertEqual(p.returncode, 0, p.stderr)
        sid = p.stdout.decode().strip()
        self._created.append(sid)
        self.assertRegex(sid, r"^sb_[0-9a-f]{16}$")
        ls = self.cli("ls")
        self.assertEqual(ls.returncode, 0)
        self.assertIn(sid, ls.stdout.decode())
        insp = self.cli("inspect", sid)
        self.assertEqual(json.loads(insp.stdout)["memory_mb"], 256)
        # exec streams stdout and stderr apart, byte-exact, and passes the exit code through.
        ex = self.cli("exec", sid, "--", "sh", "-c", 'printf "$GREETING\\377"; echo e >&2; exit 7')
        self.assertEqual(ex.returncode, 7, ex.stderr)
        self.assertEqual(ex.stdout, b"hi\xff")
        self.assertEqual(ex.stderr, b"e\n")
        self.assertEqual(self.cli("exec", sid, "--", "printf", "%s|", "a b", "$HOME").stdout,
                         b"a b|$HOME|")
        self.assertEqual(self.cli("exec", "--timeout", "1", sid, "--", "sleep", "30").returncode,
                         124)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "in.bin")
            data = os.urandom(100000)
            with open(src, "wb") as f:
                f.write(data)
            os.chmod(src, 0o750)
            self.assertEqual(self.cli("cp", src, sid + ":/workspace/x/in.bin").returncode, 0)
            self.assertEqual(self.cli("exec", sid, "--", "stat", "-c", "%a", "x/in.bin").stdout,
                             b"750\n")
            out = os.path.join(d, "out.bin")
            self.assertEqual(self.cli("cp", sid + ":x/in.bin", out).returncode, 0)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), data)
            self.assertEqual(self.cli("cp", sid + ":x/in.bin", "-").stdout, data)
            bad = self.cli("cp", src, os.path.join(d, "also-local"))
            self.assertEqual(bad.returncode, 125)
        t = self.cli("timeout", sid, "600")
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertRegex(t.stdout.decode(), r"^\d{4}-\d\d-\d\dT")
        self.assertEqual(self.cli("rm", sid).returncode, 0)
        gone = self.cli("inspect", sid)
        self.assertEqual(gone.returncode, 125)
        self.assertIn(b"not_found", gone.stderr)
        self.assertEqual(self.cli("exec", sid, "--", "true").returncode, 125)

    def test_unreachable_server(self):
        env = dict(os.environ, AGENT_SANDBOX_URL="http://127.0.0.1:1")
        p = subprocess.run([BIN, "ls"], env=env, capture_output=True, timeout=30)
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"cannot connect", p.stderr)


class ConfigErrorTest(unittest.TestCase):
    """Start-up refuses bad configuration with "configuration error: ..." and exit code 2,
    before touching the data directory. Needs only the binary."""

    def serve(self, env, args=()):
        data = os.path.join(tempfile.gettempdir(), "asb-e2e-never-" + os.urandom(4).hex())
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("AGENT_SANDBOX_"):
                del e[k]
        e.update({"AGENT_SANDBOX_DATA_DIR": data, "AGENT_SANDBOX_PORT": "1"})
        e.update(env)
        p = subprocess.run([BIN, "serve"] + list(args), env=e, capture_output=True, text=True,
                           timeout=30)
        self.assertFalse(os.path.exists(data), "data dir created despite a config error")
        return p

    def test_bad_values_exit_2(self):
        cases = [
            ({"AGENT_SANDBOX_PORT": "abc", "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"}, (),
             "AGENT_SANDBOX_PORT"),
            ({"AGENT_SANDBOX_PORT": "70000", "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"}, (),
             "AGENT_SANDBOX_PORT"),
            ({"AGENT_SANDBOX_MAX_SANDBOXES": "0", "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"}, (),
             "AGENT_SANDBOX_MAX_SANDBOXES"),
            ({"AGENT_SANDBOX_MAX_CPUS": "-1", "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"}, (),
             "AGENT_SANDBOX_MAX_CPUS"),
            ({"AGENT_SANDBOX_DATA_DIR": "relative/dir", "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"},
             (), "AGENT_SANDBOX_DATA_DIR"),
            ({"AGENT_SANDBOX_INSECURE_NO_AUTH": "maybe"}, (), "AGENT_SANDBOX_INSECURE_NO_AUTH"),
            ({"AGENT_SANDBOX_DEFAULT_MEMORY_MB": "9000", "AGENT_SANDBOX_MAX_MEMORY_MB": "1024",
              "AGENT_SANDBOX_INSECURE_NO_AUTH": "true"}, (), "memory"),
            ({}, ("--insecure-no-auth", "--max-file-bytes", "ten"), "--max-file-bytes"),
            ({}, (), "insecure-no-auth"),
        ]
        for env, args, needle in cases:
            with self.subTest(env=env, args=args):
                p = self.serve(env, args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith("configuration error: "), p.stderr)
                self.assertIn(needle, p.stderr)

    def test_every_bad_value_stops_start_up_even_when_a_flag_overrides_it(self):
        p = self.serve({"AGENT_SANDBOX_MAX_SANDBOXES": "x"}, ("--max-sandboxes", "5"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("AGENT_SANDBOX_MAX_SANDBOXES", p.stderr)

    def test_flags_are_applied_after_the_environment(self):
        p = self.serve({"AGENT_SANDBOX_MAX_FILE_BYTES": "10", "AGENT_SANDBOX_INSECURE_NO_AUTH": "1"},
                       ("--max-file-bytes", "-5"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("--max-file-bytes", p.stderr)


if __name__ == "__main__":
    main(needs_sandboxes=False)
