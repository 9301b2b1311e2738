"""Exec over HTTP (ADR 0007, ADR 0016): sync and streamed exec against the real server."""

import base64
import time

from harness import ServerTestCase, main, sandbox_pids


class ExecTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.server.create(env={"SANDBOX_VAR": "from-sandbox"})["id"]

    def test_e1_shell_string_argv_and_no_expansion(self):
        r = self.server.run(self.sid, "echo hi")
        self.assertEqual(r["stdout"], "hi\n")
        self.assertEqual(r["exit_code"], 0)
        self.assertIs(r["timed_out"], False)
        for key in ("stderr", "signal", "truncated", "oom_killed", "duration_ms"):
            self.assertIn(key, r)
        r = self.server.exec(self.sid, {"argv": ["sh", "-c", "exit 2"]}).json()
        self.assertEqual(r["exit_code"], 2)
        r = self.server.exec(self.sid, {"argv": ["printf", "%s\\n", "a b", "$HOME"]}).json()
        self.assertEqual(r["stdout"], "a b\n$HOME\n")

    def test_e1_missing_program_and_bad_bodies(self):
        r = self.server.exec(self.sid, {"argv": ["no-such-program"]}).json()
        self.assertEqual(r["exit_code"], 127)
        self.assertTrue(r["stderr"])
        for body in ({}, {"command": "x", "argv": ["y"]}, {"command": 5}, {"argv": "ls"},
                     {"command": "true", "timeout": 0}, {"command": "true", "nope": 1},
                     {"command": "true", "encoding": "latin1"}):
            with self.subTest(body=body):
                self.assertError(self.server.exec(self.sid, body), 400, "invalid_request")

    def test_e2_stream_events_in_order_and_split_utf8(self):
        cmd = ("echo one; echo two >&2; sleep 0.2; echo three; "
               "printf '\\342\\202'; sleep 0.3; printf '\\254\\n'; exit 3")
        headers, status, events = self.server.stream(self.sid, {"command": cmd})
        self.assertEqual(status, 200)
        self.assertTrue(headers["content-type"].startswith("application/x-ndjson"), headers)
        kinds = [e["type"] for e in events if e["type"] != "keepalive"]
        self.assertEqual(kinds[-1], "exit")
        self.assertEqual(kinds.count("exit"), 1)
        out = "".join(e["data"] for e in events if e["type"] == "stdout")
        err = "".join(e["data"] for e in events if e["type"] == "stderr")
        self.assertEqual(out, "one\nthree\n\u20ac\n")
        self.assertEqual(err, "two\n")
        for e in events:
            if e["type"] == "stdout":
                self.assertNotIn("\ufffd", e["data"])
        # stdout "one" comes before stderr "two", which comes before stdout "three".
        seq = [(e["type"], e["data"]) for e in events if e["type"] in ("stdout", "stderr")]
        self.assertLess(seq.index(("stdout", "one\n")), seq.index(("stderr", "two\n")))
        last = events[-1]
        self.assertEqual(last["exit_code"], 3)
        self.assertIs(last["timed_out"], False)
        self.assertIsInstance(last["duration_ms"], int)
        self.assertGreaterEqual(last["duration_ms"], 500)

    def test_e2_errors_before_the_stream_are_json(self):
        headers, status, resp = self.server.stream("sb_0000000000000000", {"command": "true"})
        self.assertEqual(status, 404)
        self.assertTrue(headers["content-type"].startswith("application/json"))
        self.assertEqual(resp.error_code, "not_found")
        headers, status, resp = self.server.stream(self.sid, {"bogus": 1})
        self.assertEqual(status, 400)

    def test_e2_invalid_bytes_are_replaced_or_base64(self):
        r = self.server.run(self.sid, "printf 'a\\377b'")
        self.assertEqual(r["stdout"], "a\ufffdb")
        r = self.server.run(self.sid, "printf 'a\\377b\\000'", encoding="base64")
        self.assertEqual(base64.b64decode(r["stdout"]), b"a\xffb\x00")
        _, _, events = self.server.stream(self.sid, {"command": "printf '\\377\\000'",
                                                     "encoding": "base64"})
        data = b"".join(base64.b64decode(e["data"]) for e in events if e["type"] == "stdout")
        self.assertEqual(data, b"\xff\x00")

    def test_e2_keepalive_while_quiet(self):
        # The server's keepalive interval is 10 s; a 11 s quiet command sees at least one.
        _, _, events = self.server.stream(self.sid, {"command": "sleep 11; echo done",
                                                     "timeout": 30})
        kinds = [e["type"] for e in events]
        self.assertIn("keepalive", kinds)
        self.assertEqual(kinds[-1], "exit")

    def test_e3_env_and_workdir(self):
        r = self.server.run(self.sid, 'echo "$SANDBOX_VAR $EXEC_VAR"', env={"EXEC_VAR": "from-exec"})
        self.assertEqual(r["stdout"], "from-sandbox from-exec\n")
        self.assertEqual(self.server.run(self.sid, "pwd", workdir="/tmp")["stdout"], "/tmp\n")
        mk = self.server.request("POST", "/v1/sandboxes/%s/files/mkdir" % self.sid,
                                 {"path": "src"})
        self.assertEqual(mk.status, 200, mk)
        self.assertEqual(self.server.run(self.sid, "pwd", workdir="src")["stdout"],
                         "/workspace/src\n")
        self.assertEqual(self.server.run(self.sid, "pwd")["stdout"], "/workspace\n")

    def test_e4_timeout_kills_the_whole_group(self):
        t0 = time.time()
        r = self.server.run(self.sid, "sleep 300 & sleep 300; echo never", timeout=1)
        elapsed = time.time() - t0
        self.assertIs(r["timed_out"], True)
        self.assertNotEqual(r["exit_code"], 0)
        self.assertNotIn("never", r["stdout"])
        self.assertLess(elapsed, 6)
        # No sleep left inside the sandbox, nor on the host in its cgroups.
        ps = self.server.run(self.sid, "ps -eo args")["stdout"]
        self.assertNotIn("sleep 300", ps)
        for pid in sandbox_pids(self.sid):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    self.assertNotEqual(f.read(), b"sleep\x00300\x00")
            except OSError:
                pass

    def test_e5_output_cap(self):
        cmd = "head -c 80 /dev/zero | tr '\\0' a; head -c 80 /dev/zero | tr '\\0' b >&2; echo done >&2"
        r = self.server.run(self.sid, cmd, max_output_bytes=100)
        # Per stream (ADR 0016): stdout's 80 bytes fit, stderr's 85 fit too.
        self.assertIs(r["truncated"], False)
        self.assertEqual(r["stdout"], "a" * 80)
        self.assertEqual(r["stderr"], "b" * 80 + "done\n")
        r = self.server.run(self.sid, "head -c 150 /dev/zero | tr '\\0' a; echo done >&2",
                            max_output_bytes=100)
        self.assertIs(r["truncated"], True)
        self.assertIs(r["stdout_truncated"], True)
        self.assertIs(r["stderr_truncated"], False)
        self.assertEqual(r["stdout"], "a" * 100)
        self.assertEqual(r["stderr"], "done\n")
        self.assertEqual(r["exit_code"], 0)  # not killed by the cap
        self.assertIs(r["timed_out"], False)

    def test_a_stdout_flood_does_not_push_out_the_stderr_line(self):
        # ADR 0016: 2 MiB of stdout (over the 1 MiB default cap), then the error line.
        r = self.server.run(self.sid, "head -c 2097152 /dev/zero | tr '\\0' x; "
                            "echo 'fatal: what went wrong' >&2; exit 2")
        self.assertEqual(r["stderr"], "fatal: what went wrong\n")
        self.assertIs(r["stdout_truncated"], True)
        self.assertIs(r["stderr_truncated"], False)
        self.assertIs(r["truncated"], True)
        self.assertEqual(len(r["stdout"]), 1 << 20)
        self.assertEqual(r["exit_code"], 2)
        # A stream's cap is opt-in; with one, its exit line carries the same flags.
        _, status, lines = self.server.stream(self.sid, {
            "command": "head -c 2097152 /dev/zero | tr '\\0' x; echo oops >&2",
            "max_output_bytes": 1 << 20})
        self.assertEqual(status, 200)
        exit_line = lines[-1]
        self.assertEqual(exit_line["type"], "exit", exit_line)
        self.assertIs(exit_line["stdout_truncated"], True)
        self.assertIs(exit_line["stderr_truncated"], False)
        self.assertEqual(sum(len(l["data"]) for l in lines if l["type"] == "stdout"), 1 << 20)
        self.assertIn("oops", "".join(l["data"] for l in lines if l["type"] == "stderr"))

    def test_a_stream_carries_everything_by_default(self):
        # ADR 0016: a build log longer than the sync cap (1 MiB) is not cut while the
        # client reads it: 5 MiB on stdout, then 2 MiB on stderr, all delivered, no flag set.
        _, status, lines = self.server.stream(self.sid, {
            "command": "head -c 5242880 /dev/zero | tr '\\0' o; "
                       "head -c 2097152 /dev/zero | tr '\\0' e >&2; echo end"})
        self.assertEqual(status, 200)
        out = "".join(l["data"] for l in lines if l["type"] == "stdout")
        err = "".join(l["data"] for l in lines if l["type"] == "stderr")
        self.assertEqual(len(out), 5242880 + 4)
        self.assertTrue(out.endswith("oend\n"))
        self.assertEqual(err, "e" * 2097152)
        exit_line = lines[-1]
        self.assertEqual(exit_line["type"], "exit", exit_line)
        self.assertIs(exit_line["truncated"], False)
        self.assertIs(exit_line["stdout_truncated"], False)
        self.assertEqual(exit_line["exit_code"], 0)

    def test_a_missing_workdir_is_a_bad_field_not_a_missing_sandbox(self):
        # ADR 0016: 404 reads as "sandbox gone" to every SDK (E2B: SandboxNotFoundError).
        r = self.server.request("POST", "/v1/sandboxes/%s/exec" % self.sid,
                                {"command": "true", "workdir": "/no/such/dir"})
        self.assertError(r, 400, "invalid_request")
        self.assertIn("workdir /no/such/dir", r.json()["error"]["message"])
        # A stream has answered 200 before sandboxd tries the workdir: its one error event
        # carries the same code.
        _, status, events = self.server.stream(self.sid, {"command": "true", "workdir": "nodir"})
        self.assertEqual(status, 200)
        self.assertEqual([(e["type"], e.get("code")) for e in events if e["type"] != "keepalive"],
                         [("error", "invalid_request")], events)
        self.assertIn("workdir", events[-1]["message"])
        self.assertError(self.server.request("POST", "/v1/sandboxes/%s/exec" % self.sid,
                                             {"command": "true", "workdir": "/etc/hostname"}),
                         400, "invalid_request")  # not a directory
        # The sandbox is still there and answers.
        self.assertEqual(self.server.run(self.sid, "echo ok")["stdout"], "ok\n")

    def test_timeout_seconds_is_an_alias_of_timeout(self):
        t0 = time.time()
        r = self.server.run(self.sid, "sleep 30", timeout_seconds=1)
        self.assertIs(r["timed_out"], True)
        self.assertLess(time.time() - t0, 10)
        r = self.server.run(self.sid, "echo ok", timeout=5, timeout_seconds=5)
        self.assertEqual(r["stdout"], "ok\n")
        for path in ("/exec", "/exec/stream"):
            bad = self.server.request("POST", "/v1/sandboxes/%s%s" % (self.sid, path),
                                      {"command": "true", "timeout": 5, "timeout_seconds": 6})
            self.assertEqual(bad.status, 400, bad)
            msg = bad.json()["error"]["message"]
            self.assertIn("timeout", msg)
            self.assertIn("timeout_seconds", msg)

    def test_e6_pids_limit_stops_a_fork_loop(self):
        sid = self.create(pids_limit=32)["id"]
        r = self.server.run(sid, "for i in $(seq 100); do sleep 3 & done; wait", timeout=30)
        text = r["stdout"] + r["stderr"]
        self.assertTrue("fork" in text or "Resource temporarily unavailable" in text, r)
        t0 = time.time()
        after = self.server.run(sid, "echo still here")
        self.assertEqual(after["stdout"], "still here\n")
        self.assertLess(time.time() - t0, 5)

    def test_a_sandbox_destroyed_mid_stream_ends_it_with_one_error_event(self):
        import threading
        sid = self.create()["id"]
        killer = threading.Timer(1.0, lambda: self.server.request("DELETE", "/v1/sandboxes/" + sid))
        killer.start()
        try:
            t0 = time.time()
            _, status, events = self.server.stream(sid, {"command": "echo started; sleep 60",
                                                         "timeout": 90})
        finally:
            killer.join()
        self.assertEqual(status, 200)
        self.assertLess(time.time() - t0, 20)
        self.assertEqual(events[0], {"type": "stdout", "data": "started\n"})
        terminal = [e for e in events if e["type"] in ("exit", "error")]
        self.assertEqual(len(terminal), 1, events)
        self.assertEqual(events[-1]["type"], "error", events)
        self.assertIn("code", events[-1])
        self.assertIn("message", events[-1])
        # A sync exec on a sandbox destroyed under it answers an error, not a hang.
        sid2 = self.create()["id"]
        killer = threading.Timer(1.0, lambda: self.server.request("DELETE", "/v1/sandboxes/" + sid2))
        killer.start()
        try:
            r = self.server.exec(sid2, {"command": "sleep 60", "timeout": 90})
        finally:
            killer.join()
        self.assertGreaterEqual(r.status, 400, r)
        self.assertIn(r.error_code, ("backend_error", "not_found", "conflict"), r)

    def test_sync_exec_longer_than_any_io_timeout_is_not_cut(self):
        # A 3 s command with a 10 s timeout answers normally (no server timeout below it).
        r = self.server.run(self.sid, "sleep 3; echo finished", timeout=10)
        self.assertEqual(r["stdout"], "finished\n")
        self.assertIs(r["timed_out"], False)

    def test_stdin_is_passed_or_at_eof(self):
        self.assertEqual(self.server.run(self.sid, "cat", stdin="fed\n")["stdout"], "fed\n")
        self.assertEqual(self.server.run(self.sid, "cat; echo eof")["stdout"], "eof\n")


if __name__ == "__main__":
    main()
