"""ADR 0011 over HTTP: background processes, stdin, signals, PTYs and the terminal WebSocket,
against the real server and real sandboxes.

The re-attach test waits ASB_PROCS_REATTACH_WAIT seconds (default 5) between starting the web
server and re-attaching to its log. The issue asks for 3 minutes: the CTest line
e2e_processes_long (registered with -DASB_LONG_TESTS=ON, label "long", not run by
scripts/test.sh) sets it to 180; CI runs the short wait."""

import asyncio
import base64
import json
import os
import threading
import time

from harness import ServerTestCase, main, openapi_check, sandbox_pids

try:
    import websockets  # Debian 12: python3-websockets (10.4), see scripts/install-deps.sh
except ImportError:  # pragma: no cover - depends on the interpreter
    websockets = None

REATTACH_WAIT = float(os.environ.get("ASB_PROCS_REATTACH_WAIT", "5"))


class Follower:
    """Reads a process's NDJSON stream on a thread; events accumulate in .events."""

    def __init__(self, server, sid, pid, query=""):
        self.events = []
        self.status = None
        self.done = threading.Event()
        self.cond = threading.Condition()
        self._conn = server.conn(timeout=600)
        path = "/v1/sandboxes/%s/processes/%d/stream%s" % (sid, pid, query)
        self._conn.request("GET", path, headers=server._auth({}))
        self._resp = self._conn.getresponse()
        self.status = self._resp.status
        headers = {k.lower(): v for k, v in self._resp.getheaders()}
        if openapi_check.ENABLED:
            body = b"" if self.status == 200 else self._resp.read()
            openapi_check.enforce(openapi_check.check("GET", path, self.status, headers, body))
        if self.status != 200:
            self.done.set()
            return
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        schema = openapi_check.schema_of("ProcessStreamEvent") if openapi_check.ENABLED else None
        try:
            while True:
                line = self._resp.readline()
                if not line:
                    break
                ev = json.loads(line)
                if schema is not None:
                    openapi_check.enforce(openapi_check.validate_schema(schema, ev))
                with self.cond:
                    self.events.append(ev)
                    self.cond.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            self.done.set()
            with self.cond:
                self.cond.notify_all()

    def text(self):
        with self.cond:
            return "".join(e.get("data", "") for e in self.events
                           if e["type"] in ("stdout", "stderr"))

    def wait_for(self, needle, timeout=20):
        deadline = time.time() + timeout
        with self.cond:
            while time.time() < deadline:
                if needle in "".join(e.get("data", "") for e in self.events
                                     if e["type"] in ("stdout", "stderr")):
                    return True
                if self.done.is_set():
                    break
                self.cond.wait(0.2)
        return needle in self.text()

    def wait_end(self, timeout=20):
        self.done.wait(timeout)
        with self.cond:
            return self.events[-1] if self.events else None

    def close(self):
        try:
            self._conn.sock.shutdown(2)
        except (OSError, AttributeError):
            pass
        self._conn.close()


class ProcessesTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_STREAM_KEEPALIVE_SECONDS": "1"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.server.create()["id"]

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.request("DELETE", "/v1/sandboxes/" + cls.sid, check=False)
        super().tearDownClass()

    def path(self, suffix="", sid=None):
        return "/v1/sandboxes/%s/processes%s" % (sid or self.sid, suffix)

    def start(self, body, sid=None):
        r = self.server.request("POST", self.path(sid=sid), body)
        self.assertEqual(r.status, 201, r)
        p = r.json()
        self.assertGreater(p["pid"], 0)
        self.assertEqual(p["state"], "running")
        self.assertIsNone(p["exit_code"])
        return p

    def stdin(self, pid, data):
        r = self.server.request("POST", self.path("/%d/stdin" % pid), {"data": data})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["bytes"], len(data.encode()))

    def test_http_server_in_background_reattach_and_kill_tree(self):
        p = self.start({"command": "exec python3 -m http.server 8000 --bind 127.0.0.1",
                        "tag": "web"})
        pid = p["pid"]
        self.assertEqual(p["tag"], "web")
        # The POST has answered; the server keeps running without any client attached.
        fetch = ("for i in $(seq 50); do curl -sf -o /dev/null http://127.0.0.1:8000/?$1 "
                 "&& echo 200 && exit 0; sleep 0.1; done; exit 1")
        r = self.server.exec(self.sid, {"argv": ["sh", "-c", fetch, "-", "first-visit"]}).json()
        self.assertEqual((r["exit_code"], r["stdout"]), (0, "200\n"), r)
        listed = self.server.request("GET", self.path()).json()["processes"]
        mine = [x for x in listed if x["pid"] == pid]
        self.assertEqual(len(mine), 1)
        self.assertEqual(mine[0]["state"], "running")
        self.assertEqual(mine[0]["command"], "exec python3 -m http.server 8000 --bind 127.0.0.1")
        time.sleep(REATTACH_WAIT)
        # Re-attach with a replay: the old log line is there, and new lines arrive live.
        f = Follower(self.server, self.sid, pid, "?replay_bytes=65536")
        try:
            self.assertEqual(f.status, 200)
            self.assertTrue(f.wait_for("GET /?first-visit"), f.events)
            r = self.server.exec(self.sid,
                                 {"argv": ["sh", "-c", fetch, "-", "after-reattach"]}).json()
            self.assertEqual(r["stdout"], "200\n", r)
            self.assertTrue(f.wait_for("GET /?after-reattach"), f.events)
            # Kill the whole tree: the stream ends with the exit, nothing of it is left.
            r = self.server.request("DELETE", self.path("/%d" % pid))
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["state"], "exited")
            self.assertEqual(r.json()["signal"], 9)
            last = f.wait_end()
            self.assertEqual(last["type"], "exit", f.events)
            self.assertEqual(last["signal"], 9)
        finally:
            f.close()
        left = [q for q in sandbox_pids(self.sid) if "http.server" in _cmdline(q)]
        self.assertEqual(left, [])
        r = self.server.run(self.sid, "curl -s -m 2 http://127.0.0.1:8000/ >/dev/null; echo $?")
        self.assertNotEqual(r["stdout"].strip(), "0")
        got = self.server.request("GET", self.path("/%d" % pid)).json()
        self.assertEqual((got["state"], got["exit_code"]), ("exited", 137))

    def test_kill_reaches_descendants_and_setsid_sessions(self):
        p = self.start({"command": "sleep 4041 & setsid sleep 4042 & sh -c 'sleep 4043' & wait"})
        deadline = time.time() + 10
        while time.time() < deadline:
            n = [q for q in sandbox_pids(self.sid) if _cmdline(q).startswith("sleep 404")]
            if len(n) == 3:
                break
            time.sleep(0.05)
        self.assertEqual(len(n), 3)
        r = self.server.request("DELETE", self.path("/%d" % p["pid"]))
        self.assertEqual(r.status, 200, r)
        self.assertEqual([q for q in sandbox_pids(self.sid) if "sleep 404" in _cmdline(q)], [])
        self.assertEqual(r.json()["exit_code"], 137)

    def test_pty_python_interactive_through_stdin(self):
        p = self.start({"argv": ["python3", "-i", "-q"], "pty": True, "cols": 100, "rows": 30})
        self.assertTrue(p["pty"])
        self.assertTrue(p["stdin_open"])
        f = Follower(self.server, self.sid, p["pid"], "?replay_bytes=4096")
        try:
            self.assertTrue(f.wait_for(">>> "), f.events)
            self.stdin(p["pid"], "6*7\n")
            self.assertTrue(f.wait_for("42\r\n>>> "), f.events)
            r = self.server.request("POST", self.path("/%d/resize" % p["pid"]),
                                    {"cols": 132, "rows": 43})
            self.assertEqual(r.status, 204, r)
            self.stdin(p["pid"], "import os; print(os.get_terminal_size())\n")
            self.assertTrue(f.wait_for("columns=132, lines=43"), f.events)
            self.stdin(p["pid"], "exit()\n")
            last = f.wait_end()
            self.assertEqual((last["type"], last["exit_code"]), ("exit", 0), f.events)
        finally:
            f.close()

    def test_cat_with_stdin_echoes_and_exits_at_close(self):
        p = self.start({"argv": ["cat"], "stdin": True})
        f = Follower(self.server, self.sid, p["pid"])
        try:
            self.stdin(p["pid"], "hello cat\n")
            self.assertTrue(f.wait_for("hello cat\n"), f.events)
            raw = bytes(range(256))
            r = self.server.request("POST", self.path("/%d/stdin" % p["pid"]),
                                    {"data": base64.b64encode(raw).decode(),
                                     "encoding": "base64"})
            self.assertEqual(r.json()["bytes"], 256)
            r = self.server.request("POST", self.path("/%d/close-stdin" % p["pid"]))
            self.assertEqual(r.status, 204, r)
            last = f.wait_end()
            self.assertEqual((last["type"], last["exit_code"]), ("exit", 0), f.events)
        finally:
            f.close()
        # Exited processes stay listed with their exit code; stdin is refused now.
        got = self.server.request("GET", self.path("/%d" % p["pid"])).json()
        self.assertEqual((got["state"], got["exit_code"], got["output_bytes"]),
                         ("exited", 0, 10 + 256))
        self.assertIsNotNone(got["ended_at"])
        self.assertError(self.server.request("POST", self.path("/%d/stdin" % p["pid"]),
                                             {"data": "x"}), 409, "conflict")
        # base64 replay of the same bytes
        f = Follower(self.server, self.sid, p["pid"], "?replay_bytes=266&encoding=base64")
        try:
            f.wait_end()
            data = b"".join(base64.b64decode(e["data"]) for e in f.events
                            if e["type"] == "stdout")
            self.assertEqual(data, b"hello cat\n" + raw)
        finally:
            f.close()

    def test_signals_reach_the_process_group(self):
        script = ("trap 'echo parent-got-term; wait; exit 3' TERM; "
                  "sh -c 'trap \"echo child-got-term; exit 0\" TERM; echo child-ready; "
                  "while :; do sleep 0.05; done' & "
                  "while :; do sleep 0.05; done")
        p = self.start({"command": script})
        f = Follower(self.server, self.sid, p["pid"], "?replay_bytes=1024")
        try:
            self.assertTrue(f.wait_for("child-ready"), f.events)
            r = self.server.request("POST", self.path("/%d/signal" % p["pid"]),
                                    {"signal": "SIGTERM"})
            self.assertEqual(r.status, 204, r)
            last = f.wait_end()
            self.assertEqual((last["type"], last["exit_code"]), ("exit", 3), f.events)
            self.assertIn("parent-got-term", f.text())
            self.assertIn("child-got-term", f.text())
        finally:
            f.close()
        self.assertError(self.server.request("POST", self.path("/%d/signal" % p["pid"]),
                                             {"signal": "TERM"}), 409, "conflict")

    def test_fifty_processes_across_sandboxes_and_destroy_ends_them(self):
        others = [self.create()["id"] for _ in range(2)]
        started = {}
        for i in range(50):
            sid = others[i % 2]
            p = self.start({"argv": ["sleep", str(5000 + i)], "tag": "t%d" % i}, sid=sid)
            started[(sid, p["pid"])] = "t%d" % i
        for sid in others:
            listed = self.server.request("GET", self.path(sid=sid)).json()["processes"]
            self.assertEqual(len(listed), 25)
            for x in listed:
                self.assertEqual(x["state"], "running")
                self.assertEqual(started[(sid, x["pid"])], x["tag"])
                self.assertEqual(x["argv"], ["sleep", str(5000 + int(x["tag"][1:]))])
        # Another sandbox's pid is not this sandbox's process.
        sid0, pid0 = next(iter(started))
        mine = {x["pid"] for x in
                self.server.request("GET", self.path()).json()["processes"]}
        if pid0 not in mine:
            self.assertError(self.server.request("GET", self.path("/%d" % pid0)), 404,
                             "not_found")
        for sid in others:
            self.assertTrue(sandbox_pids(sid))
            self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 204)
            self.assertEqual(sandbox_pids(sid), [])
            self._created.remove(sid)

    def test_errors_and_limits(self):
        p = self.start({"argv": ["sleep", "600"]})
        pid = p["pid"]
        bad = [
            ("POST", self.path(), {}, 400, "invalid_request"),
            ("POST", self.path(), {"command": "x", "argv": ["y"]}, 400, "invalid_request"),
            ("POST", self.path(), {"command": "true", "pty": "yes"}, 400, "invalid_request"),
            ("POST", self.path(), {"command": "true", "cols": 80}, 400, "invalid_request"),
            ("POST", self.path(), {"command": "true", "pty": True, "cols": 10001}, 400,
             "invalid_request"),
            ("POST", self.path(), {"command": "true", "pty": True, "rows": 0}, 400,
             "invalid_request"),
            ("POST", self.path(), {"command": "true", "tag": "t" * 257}, 400, "invalid_request"),
            ("POST", self.path(), {"command": "true", "ring_bytes": 4194305}, 400,
             "invalid_request"),
            ("POST", self.path(), {"command": "true", "workdir": "/nonexistent"}, 400,
             "invalid_request"),
            ("POST", self.path(), {"command": "true", "nope": 1}, 400, "invalid_request"),
            ("GET", self.path("/0"), None, 404, "not_found"),
            ("GET", self.path("/abc"), None, 404, "not_found"),
            ("GET", self.path("/999999"), None, 404, "not_found"),
            ("DELETE", self.path("/999999"), None, 404, "not_found"),
            ("GET", self.path("/999999/stream"), None, 404, "not_found"),
            ("GET", self.path("/%d/stream?replay_bytes=4194305" % pid), None, 400,
             "invalid_request"),
            ("GET", self.path("/%d/stream?encoding=latin1" % pid), None, 400, "invalid_request"),
            ("GET", self.path("/%d/ws" % pid), None, 400, "invalid_request"),
            ("POST", self.path("/%d/stdin" % pid), {"data": "x"}, 409, "conflict"),
            ("POST", self.path("/%d/stdin" % pid), {}, 400, "invalid_request"),
            ("POST", self.path("/%d/close-stdin" % pid), None, 409, "conflict"),
            ("POST", self.path("/%d/signal" % pid), {"signal": "SIGNOPE"}, 400,
             "invalid_request"),
            ("POST", self.path("/%d/signal" % pid), {}, 400, "invalid_request"),
            ("POST", self.path("/%d/resize" % pid), {"cols": 80, "rows": 24}, 409, "conflict"),
            ("POST", self.path("/%d/resize" % pid), {"cols": 0, "rows": 24}, 400,
             "invalid_request"),
            ("POST", "/v1/sandboxes/sb_0000000000000000/processes", {"command": "true"}, 404,
             "not_found"),
        ]
        for method, path, body, status, code in bad:
            with self.subTest(method=method, path=path, body=body):
                self.assertError(self.server.request(method, path, body), status, code)
        # At the boundaries: exactly at the limits passes.
        ok = self.start({"command": "true", "tag": "t" * 256, "ring_bytes": 4194304})
        self.assertEqual(len(ok["tag"]), 256)
        ok = self.start({"command": "sleep 60", "pty": True, "cols": 10000, "rows": 1})
        r = self.server.request("POST", self.path("/%d/resize" % ok["pid"]),
                                {"cols": 10000, "rows": 10000})
        self.assertEqual(r.status, 204, r)
        self.assertError(self.server.request("POST", self.path("/%d/resize" % ok["pid"]),
                                             {"cols": 10001, "rows": 1}), 400, "invalid_request")
        self.assertEqual(self.server.request("DELETE", self.path("/%d" % ok["pid"])).status, 200)
        self.assertEqual(self.server.request("DELETE", self.path("/%d" % pid)).status, 200)

    def test_websocket_terminal(self):
        if websockets is None:
            self.skipTest("python3-websockets is not installed (scripts/install-deps.sh)")
        p = self.start({"argv": ["python3", "-i", "-q"], "pty": True})
        url = "ws://127.0.0.1:%d%s?replay_bytes=4096" % (self.server.port,
                                                        self.path("/%d/ws" % p["pid"]))
        headers = self.server._auth({})

        async def drive():
            out = b""
            events = []

            async def until(needle):
                nonlocal out
                while needle not in out:
                    msg = await asyncio.wait_for(ws.recv(), 20)
                    if isinstance(msg, bytes):
                        out += msg
                    else:
                        events.append(json.loads(msg))
                        if events[-1]["type"] in ("exit", "error"):
                            return
            async with websockets.connect(url, extra_headers=headers) as ws:
                await until(b">>> ")
                await ws.send(json.dumps({"type": "resize", "cols": 90, "rows": 20}))
                await ws.send(b"import os; print(os.get_terminal_size())\n")
                await until(b"columns=90, lines=20")
                await ws.send(json.dumps({"type": "stdin", "data": "6*7\n"}))
                await until(b"42\r\n>>> ")
                await ws.send(b"exit()\n")
                await until(b"\x00never")  # runs until the exit event
                await asyncio.wait_for(ws.wait_closed(), 10)
                return out, events, ws.close_code

        out, events, code = asyncio.run(drive())
        self.assertIn(b"columns=90, lines=20", out)
        self.assertEqual(events[-1], {"type": "exit", "exit_code": 0, "signal": 0})
        self.assertEqual(code, 1000)

        # A bad control message closes with 1008; the process lives on.
        q = self.start({"argv": ["cat"], "stdin": True})
        url = "ws://127.0.0.1:%d%s" % (self.server.port, self.path("/%d/ws" % q["pid"]))

        async def bad():
            async with websockets.connect(url, extra_headers=headers) as ws:
                await ws.send(b"echo me\n")
                got = await asyncio.wait_for(ws.recv(), 20)
                await ws.send(json.dumps({"type": "dance"}))
                try:
                    await asyncio.wait_for(ws.recv(), 10)
                except websockets.ConnectionClosed:
                    pass
                return got, ws.close_code

        got, code = asyncio.run(bad())
        self.assertEqual(got, b"echo me\n")
        self.assertEqual(code, 1008)
        got = self.server.request("GET", self.path("/%d" % q["pid"])).json()
        self.assertEqual(got["state"], "running")
        self.assertEqual(self.server.request("DELETE", self.path("/%d" % q["pid"])).status, 200)


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


if __name__ == "__main__":
    main()
