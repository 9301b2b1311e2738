"""The Python SDK against the REAL server: tests/e2e/harness.py starts `agent-sandbox serve`
(ASB_BIN) on a free loopback port with a temporary data directory and an API key, and cleans up
everything afterwards. Exits 77 (CTest skip) when the machine cannot run sandboxes.

Run: ASB_BIN=build/bin/agent-sandbox python3 sdk/python/tests/test_sdk.py
"""

import http.client
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(SDK_DIR))
sys.path.insert(0, SDK_DIR)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import harness  # noqa: E402
from agent_sandbox import (ErrorEvent, ExecResult, ExitEvent, NotFoundError,  # noqa: E402
                           OutputEvent, SandboxAPIError, SandboxClient, SandboxConnectionError)

API_KEY = "asb_" + os.urandom(24).hex()


class SdkTest(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        reason = harness.missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = harness.Server({"AGENT_SANDBOX_API_KEYS": API_KEY}, api_key=API_KEY)
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            raise
        cls.url = "http://127.0.0.1:%d" % cls.server.port

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.close()

    def client(self, **kw):
        kw.setdefault("base_url", self.url)
        kw.setdefault("api_key", API_KEY)
        return SandboxClient(**kw)

    def sandbox(self, **spec):
        sb = self.client().create(**spec)
        self.addCleanup(self._destroy_quietly, sb)
        return sb

    @staticmethod
    def _destroy_quietly(sb):
        try:
            sb.destroy()
        except SandboxAPIError:
            pass

    # ---- lifecycle ----------------------------------------------------------------------

    def test_create_get_list_timeout_destroy(self):
        c = self.client()
        sb = self.sandbox(cpus=0.5, memory_mb=256, timeout_seconds=60, env={"GREETING": "hi"})
        self.assertRegex(sb.id, r"^sb_[0-9a-f]{16}$")
        self.assertEqual(sb.info.status, "running")
        got = c.get(sb.id)
        self.assertEqual((got.info.cpus, got.info.memory_mb, got.info.timeout_seconds),
                         (0.5, 256, 60))
        self.assertEqual(got.info.env_keys, ["GREETING"])
        self.assertEqual((got.info.default_workdir, got.info.default_user),
                         ("/workspace", "sandbox"))  # the base template names neither
        self.assertIn(sb.id, [s.id for s in c.list()])
        self.assertIn(sb.id, [s.id for s in c.list(order="desc", template="base",
                                                    status="running",
                                                    started_after=sb.info.created_at)])
        self.assertNotIn(sb.id, [s.id for s in c.list(started_before=sb.info.created_at)])
        with self.assertRaises(SandboxAPIError) as cm:
            c.list(order="sideways")
        self.assertEqual(cm.exception.status_code, 400)
        before = harness.parse_time(sb.info.expires_at)
        info = sb.set_timeout(600)
        self.assertGreater(harness.parse_time(info.expires_at), before + 500)
        sb.destroy()
        with self.assertRaises(NotFoundError) as cm:
            c.get(sb.id)
        self.assertEqual((cm.exception.status_code, cm.exception.code), (404, "not_found"))
        with self.assertRaises(NotFoundError):
            sb.destroy()

    def test_backends_and_a_create_that_names_one(self):
        c = self.client()
        listed = c.backends()
        self.assertEqual(listed["default"], "ns")
        names = [b["name"] for b in listed["backends"]]
        self.assertEqual(names[0], "ns")
        self.assertIn("microvm", names)  # available or not, with the reason
        sb = self.sandbox(backend="ns")
        self.assertEqual((sb.info.backend, c.get(sb.id).info.backend), ("ns", "ns"))
        with self.assertRaises(SandboxAPIError) as cm:
            c.create(backend="firecracker")
        self.assertEqual((cm.exception.status_code, cm.exception.code), (400, "invalid_request"))
        self.assertIn("firecracker", str(cm.exception))

    def test_pause_and_resume(self):
        sb = self.sandbox(timeout_seconds=120)
        self.assertEqual((sb.auto_pause, sb.paused_at), (False, None))
        sb.write_file("kept.txt", "kept")
        proc = sb.start_process("sleep 600")
        before = time.time()
        self.assertIs(sb.pause(), sb)
        self.assertEqual(sb.status, "paused")
        self.assertAlmostEqual(harness.parse_time(sb.paused_at), before, delta=5)
        # While paused, expires_at is when the paused sandbox is destroyed (default one day).
        self.assertAlmostEqual(harness.parse_time(sb.expires_at), before + 86400, delta=60)
        self.assertEqual(self.client().get(sb.id).status, "paused")
        for call in (lambda: sb.exec("true"), lambda: sb.read_text("kept.txt"),
                     sb.list_processes):
            with self.assertRaises(SandboxAPIError) as cm:
                call()
            e = cm.exception
            self.assertEqual((e.status_code, e.code), (409, "conflict"))
            self.assertNotIsInstance(e, NotFoundError)
            self.assertIn("paused: resume it first", e.message)
        with self.assertRaises(SandboxAPIError) as cm:
            sb.pause()
        self.assertEqual((cm.exception.status_code, cm.exception.code), (409, "conflict"))
        self.assertIn("already paused", cm.exception.message)

        before = time.time()
        self.assertIs(sb.resume(), sb)  # its last TTL (120 s), from now
        self.assertEqual((sb.status, sb.paused_at), ("running", None))
        self.assertAlmostEqual(harness.parse_time(sb.expires_at), before + 120, delta=30)
        self.assertEqual(sb.exec("cat kept.txt").stdout, "kept")
        self.assertEqual(sb.get_process(proc.pid).state, "running")  # kept across the pause
        with self.assertRaises(SandboxAPIError) as cm:
            sb.resume()  # running: nothing to resume
        self.assertEqual((cm.exception.status_code, cm.exception.code), (409, "conflict"))

        sb.pause()
        before = time.time()
        sb.resume(timeout_seconds=900)
        self.assertEqual(sb.refresh().status, "running")
        self.assertAlmostEqual(harness.parse_time(sb.expires_at), before + 900, delta=30)
        self.assertEqual(sb.timeout_seconds, 900)
        self.assertTrue(sb.exec("true").ok)
        # Files only: the processes end, the workspace stays, the resume starts it afresh.
        sb.pause(keep_memory=False)
        self.assertEqual((sb.status, sb.info.paused_memory), ("paused", False))
        sb.resume()
        self.assertIsNone(sb.info.paused_memory)
        self.assertEqual(sb.exec("cat kept.txt").stdout, "kept")
        self.assertEqual(sb.exec("pgrep -c sleep || true").stdout, "0\n")
        sb.pause()
        self.assertIs(sb.info.paused_memory, True)
        sb.resume(keep_memory=False)  # a reboot: nothing of before runs on
        sb.pause()
        with self.assertRaises(SandboxAPIError) as cm:
            sb.resume(timeout_seconds=0)
        self.assertEqual(cm.exception.status_code, 400)
        self.assertEqual(sb.refresh().status, "paused")
        sb.destroy()  # a paused sandbox can be destroyed

    def test_auto_pause_pauses_at_the_ttl(self):
        sb = self.sandbox(auto_pause=True, timeout_seconds=2)
        self.assertIs(sb.auto_pause, True)
        self.assertIs(self.client().get(sb.id).auto_pause, True)
        self.assertIs(self.sandbox().auto_pause, False)
        deadline = time.time() + 30
        while sb.refresh().status == "running" and time.time() < deadline:
            time.sleep(0.5)
        self.assertEqual(sb.status, "paused")  # not destroyed
        self.assertIsNotNone(sb.paused_at)
        sb.resume(timeout_seconds=300)
        self.assertEqual((sb.status, sb.auto_pause), ("running", True))
        self.assertTrue(sb.exec("true").ok)

    def test_context_manager_destroys_and_tolerates_404(self):
        c = self.client()
        with c.create() as sb:
            sid = sb.id
            self.assertTrue(sb.exec("true").ok)
        with self.assertRaises(NotFoundError):
            c.get(sid)
        with c.create() as sb2:  # destroyed inside the block: exit must not raise
            sb2.destroy()
        with self.assertRaises(RuntimeError):  # the block's own exception goes through
            with c.create() as sb3:
                sid3 = sb3.id
                raise RuntimeError("boom")
        with self.assertRaises(NotFoundError):
            c.get(sid3)

    def test_create_with_an_idempotency_key_returns_the_same_sandbox(self):
        key = "sdk-" + os.urandom(8).hex()
        sb = self.sandbox(timeout_seconds=300, idempotency_key=key)
        again = self.client().create(timeout_seconds=300, idempotency_key=key)
        self.assertEqual(again.id, sb.id)
        with self.assertRaises(SandboxAPIError) as cm:
            self.client().create(timeout_seconds=301, idempotency_key=key)
        self.assertEqual(cm.exception.status_code, 409)

    # ---- exec ---------------------------------------------------------------------------

    def test_exec(self):
        sb = self.sandbox(env={"A": "1"})
        r = sb.exec("echo hi; echo err >&2")
        self.assertIsInstance(r, ExecResult)
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.ok), ("hi\n", "err\n", 0, True))
        r = sb.exec(["sh", "-c", "exit 2"])
        self.assertEqual((r.exit_code, r.ok), (2, False))
        r = sb.exec(["printf", "%s\n", "a b", "$HOME"])
        self.assertEqual(r.stdout, "a b\n$HOME\n")
        r = sb.exec("echo $A $B; pwd", env={"B": "2"}, workdir="/tmp")
        self.assertEqual(r.stdout, "1 2\n/tmp\n")
        r = sb.exec("cat", stdin="from stdin")
        self.assertEqual(r.stdout, "from stdin")
        r = sb.exec("sleep 30; echo never", timeout=1)
        self.assertTrue(r.timed_out)
        self.assertFalse(r.ok)
        self.assertNotIn("never", r.stdout)

    def test_exec_caps_each_stream_with_its_own_flag(self):
        sb = self.sandbox()
        r = sb.exec("head -c 500 /dev/zero; echo 'what went wrong' >&2", max_output_bytes=100)
        self.assertEqual(len(r.stdout), 100)
        self.assertEqual(r.stderr, "what went wrong\n")
        self.assertEqual((r.truncated, r.stdout_truncated, r.stderr_truncated),
                         (True, True, False))
        events = list(sb.exec_stream("echo x; head -c 500 /dev/zero >&2", max_output_bytes=100))
        self.assertIsInstance(events[-1], ExitEvent)
        self.assertEqual((events[-1].stdout_truncated, events[-1].stderr_truncated),
                         (False, True))

    def test_exec_stream(self):
        sb = self.sandbox()
        events = list(sb.exec_stream("echo one; sleep 0.2; echo two >&2; printf 'h\\303'; "
                                     "sleep 0.2; printf '\\251\\n'; exit 3"))
        self.assertIsInstance(events[-1], ExitEvent)
        self.assertEqual(events[-1].exit_code, 3)
        self.assertFalse(events[-1].ok)
        outs = events[:-1]
        self.assertTrue(all(isinstance(e, OutputEvent) for e in outs), events)
        stdout = "".join(e.data for e in outs if e.stream == "stdout")
        stderr = "".join(e.data for e in outs if e.stream == "stderr")
        self.assertEqual(stdout, "one\nh\u00e9\n")  # the split character arrives whole
        self.assertEqual(stderr, "two\n")
        self.assertEqual([e.stream for e in outs][:2], ["stdout", "stderr"])
        # A sandbox destroyed mid-stream ends it with one ErrorEvent.
        sb2 = self.sandbox()
        gen = sb2.exec_stream("echo started; sleep 60")
        first = next(gen)
        self.assertEqual(first, OutputEvent("stdout", "started\n"))
        sb2.destroy()
        rest = list(gen)
        self.assertEqual(len(rest), 1, rest)
        self.assertIsInstance(rest[0], (ErrorEvent, ExitEvent))
        if isinstance(rest[0], ExitEvent):
            self.assertFalse(rest[0].ok)
        # Errors before the stream are exceptions.
        with self.assertRaises(NotFoundError):
            list(_handle(self.client(), "sb_0000000000000000").exec_stream("true"))

    def test_background_processes(self):
        sb = self.sandbox()
        p = sb.start_process(["cat"], tag="echo", stdin=True)
        self.assertEqual((p.state, p.tag, p.stdin_open), ("running", "echo", True))
        self.assertEqual([x.pid for x in sb.list_processes()], [p.pid])
        self.assertEqual(sb.write_stdin(p.pid, "hi\n"), 3)
        self.assertEqual(sb.write_stdin(p.pid, b"\x00\xff"), 2)
        sb.close_stdin(p.pid)
        events = list(sb.stream_process(p.pid, replay_bytes=1024))
        self.assertIsInstance(events[-1], ExitEvent)
        self.assertEqual(events[-1].exit_code, 0)
        self.assertEqual("".join(e.data for e in events[:-1])[:3], "hi\n")
        done = sb.get_process(p.pid)
        self.assertEqual((done.state, done.exit_code, done.output_bytes), ("exited", 0, 5))
        q = sb.start_process("sleep 300", pty=True, cols=100, rows=30)
        sb.resize_process(q.pid, 120, 40)
        sb.signal_process(q.pid, "SIGSTOP")
        sb.signal_process(q.pid, "SIGCONT")
        killed = sb.kill_process(q.pid)
        self.assertEqual((killed.state, killed.signal), ("exited", 9))
        with self.assertRaises(NotFoundError):
            sb.get_process(999999)

    def test_preview_url_opens_a_port_without_a_header_until_revoked(self):
        sb = self.sandbox()
        self.assertEqual(sb.exec("mkdir -p /workspace/www").exit_code, 0)
        sb.write_file("www/index.html", b"preview of the sdk test\n")
        sb.start_process("cd /workspace/www && exec python3 -m http.server --bind 127.0.0.1 8000")
        p = sb.preview_url(8000, ttl_seconds=120)
        host = "8000-%s.localhost:%d" % (sb.id.replace("_", "-"), self.server.port)
        self.assertEqual((p.port, p.sandbox_id, p.host), (8000, sb.id, host))
        self.assertRegex(str(p), r"^http://%s/\?_asb_preview_token=asbp_[0-9a-f]{64}$"
                         % re.escape(host))
        self.assertEqual(str(p), p.url)
        self.assertTrue(p.token and p.url.endswith(p.token))

        def fetch(headers):
            c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
            try:
                c.request("GET", "/", headers=dict(headers, Host=host))
                r = c.getresponse()
                return r.status, r.read()
            finally:
                c.close()

        cookie = {"Cookie": "_asb_preview_token=" + p.token}
        deadline = time.time() + 15
        while fetch(cookie)[0] == 503 and time.time() < deadline:
            time.sleep(0.1)  # the server is starting
        self.assertEqual(fetch(cookie), (200, b"preview of the sdk test\n"))
        listed = sb.list_previews(port=8000)
        self.assertEqual([x.id for x in listed], [p.id])
        self.assertIsNone(listed[0].url)
        self.assertIsNone(listed[0].token)
        self.assertEqual(sb.list_previews(port=8001), [])
        sb.revoke_preview(p)
        self.assertEqual(fetch(cookie)[0], 401)
        self.assertEqual(sb.list_previews(), [])
        with self.assertRaises(NotFoundError):
            sb.revoke_preview(p.id)
        with self.assertRaises(SandboxAPIError) as cm:
            sb.preview_url(8000, ttl_seconds=86401)
        self.assertEqual((cm.exception.status_code, cm.exception.code), (400, "invalid_request"))
        self.assertIn("ttl_seconds", cm.exception.message)
        self.assertEqual(sb.preview_url(8000, ttl_seconds=86400).port, 8000)  # the maximum

    def test_run_code(self):
        sb = self.sandbox()
        r = sb.run_code("import sys\nprint(sum(range(10)), sys.version_info[0])", "python")
        self.assertEqual((r.ok, r.stdout), (True, "45 3\n"))
        r = sb.run_code("x=4\necho $((x*x))\nexit 5", "sh")
        self.assertEqual((r.exit_code, r.stdout), (5, "16\n"))
        r = sb.run_code("console.log(1+1)", "javascript")  # node: "node" (absent in base -> 127)
        if r.ok:
            self.assertEqual(r.stdout, "2\n")
        else:
            self.assertEqual(r.exit_code, 127, r)
        with self.assertRaises(ValueError):
            sb.run_code("x", "cobol")
        # No language: picked from the template (base lists python3 among its tools).
        self.assertEqual(sb.default_language(), "python")
        r = sb.run_code("print(6 * 7)")
        self.assertEqual((r.ok, r.stdout), (True, "42\n"))

    # ---- code interpreter ---------------------------------------------------------------

    def code_sandbox(self, template):
        if not os.path.isdir(os.path.join(harness.TEMPLATES, template, "rootfs")):
            self.skipTest("template %s is not built (agent-sandbox template build %s)"
                          % (template, template))
        return self.sandbox(template=template, timeout_seconds=600)

    def test_code_context_state_persists_and_contexts_are_isolated(self):
        from agent_sandbox import Context, Execution
        sb = self.code_sandbox("python")
        a = sb.create_code_context("python")
        b = sb.create_code_context(cwd="/tmp")
        self.assertIsInstance(a, Context)
        self.assertRegex(a.id, r"^ctx_[0-9a-f]{16}$")
        self.assertEqual((a.language, a.cwd, a.state, a.default), ("python", "/workspace",
                                                                    "running", False))
        self.assertGreater(a.pid, 0)
        self.assertTrue(a.created_at)
        self.assertEqual(b.cwd, "/tmp")
        self.assertTrue(sb.run_code("x = 40", context=a).ok)
        self.assertTrue(sb.run_code("x += 1", context=a.id).ok)  # an id works as well
        r = sb.run_code("x + 1", context=a)
        self.assertIsInstance(r, Execution)
        self.assertEqual((r.status, r.text, r.execution_count, r.context_id, r.error),
                         ("ok", "42", 3, a.id, None))
        self.assertTrue(r.results[0].is_main_result)
        self.assertEqual(r.results[0].formats(), ["text"])
        r = sb.run_code("print('hi'); import sys; print('e', file=sys.stderr)", context=a)
        self.assertEqual((r.stdout, r.stderr, r.text), ("hi\n", "e\n", None))
        # env of one run: set for it, put back after it.
        r = sb.run_code("import os; os.environ['ONE_RUN']", context=a, env={"ONE_RUN": "yes"})
        self.assertEqual(r.text, "'yes'")
        r = sb.run_code("os.environ.get('ONE_RUN', 'gone')", context=a)
        self.assertEqual(r.text, "'gone'")
        r = sb.run_code("x", context=b)  # b never saw x
        self.assertEqual((r.status, r.error.name), ("error", "NameError"))
        self.assertEqual(sorted(c.id for c in sb.list_code_contexts()), sorted([a.id, b.id]))
        self.assertEqual(sb.get_code_context(a.id).id, a.id)
        sb.delete_code_context(b)
        self.assertEqual([c.id for c in sb.list_code_contexts()], [a.id])
        with self.assertRaises(NotFoundError):
            sb.get_code_context(b.id)
        with self.assertRaises(NotFoundError):
            sb.run_code("1", context=b)
        with self.assertRaises(SandboxAPIError) as cm:
            sb.create_code_context("cobol")
        self.assertEqual((cm.exception.status_code, cm.exception.code), (400, "invalid_request"))
        # Without a context the one-shot form is unchanged (a fresh python3, an ExecResult).
        r = sb.run_code("print(1 + 1)", "python")
        self.assertIsInstance(r, ExecResult)
        self.assertEqual(r.stdout, "2\n")

    def test_code_rich_results_matplotlib_png_and_chart(self):
        sb = self.code_sandbox("python")
        ctx = sb.create_code_context()
        r = sb.run_code("import matplotlib.pyplot as plt\n"
                        "plt.plot([1, 2, 3], [2, 4, 8], label='growth')\n"
                        "plt.title('Growth'); plt.xlabel('day'); plt.ylabel('count')\n"
                        "plt.show()", context=ctx)
        self.assertEqual(r.status, "ok", r)
        figs = [x for x in r.results if x.png is not None]
        self.assertEqual(len(figs), 1, r.results)
        self.assertIsInstance(figs[0].png, bytes)
        self.assertEqual(figs[0].png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertIn("png", figs[0].formats())
        self.assertIn("chart", figs[0].formats())
        chart = figs[0].chart
        self.assertEqual((chart["type"], chart["title"]), ("line", "Growth"))
        self.assertEqual(chart["elements"][0]["points"], [[1, 2], [2, 4], [3, 8]])
        r = sb.run_code("import pandas as pd\nfrom IPython.display import display, Markdown\n"
                        "display(Markdown('# hi'))\npd.DataFrame({'n': [1, 2]})", context=ctx)
        self.assertEqual(r.results[0].markdown, "# hi")
        self.assertIsNone(r.results[0].png)
        self.assertIn("<table", r.results[-1].html)
        self.assertTrue(r.results[-1].is_main_result)
        r = sb.run_code("from IPython.display import JSON\nJSON({'k': [1, 2]})", context=ctx)
        self.assertEqual(r.results[0].json, {"k": [1, 2]})

    def test_code_error_timeout_and_interrupt(self):
        import threading
        sb = self.code_sandbox("python")
        ctx = sb.create_code_context()
        r = sb.run_code("def f():\n    raise ValueError('bad input')\nf()", context=ctx)
        self.assertEqual((r.status, r.ok), ("error", False))
        self.assertEqual((r.error.name, r.error.value), ("ValueError", "bad input"))
        self.assertTrue(any("f()" in line for line in r.error.traceback), r.error)
        self.assertEqual(str(r.error), "ValueError: bad input")
        r = sb.run_code("keep = 1\nwhile True:\n    pass", context=ctx, timeout=2)
        self.assertEqual((r.status, r.timed_out, r.error.name),
                         ("timeout", True, "KeyboardInterrupt"))
        out = {}
        t = threading.Thread(target=lambda: out.setdefault("r", sb.run_code(
            "import time\nwhile True:\n    time.sleep(0.05)", context=ctx, timeout=120)))
        t.start()
        time.sleep(2)
        with self.assertRaises(SandboxAPIError) as cm:  # busy: refused, not queued
            sb.run_code("1", context=ctx)
        self.assertEqual(cm.exception.status_code, 409)
        sb.interrupt_code_context(ctx)
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(out["r"].error.name, "KeyboardInterrupt")
        self.assertEqual(sb.run_code("keep + 1", context=ctx).text, "2")

    def test_code_stream_callbacks_in_order(self):
        sb = self.code_sandbox("python")
        ctx = sb.create_code_context()
        seen = []
        r = sb.run_code("import sys, time\nprint('a', flush=True)\ntime.sleep(0.3)\n"
                        "print('b', flush=True)\nprint('w', file=sys.stderr, flush=True)\n"
                        "time.sleep(0.3)\nprint('c')\n6 * 7", context=ctx,
                        on_stdout=lambda s: seen.append(("out", s, time.monotonic())),
                        on_stderr=lambda s: seen.append(("err", s, time.monotonic())),
                        on_result=lambda x: seen.append(("result", x.text, time.monotonic())))
        self.assertEqual(r.status, "ok", r)
        self.assertEqual((r.stdout, r.stderr, r.text, r.context_id), ("a\nb\nc\n", "w\n", "42",
                                                                      ctx.id))
        self.assertEqual("".join(s for k, s, _ in seen if k == "out"), "a\nb\nc\n")
        self.assertEqual([k for k, _, _ in seen][-1], "result")
        self.assertEqual(seen[-1][1], "42")
        # They came as the code ran, not all at the end: 'a' well before 'c'.
        t_a = [t for k, s, t in seen if k == "out" and "a" in s][0]
        t_c = [t for k, s, t in seen if k == "out" and "c" in s][0]
        self.assertGreater(t_c - t_a, 0.4)
        errors = []
        r = sb.run_code("1/0", context=ctx, on_error=errors.append)
        self.assertEqual([e.name for e in errors], ["ZeroDivisionError"])
        self.assertEqual((r.status, r.error.name), ("error", "ZeroDivisionError"))
        # A callback without a context uses the default python context (the interpreter).
        r = sb.run_code("y = 5\ny", on_stdout=lambda s: None)
        self.assertEqual(r.text, "5")
        self.assertTrue([c for c in sb.list_code_contexts() if c.default])

    def test_code_dead_kernel_and_restart(self):
        sb = self.code_sandbox("python")
        ctx = sb.create_code_context()
        sb.run_code("lost = 1", context=ctx)
        r = sb.run_code("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", context=ctx)
        self.assertEqual((r.status, r.error.name), ("dead", "KernelDied"))
        self.assertEqual(sb.get_code_context(ctx).state, "dead")
        with self.assertRaises(SandboxAPIError) as cm:
            sb.run_code("1", context=ctx)
        self.assertEqual((cm.exception.status_code, cm.exception.code), (409, "conflict"))
        fresh = sb.restart_code_context(ctx)
        self.assertEqual((fresh.id, fresh.state), (ctx.id, "running"))
        self.assertEqual(sb.run_code("lost", context=ctx).error.name, "NameError")
        self.assertEqual(sb.run_code("1 + 1", context=ctx).execution_count, 2)

    def test_code_javascript_and_bash_contexts(self):
        sb = self.code_sandbox("node")
        js = sb.create_code_context("javascript")
        sb.run_code("var n = 40; function inc(x) { return x + 1 }", context=js)
        sb.run_code("n = inc(n)", context=js)
        r = sb.run_code("console.log('hi'); n + 1", context=js)
        self.assertEqual((r.stdout, r.text, r.language), ("hi\n", "42", "javascript"))
        r = sb.run_code("throw new TypeError('nope')", context=js)
        self.assertEqual((r.error.name, r.error.value), ("TypeError", "nope"))
        sh = sb.create_code_context("bash")
        sb.run_code("export K=7; cd /tmp", context=sh)
        r = sb.run_code("echo $K $(pwd); false", context=sh)
        self.assertEqual((r.stdout, r.exit_code), ("7 /tmp\n", 1))

    def test_templates(self):
        from agent_sandbox import TemplateInfo
        from agent_sandbox.sandbox import default_language
        ts = {t.name: t for t in self.client().list_templates()}
        self.assertIn("base", ts)
        self.assertIsInstance(ts["base"], TemplateInfo)
        self.assertIn("python3", ts["base"].tools)
        self.assertEqual(self.client().get_template("base").name, "base")
        with self.assertRaises(NotFoundError):
            self.client().get_template("no-such-template")
        self.assertEqual(default_language("node", []), "javascript")
        self.assertEqual(default_language("go", []), "go")
        self.assertEqual(default_language("custom", ["bash", "node"]), "javascript")
        self.assertEqual(default_language("custom", []), "python")

    # ---- files --------------------------------------------------------------------------

    def test_files_binary_round_trip(self):
        sb = self.sandbox()
        blob = bytes(range(256)) * 64 + b"\x00\xff\xfe" + os.urandom(4096)
        sb.write_file("data/blob.bin", blob)
        self.assertEqual(sb.read_file("data/blob.bin"), blob)
        self.assertEqual(sb.read_file("/workspace/data/blob.bin"), blob)
        sb.write_file("empty", b"")
        self.assertEqual(sb.read_file("empty"), b"")
        sb.write_file("run.sh", "#!/bin/sh\necho ran \u00e9\n", mode=0o755)
        self.assertEqual(sb.read_text("run.sh"), "#!/bin/sh\necho ran \u00e9\n")
        self.assertEqual(sb.exec("./run.sh").stdout, "ran \u00e9\n")
        sb.write_file("ro.txt", "x", mode="600")
        sb.exec("ln -s blob.bin data/link && mkdir -p .hidden")
        entries = {e.name: e for e in sb.list_files()}
        self.assertEqual(list(entries), sorted(entries))
        self.assertTrue(entries["data"].is_dir)
        self.assertIn(".hidden", entries)
        self.assertEqual(entries["run.sh"].mode, 0o755)
        self.assertEqual(entries["ro.txt"].mode, 0o600)
        sub = {e.name: e for e in sb.list_files("data")}
        self.assertEqual(sub["blob.bin"].size, len(blob))
        self.assertEqual(sub["link"].type, "symlink")
        self.assertEqual(sub["link"].link_target, "blob.bin")
        deep = [e.path for e in sb.list_files("/workspace", recursive=True)]
        self.assertIn("/workspace/data/blob.bin", deep)
        with self.assertRaises(NotFoundError):
            sb.read_file("missing.txt")
        with self.assertRaises(SandboxAPIError) as cm:
            sb.write_file("/etc/x", b"no")  # anywhere as the sandbox user: the root is read-only
        self.assertEqual((cm.exception.status_code, cm.exception.code), (403, "forbidden"))
        with self.assertRaises(SandboxAPIError) as cm:
            sb.read_file("data")
        self.assertEqual(cm.exception.status_code, 400)

    def test_upload_download_dir(self):
        sb = self.sandbox()
        with tempfile.TemporaryDirectory() as src, tempfile.TemporaryDirectory() as dst:
            os.makedirs(os.path.join(src, "pkg", "sub"))
            with open(os.path.join(src, "pkg", "a.bin"), "wb") as f:
                f.write(b"\x00\x01binary\xff")
            with open(os.path.join(src, "pkg", "sub", "run.sh"), "w") as f:
                f.write("#!/bin/sh\necho sub\n")
            os.chmod(os.path.join(src, "pkg", "sub", "run.sh"), 0o755)
            with open(os.path.join(src, ".env"), "w") as f:
                f.write("K=V\n")
            os.symlink("pkg/a.bin", os.path.join(src, "link"))
            sb.upload_dir(src, "/workspace/proj")
            self.assertEqual(sb.read_file("proj/pkg/a.bin"), b"\x00\x01binary\xff")
            self.assertEqual(sb.exec("./proj/pkg/sub/run.sh").stdout, "sub\n")
            self.assertEqual(sb.exec("readlink proj/link").stdout, "pkg/a.bin\n")
            sb.write_file("proj/made-inside.txt", "inside")
            n = sb.download_dir("/workspace/proj", dst)
            self.assertGreaterEqual(n, 6)
            with open(os.path.join(dst, "pkg", "a.bin"), "rb") as f:
                self.assertEqual(f.read(), b"\x00\x01binary\xff")
            with open(os.path.join(dst, "made-inside.txt")) as f:
                self.assertEqual(f.read(), "inside")
            with open(os.path.join(dst, ".env")) as f:
                self.assertEqual(f.read(), "K=V\n")
            self.assertTrue(os.access(os.path.join(dst, "pkg", "sub", "run.sh"), os.X_OK))
            self.assertEqual(os.readlink(os.path.join(dst, "link")), "pkg/a.bin")
        with self.assertRaises(NotFoundError):
            sb.download_dir("/workspace/nope", tempfile.gettempdir() + "/asb-sdk-never")

    # ---- directory watches --------------------------------------------------------------

    def _until(self, w, want, seconds=10):
        """FileEvents of w up to and including the first for which want(ev) is true; fails
        when none comes within `seconds` or the watch ends first."""
        seen = []
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            ev = w.next_event(timeout=max(left, 0)) if left > 0 else None
            if ev is None:
                self.fail("no matching event within %s s (closed=%r); saw %r"
                          % (seconds, w.closed, seen))
            seen.append(ev)
            if want(ev):
                return seen

    def test_watch_files_reports_changes_after_it_returns(self):
        from agent_sandbox import FileEvent, FileWatch
        sb = self.sandbox()
        self.assertEqual(sb.exec("mkdir -p /workspace/w").exit_code, 0)
        with sb.watch_files("w") as w:  # relative: under /workspace
            self.assertIsInstance(w, FileWatch)
            self.assertEqual((w.path, w.watches, w.closed), ("/workspace/w", 1, False))
            # Armed when watch_files returned: a write right after it is seen.
            sb.write_file("w/a.txt", "one")
            seen = self._until(w, lambda e: e.type == "create" and e.path == "/workspace/w/a.txt")
            self.assertEqual(seen[-1], FileEvent("create", "/workspace/w/a.txt", False, 0))
            self.assertTrue(all(isinstance(e, FileEvent) for e in seen), seen)
            self.assertTrue(sb.exec("echo more >> /workspace/w/a.txt").ok)
            self._until(w, lambda e: (e.type, e.path) == ("write", "/workspace/w/a.txt"))
            # Not recursive: a new subdirectory is reported, what is made inside it is not.
            self.assertTrue(sb.exec("mkdir /workspace/w/sub && touch /workspace/w/sub/in.txt && "
                                    "touch /workspace/w/marker").ok)
            seen = self._until(w, lambda e: (e.type, e.path) == ("create", "/workspace/w/marker"))
            self.assertIn(FileEvent("create", "/workspace/w/sub", True, 0), seen)
            self.assertEqual([e for e in seen if (e.path or "").startswith("/workspace/w/sub/")],
                             [])
            self.assertTrue(sb.exec("rm /workspace/w/a.txt && "
                                    "mv /workspace/w/marker /workspace/moved").ok)
            seen = self._until(w, lambda e: (e.type, e.path) == ("rename", "/workspace/w/marker"))
            self.assertIn(FileEvent("remove", "/workspace/w/a.txt", False, 0), seen)  # before
            # A quiet watch: next_event times out (keepalives, every 10 s, never surface)
            # and the watch still works afterwards.
            t0 = time.monotonic()
            self.assertIsNone(w.next_event(timeout=11))
            self.assertGreaterEqual(time.monotonic() - t0, 10.5)
            self.assertFalse(w.closed)
            sb.write_file("w/late.txt", "x")
            self._until(w, lambda e: e.path == "/workspace/w/late.txt")
        # Leaving the block closed it: iteration is over at once.
        self.assertTrue(w.closed)
        self.assertEqual(list(w), [])
        self.assertIsNone(w.next_event(timeout=1))

    def test_watch_files_recursive_follows_new_directories(self):
        sb = self.sandbox()
        self.assertEqual(sb.exec("mkdir -p /workspace/r/old").exit_code, 0)
        with sb.watch_files("/workspace/r", recursive=True, max_queue=100) as w:
            self.assertEqual((w.path, w.watches), ("/workspace/r", 2))
            sb.write_file("r/old/f.txt", "in an existing subdirectory")
            self._until(w, lambda e: (e.type, e.path) == ("create", "/workspace/r/old/f.txt"))
            sb.write_file("r/new/deep/g.txt", "parents made by the write")
            seen = self._until(w, lambda e: (e.type, e.path) == ("create",
                                                                 "/workspace/r/new/deep/g.txt"))
            self.assertIn(("create", "/workspace/r/new", True),
                          [(e.type, e.path, e.dir) for e in seen])
        # The same without recursive: nothing from below the directory itself.
        with sb.watch_files("r") as w:
            self.assertEqual(w.watches, 1)
            sb.write_file("r/new/deep/h.txt", "not seen")
            sb.write_file("r/top.txt", "seen")
            seen = self._until(w, lambda e: e.path == "/workspace/r/top.txt")
            self.assertEqual([e for e in seen if "/deep/" in (e.path or "")], [])

    def test_watch_files_errors_before_the_stream(self):
        sb = self.sandbox()
        sb.write_file("plain.txt", "a file")
        with self.assertRaises(NotFoundError) as cm:
            sb.watch_files("/workspace/missing")
        self.assertEqual((cm.exception.status_code, cm.exception.code), (404, "not_found"))
        with self.assertRaises(SandboxAPIError) as cm:
            sb.watch_files("plain.txt")
        self.assertNotIsInstance(cm.exception, NotFoundError)
        self.assertEqual((cm.exception.status_code, cm.exception.code), (400, "invalid_request"))
        with self.assertRaises(SandboxAPIError) as cm:
            sb.watch_files("/root")  # absolute paths reach the sandbox as its user: not root's
        self.assertEqual((cm.exception.status_code, cm.exception.code), (403, "forbidden"))
        for bad in (0, 65537):
            with self.assertRaises(SandboxAPIError) as cm:
                sb.watch_files(max_queue=bad)
            self.assertEqual(cm.exception.status_code, 400)
            self.assertIn("max_queue", cm.exception.message)
        with self.assertRaises(NotFoundError):
            _handle(self.client(), "sb_0000000000000000").watch_files()

    def test_watch_files_limit_and_close_ends_the_watch_in_the_sandbox(self):
        sb = self.sandbox()
        watches = []
        self.addCleanup(lambda: [w.close() for w in watches])
        for _ in range(8):
            watches.append(sb.watch_files())
        with self.assertRaises(SandboxAPIError) as cm:
            sb.watch_files()
        self.assertEqual((cm.exception.status_code, cm.exception.code), (429, "limit_exceeded"))
        watches[0].close()
        self.assertTrue(watches[0].closed)
        self.assertIsNone(watches[0].next_event())
        # The closed connection ends that watch in the sandbox: a new one fits (soon).
        deadline = time.monotonic() + 10
        while True:
            try:
                watches.append(sb.watch_files())
                break
            except SandboxAPIError as e:
                if e.status_code != 429 or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        # close() from another thread wakes a next_event() waiting here.
        import threading
        w = watches[-1]
        threading.Timer(0.5, w.close).start()
        t0 = time.monotonic()
        self.assertIsNone(w.next_event(timeout=20))
        self.assertLess(time.monotonic() - t0, 10)
        self.assertTrue(w.closed)

    def test_watch_files_ends_when_the_directory_is_removed(self):
        import threading
        sb = self.sandbox()
        self.assertEqual(sb.exec("mkdir -p /workspace/gone/sub").exit_code, 0)
        w = sb.watch_files("gone", recursive=True)
        self.addCleanup(w.close)
        self.assertTrue(sb.exec("touch /workspace/gone/sub/f && rm -rf /workspace/gone").ok)
        guard = threading.Timer(15, w.close)  # a lost end fails below instead of hanging
        guard.start()
        try:
            events = list(w)  # ends by itself: StopIteration after the end line
        finally:
            guard.cancel()
        self.assertEqual(w.end_reason, "removed", events)
        self.assertTrue(w.closed)
        self.assertIn(("remove", "/workspace/gone/sub", True),
                      [(e.type, e.path, e.dir) for e in events])
        # A sandbox destroyed under a watch: the iteration ends (an error, or the end of an
        # unmounted workspace), it never hangs.
        sb2 = self.sandbox()
        w2 = sb2.watch_files()
        self.addCleanup(w2.close)
        sb2.destroy()
        guard = threading.Timer(30, w2.close)
        guard.start()
        try:
            list(w2)
            outcome = w2.end_reason
        except (SandboxAPIError, SandboxConnectionError) as e:
            outcome = e
        finally:
            guard.cancel()
        self.assertTrue(w2.closed)
        self.assertIsNotNone(outcome, "the guard had to close it")

    # ---- snapshots ----------------------------------------------------------------------

    def test_snapshot_rollback_fork(self):
        c = self.client()
        sb = self.sandbox()
        sb.write_file("state.txt", "v1")
        snap = sb.snapshot("first")
        self.assertTrue(snap.id)
        self.assertEqual((snap.sandbox_id, snap.name), (sb.id, "first"))
        self.addCleanup(lambda: _quiet(c.delete_snapshot, snap))
        self.assertEqual(c.get_snapshot(snap.id).id, snap.id)
        self.assertIn(snap.id, [s.id for s in c.list_snapshots(sandbox_id=sb.id)])
        sb.write_file("state.txt", "v2")
        sb.write_file("later.txt", "later")
        info = sb.rollback(snap)
        self.assertEqual(info.status, "running")
        self.assertEqual(sb.read_text("state.txt"), "v1")
        with self.assertRaises(NotFoundError):
            sb.read_file("later.txt")
        forked = c.fork(snap.id)
        self.addCleanup(self._destroy_quietly, forked)
        self.assertNotEqual(forked.id, sb.id)
        self.assertEqual(forked.info.source_snapshot_id, snap.id)
        self.assertEqual(forked.read_text("state.txt"), "v1")
        forked.write_file("state.txt", "fork")
        self.assertEqual(sb.read_text("state.txt"), "v1")  # independent
        f2 = sb.fork()  # snapshot + fork in one call
        self.addCleanup(self._destroy_quietly, f2)
        self.addCleanup(lambda: _quiet(c.delete_snapshot, f2.info.source_snapshot_id))
        self.assertEqual(f2.read_text("state.txt"), "v1")
        with self.assertRaises(NotFoundError):
            c.fork("snap_0000000000000000")
        # rollback's snapshot is a body field: a 400 naming it; the sandbox is not gone.
        with self.assertRaises(SandboxAPIError) as bad:
            sb.rollback("snap_0000000000000000")
        self.assertNotIsInstance(bad.exception, NotFoundError)
        self.assertEqual((bad.exception.status_code, bad.exception.code), (400, "invalid_request"))

    def test_fork_running(self):
        sb = self.sandbox()
        sb.write_file("state.txt", "at-fork")
        kids = sb.fork_running(count=2, timeout_seconds=120)
        for k in kids:
            if k.sandbox is not None:
                self.addCleanup(self._destroy_quietly, k.sandbox)
        self.assertEqual([(k.error, k.memory) for k in kids], [(None, False), (None, False)])
        a, b = kids[0].sandbox, kids[1].sandbox
        self.assertEqual(a.info.timeout_seconds, 120)
        sb.write_file("state.txt", "parent-later")
        a.write_file("state.txt", "a")
        self.assertEqual(b.read_text("state.txt"), "at-fork")
        self.assertEqual(sb.read_text("state.txt"), "parent-later")
        with self.assertRaises(SandboxAPIError) as bad:
            sb.fork_running(count=0)
        self.assertEqual((bad.exception.status_code, bad.exception.code), (400, "invalid_request"))

    # ---- errors and configuration -------------------------------------------------------

    def test_typed_errors(self):
        c = self.client()
        with self.assertRaises(SandboxAPIError) as cm:
            c.create(cpus=-1)
        e = cm.exception
        self.assertEqual((e.status_code, e.code), (400, "invalid_request"))
        self.assertIn("cpus", e.message)
        self.assertNotIsInstance(e, NotFoundError)
        with self.assertRaises(SandboxAPIError) as cm:
            c.create(template="no-such-template")
        self.assertEqual(cm.exception.status_code, 400)
        with self.assertRaises(NotFoundError) as cm:
            c.get("sb_0123456789abcdef")
        self.assertEqual(cm.exception.code, "not_found")
        bad = self.client(api_key="asb_" + "0" * 48)
        with self.assertRaises(SandboxAPIError) as cm:
            bad.list()
        self.assertEqual(cm.exception.status_code, 401)
        self.assertTrue(cm.exception.code)
        with self.assertRaises(SandboxConnectionError):
            SandboxClient("http://127.0.0.1:%d" % harness.free_port(), timeout=5).list()
        with self.assertRaises(ValueError):
            SandboxClient("ftp://x")

    # ---- seed B's names (ADR 0007) -------------------------------------------------------

    def test_seed_b_client_names(self):
        from agent_sandbox.client import (ExecEvent, ExecResult, FileInfo, Sandbox,  # noqa
                                          SandboxAPIError as B, SandboxClient as C, SnapshotInfo)
        self.assertIs(B, SandboxAPIError)
        self.assertIs(C, SandboxClient)
        with self.client() as c:
            h = c.health()
            self.assertEqual((h["status"], h["backend"]), ("ok", "ns"))
            self.assertTrue(h["version"])
            sb = c.create(image="base", read_only_rootfs=True, timeout_seconds=600)
            # (cleanup through a client of its own: this one is closed by then)
            self.addCleanup(self._destroy_quietly, self.client().get(sb.id))
            self.assertEqual((sb.status, sb.image, sb.template, sb.cpus > 0),
                             ("running", "base", "base", True))  # SandboxInfo fields read too
            self.assertGreater(harness.parse_time(sb.expires_at), harness.parse_time(
                sb.created_at) + 500)
            self.assertEqual((sb.data["id"], sb.data["read_only_rootfs"]), (sb.id, True))
            self.assertEqual(repr(sb), "Sandbox(id=%r, image='base', status='running')" % sb.id)
            with self.assertRaises(AttributeError):
                sb.no_such_field  # noqa: B018
            before = c.list_sandboxes()
            self.assertIn(sb.id, [x.id for x in before])
            with self.assertRaises(ValueError):
                c.create(template="base", image="go")  # aliases that disagree: nothing sent
            with self.assertRaises(SandboxAPIError) as cm:
                c.create(read_only_rootfs=False)
            self.assertEqual(cm.exception.status_code, 400)
            self.assertIn("read_only_rootfs", cm.exception.message)
            self.assertEqual(len(c.list_sandboxes()), len(before))  # refused: nothing made
            self.assertIs(sb.set_timeout(120).refresh(), sb)
            self.assertLess(harness.parse_time(sb.expires_at), harness.parse_time(
                sb.created_at) + 300)
        # Leaving the with block closed the client and its handles.
        with self.assertRaises(SandboxConnectionError):
            c.list()
        with self.assertRaises(SandboxConnectionError):
            sb.exec("true")

    def test_seed_b_exec_files_snapshots(self):
        from agent_sandbox import ExecEvent, FileWritten
        c = self.client()
        sb = self.sandbox(image="base")
        r = sb.exec("sleep 30", timeout_seconds=0.5)
        self.assertTrue(r.timed_out)
        self.assertTrue(sb.exec("true", timeout=5, timeout_seconds=5).ok)
        with self.assertRaises(ValueError):
            sb.exec("true", timeout=1, timeout_seconds=2)
        events = list(sb.exec_stream("echo a; echo b >&2; exit 3"))
        self.assertTrue(all(isinstance(e, ExecEvent) for e in events), events)
        self.assertEqual([(e.type, e.data, e.exit_code, e.timed_out, e.duration_ms)
                          for e in events[:-1]],
                         [("stdout", "a\n", None, False, None),
                          ("stderr", "b\n", None, False, None)])
        last = events[-1]
        self.assertEqual((last.type, last.data, last.exit_code, last.timed_out),
                         ("exit", "", 3, False))
        self.assertIsInstance(last.duration_ms, int)
        self.assertTrue(list(sb.exec_stream("sleep 30", timeout_seconds=0.5))[-1].timed_out)
        self.assertFalse(isinstance(object(), ExecEvent))
        w = sb.write_file("notes.md", "draft")
        self.assertIsInstance(w, FileWritten)
        self.assertEqual((w.path, w.name, w.type, w.size), ("/workspace/notes.md", "notes.md",
                                                            "file", 5))
        self.assertEqual(w["path"], w.path)  # still the dict it was
        with self.assertRaises(AttributeError):
            w.nothing  # noqa: B018
        [f] = [e for e in sb.list_files() if e.name == "notes.md"]
        self.assertEqual(f.modified_at, f.mtime)
        snap = sb.snapshot("draft")
        self.addCleanup(lambda: _quiet(c.delete_snapshot, snap))
        self.assertEqual((snap.image, snap.template), ("base", "base"))
        sb.write_file("notes.md", "oops")
        self.assertIs(sb.rollback(snap), sb)
        self.assertEqual((sb.source_snapshot_id, sb.read_text("notes.md")), (snap.id, "draft"))
        sb.destroy()
        with self.assertRaises(NotFoundError):  # as seed B's destroy() raises its 404
            sb.destroy()
        sb.destroy(missing_ok=True)

    def test_env_configuration(self):
        saved = {k: os.environ.get(k) for k in ("AGENT_SANDBOX_URL", "AGENT_SANDBOX_API_KEY")}
        self.addCleanup(_restore_env, saved)
        os.environ["AGENT_SANDBOX_URL"] = self.url
        os.environ["AGENT_SANDBOX_API_KEY"] = API_KEY
        c = SandboxClient()
        self.assertEqual(c.base_url, self.url)
        self.assertIsInstance(c.list(), list)
        os.environ["AGENT_SANDBOX_API_KEY"] = "asb_" + "1" * 48
        with self.assertRaises(SandboxAPIError) as cm:
            SandboxClient().list()
        self.assertEqual(cm.exception.status_code, 401)
        del os.environ["AGENT_SANDBOX_API_KEY"]
        with self.assertRaises(SandboxAPIError) as cm:
            SandboxClient().list()
        self.assertEqual(cm.exception.status_code, 401)
        # Explicit arguments win over the environment.
        os.environ["AGENT_SANDBOX_URL"] = "http://127.0.0.1:1"
        self.assertIsInstance(SandboxClient(self.url, API_KEY).list(), list)

    def test_pip_install_offline(self):
        """`pip install --no-index --no-build-isolation sdk/python` works without network
        (Debian's python3-setuptools and python3-wheel build it) and installs the package."""
        py = "/usr/bin/python3"
        probe = subprocess.run([py, "-c", "import setuptools, wheel, venv, pip"],
                               capture_output=True)
        if probe.returncode != 0:
            self.skipTest("%s lacks pip/setuptools/wheel/venv" % py)
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([py, "-m", "venv", "--system-site-packages", venv], check=True)
            build = os.path.join(tmp, "src")
            import shutil
            shutil.copytree(SDK_DIR, build, ignore=shutil.ignore_patterns(
                "__pycache__", "build", "*.egg-info"))
            p = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-index",
                                "--no-build-isolation", build], capture_output=True, text=True,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            p = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                                "import agent_sandbox as a; print(a.__file__, a.__version__)"],
                               capture_output=True, text=True, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(venv, p.stdout)

    def test_readme_examples(self):
        """Every ```python block of sdk/python/README.md runs as written, in a fresh
        interpreter configured only through the environment."""
        with open(os.path.join(SDK_DIR, "README.md")) as f:
            blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
        self.assertGreaterEqual(len(blocks), 2)
        env = dict(os.environ, AGENT_SANDBOX_URL=self.url, AGENT_SANDBOX_API_KEY=API_KEY,
                   PYTHONPATH=SDK_DIR)
        for i, code in enumerate(blocks):
            with self.subTest(block=i):
                with tempfile.TemporaryDirectory() as cwd:
                    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                                       capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, "block %d:\n%s\n%s%s" % (i, code, p.stdout,
                                                                          p.stderr))
        self.assertEqual(self.client().list(), [], "README examples left sandboxes behind")


def _handle(client, sid):
    from agent_sandbox import Sandbox
    return Sandbox(client, {"id": sid, "status": "running"})


def _quiet(fn, *args):
    try:
        fn(*args)
    except SandboxAPIError:
        pass


def _restore_env(saved):
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


if __name__ == "__main__":
    harness.main()
