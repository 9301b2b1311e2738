"""The code interpreter (ADR 0019) over HTTP, against the real server, real sandboxes and real
kernels: Debian's ipykernel in the `python` template, Node's vm in the `node` template, bash in
`base`. A test whose template is not built skips with the reason (CI builds python and node)."""

import base64
import json
import os
import threading
import time
import unittest

from harness import (TEMPLATES, RssWatch, Server, ServerTestCase, main,
                     missing_prerequisite, openapi_check)


def template_built(name):
    return os.path.isdir(os.path.join(TEMPLATES, name, "rootfs"))


class CodeCase(ServerTestCase):
    def sandbox(self, template):
        if not template_built(template):
            self.skipTest("template %s is not built (agent-sandbox template build %s)"
                          % (template, template))
        return self.create(template=template, timeout_seconds=600)["id"]

    def context(self, sid, language, **kw):
        body = {"language": language}
        body.update(kw)
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts" % sid, body, timeout=120)
        self.assertEqual(r.status, 201, r)
        return r.json()

    def run_code(self, sid, code, status=200, **kw):
        body = {"code": code}
        body.update(kw)
        r = self.server.request("POST", "/v1/sandboxes/%s/code" % sid, body, timeout=180)
        self.assertEqual(r.status, status, r)
        return r.json()

    def stream_code(self, sid, body):
        headers, status, events = self.server.stream(sid, body, timeout=180, route="code/stream",
                                                     event_schema="CodeStreamEvent")
        self.assertEqual(status, 200, events)
        self.assertEqual(headers["content-type"], "application/x-ndjson")
        return events


class PythonContexts(CodeCase):
    def test_state_persists_and_contexts_are_isolated(self):
        sid = self.sandbox("python")
        a = self.context(sid, "python")
        b = self.context(sid, "python", cwd="/tmp")
        self.assertTrue(a["id"].startswith("ctx_"))
        self.assertEqual((a["state"], a["language"], a["cwd"]), ("running", "python", "/workspace"))
        self.run_code(sid, "import os\nx = 40", context_id=a["id"])
        self.run_code(sid, "x += 1\nos.chdir('/tmp')", context_id=a["id"])
        r = self.run_code(sid, "x + 1", context_id=a["id"])
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["results"][0]["data"]["text/plain"], "42")
        self.assertTrue(r["results"][0]["is_main_result"])
        self.assertEqual(r["execution_count"], 3)
        self.assertEqual(self.run_code(sid, "print(os.getcwd())", context_id=a["id"])["stdout"],
                         "/tmp\n")
        # b never saw x, and started in its own cwd.
        r = self.run_code(sid, "x", context_id=b["id"])
        self.assertEqual(r["status"], "error")
        self.assertEqual(r["error"]["name"], "NameError")
        self.assertEqual(self.run_code(sid, "import os; print(os.getcwd())",
                                       context_id=b["id"])["stdout"], "/tmp\n")
        listed = self.server.request("GET", "/v1/sandboxes/%s/contexts" % sid).json()["contexts"]
        self.assertEqual(sorted(c["id"] for c in listed), sorted([a["id"], b["id"]]))
        r = self.server.request("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sid, b["id"]))
        self.assertEqual(r.status, 204, r)
        listed = self.server.request("GET", "/v1/sandboxes/%s/contexts" % sid).json()["contexts"]
        self.assertEqual([c["id"] for c in listed], [a["id"]])
        self.assertError(self.server.request("GET", "/v1/sandboxes/%s/contexts/%s"
                                             % (sid, b["id"])), 404, "not_found")

    def test_rich_results_dataframe_and_error(self):
        sid = self.sandbox("python")
        r = self.run_code(sid, "import pandas as pd\n"
                               "pd.DataFrame({'name': ['a', 'b'], 'n': [1, 2]})")
        data = r["results"][0]["data"]
        self.assertIn("<table", data["text/html"])
        self.assertIn("name", data["text/plain"])
        r = self.run_code(sid, "from IPython.display import display, Markdown, JSON, Latex\n"
                               "display(Markdown('# hi'))\ndisplay(Latex(r'$x^2$'))\n"
                               "display(JSON({'k': [1, 2]}))")
        mimes = [set(x["data"]) for x in r["results"]]
        self.assertIn("text/markdown", mimes[0])
        self.assertIn("text/latex", mimes[1])
        self.assertEqual(r["results"][2]["data"]["application/json"], {"k": [1, 2]})
        r = self.run_code(sid, "def f():\n    raise ValueError('bad input')\nf()")
        self.assertEqual(r["status"], "error")
        self.assertEqual(r["error"]["name"], "ValueError")
        self.assertEqual(r["error"]["value"], "bad input")
        self.assertTrue(any("f()" in line for line in r["error"]["traceback"]), r["error"])
        self.assertFalse(any("\x1b[" in line for line in r["error"]["traceback"]))

    def test_matplotlib_line_chart_png_and_chart_data(self):
        sid = self.sandbox("python")
        r = self.run_code(sid, "import matplotlib.pyplot as plt\n"
                               "plt.plot([1, 2, 3], [2, 4, 8], label='growth')\n"
                               "plt.title('Growth'); plt.xlabel('day'); plt.ylabel('count')\n"
                               "plt.show()")
        self.assertEqual(r["status"], "ok", r)
        figs = [x for x in r["results"] if "image/png" in x["data"]]
        self.assertEqual(len(figs), 1, r["results"])
        png = base64.b64decode(figs[0]["data"]["image/png"])
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        chart = figs[0]["chart"]
        self.assertEqual(chart["type"], "line")
        self.assertEqual((chart["title"], chart["x_label"], chart["y_label"]),
                         ("Growth", "day", "count"))
        self.assertEqual(chart["elements"], [{"label": "growth",
                                              "points": [[1, 2], [2, 4], [3, 8]]}])
        r = self.run_code(sid, "plt.bar(['x', 'y'], [3, 5]); plt.title('B')")
        chart = [x for x in r["results"] if "chart" in x][0]["chart"]
        self.assertEqual(chart["type"], "bar")
        self.assertEqual([(e["label"], e["value"]) for e in chart["elements"]],
                         [("x", 3), ("y", 5)])

    def test_timeout_interrupts_and_context_survives(self):
        sid = self.sandbox("python")
        self.run_code(sid, "keep = 'me'")
        t0 = time.time()
        r = self.run_code(sid, "while True:\n    pass", timeout=2)
        self.assertLess(time.time() - t0, 15)
        self.assertEqual((r["status"], r["timed_out"]), ("timeout", True), r)
        self.assertEqual(r["error"]["name"], "KeyboardInterrupt")
        self.assertEqual(self.run_code(sid, "print(keep)")["stdout"], "me\n")

    def test_interrupt_route_stops_a_running_loop(self):
        sid = self.sandbox("python")
        ctx = self.context(sid, "python")
        out = {}

        def run():
            out["r"] = self.run_code(sid, "import time\nwhile True:\n    time.sleep(0.05)",
                                     context_id=ctx["id"], timeout=120)

        t = threading.Thread(target=run)
        t.start()
        time.sleep(2)
        # A second execution while one runs is refused, not queued behind an infinite loop.
        busy = self.server.request("POST", "/v1/sandboxes/%s/code" % sid,
                                   {"code": "1", "context_id": ctx["id"]})
        self.assertError(busy, 409, "conflict")
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts/%s/interrupt"
                                % (sid, ctx["id"]))
        self.assertEqual(r.status, 204, r)
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(out["r"]["error"]["name"], "KeyboardInterrupt")
        self.assertEqual(self.run_code(sid, "2 + 2", context_id=ctx["id"])["results"][0]
                         ["data"]["text/plain"], "4")

    def test_dead_kernel_is_reported_and_restart_works(self):
        sid = self.sandbox("python")
        ctx = self.context(sid, "python")
        self.run_code(sid, "lost = 1", context_id=ctx["id"])
        r = self.run_code(sid, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
                          context_id=ctx["id"])
        self.assertEqual(r["status"], "dead", r)
        self.assertEqual(r["error"]["name"], "KernelDied")
        got = self.server.request("GET", "/v1/sandboxes/%s/contexts/%s" % (sid, ctx["id"]))
        self.assertEqual(got.json()["state"], "dead")
        self.assertError(self.server.request("POST", "/v1/sandboxes/%s/code" % sid,
                                             {"code": "1", "context_id": ctx["id"]}),
                         409, "conflict")
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts/%s/restart"
                                % (sid, ctx["id"]), timeout=120)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json()["id"], r.json()["state"]), (ctx["id"], "running"))
        r = self.run_code(sid, "lost", context_id=ctx["id"])
        self.assertEqual(r["error"]["name"], "NameError")  # a fresh kernel
        self.assertEqual(self.run_code(sid, "1 + 1", context_id=ctx["id"])["execution_count"], 2)

    def test_output_cap_exactly_and_over(self):
        sid = self.sandbox("python")
        mib = 1 << 20
        # `_ =`: the count write() returns would be a result, and results share the budget.
        r = self.run_code(sid, "import sys\n_ = sys.stdout.write('x' * %d)" % mib)
        self.assertEqual((len(r["stdout"]), r["truncated"], r["truncated_outputs"]),
                         (mib, False, []))
        r = self.run_code(sid, "_ = sys.stdout.write('x' * %d)" % (mib + 1))
        self.assertEqual((len(r["stdout"]), r["truncated"], r["truncated_outputs"]),
                         (mib, True, ["stdout"]))
        r = self.run_code(sid, "print('y' * 100)", max_output_bytes=10)
        self.assertEqual((r["stdout"], r["truncated"]), ("y" * 10, True))
        self.assertEqual(self.run_code(sid, "print('fine')")["stdout"], "fine\n")

    def test_stream_events_in_order(self):
        sid = self.sandbox("python")
        events = self.stream_code(sid, {"code": "import time\nprint('a', flush=True)\n"
                                                "time.sleep(0.3)\nprint('b')\n1/0"})
        kinds = [e["type"] for e in events]
        self.assertEqual(kinds[0], "context")
        self.assertEqual(kinds[-1], "end")
        self.assertEqual("".join(e["data"] for e in events if e["type"] == "stdout"), "a\nb\n")
        err = [e for e in events if e["type"] == "error"][0]
        self.assertEqual(err["name"], "ZeroDivisionError")
        self.assertNotIn("code", err)
        self.assertEqual(events[-1]["status"], "error")

    def test_bad_requests(self):
        sid = self.sandbox("python")
        base = "/v1/sandboxes/%s" % sid
        self.assertError(self.server.request("POST", base + "/contexts", {"language": "cobol"}),
                         400, "invalid_request")
        self.assertError(self.server.request("POST", base + "/contexts", {"cwd": "/nope/x"}),
                         400, "invalid_request")
        self.assertError(self.server.request("POST", base + "/code", {}), 400,
                         "invalid_request")
        self.assertError(self.server.request("POST", base + "/code", {"code": "1", "timeout": 0}),
                         400, "invalid_request")
        self.assertError(self.server.request("POST", base + "/code",
                                             {"code": "1", "max_output_bytes": (1 << 20) + 1}),
                         400, "invalid_request")
        self.assertError(self.server.request("POST", base + "/code",
                                             {"code": "1", "context_id": "ctx_0000000000000000"}),
                         404, "not_found")
        self.assertError(self.server.request("POST", base + "/code",
                                             {"code": "1", "context_id": "../x"}),
                         404, "not_found")
        limit = 512 * 1024
        ok = self.run_code(sid, "#" * limit)
        self.assertEqual(ok["status"], "ok")
        self.assertError(self.server.request("POST", base + "/code", {"code": "#" * (limit + 1)}),
                         400, "invalid_request")
        self.assertError(self.server.request("POST", "/v1/sandboxes/sb_0000000000000000/code",
                                             {"code": "1"}), 404, "not_found")


class JavaScriptContexts(CodeCase):
    def test_state_results_errors_and_timeout(self):
        sid = self.sandbox("node")
        ctx = self.context(sid, "javascript")
        self.run_code(sid, "var n = 40; function inc(x) { return x + 1 }", context_id=ctx["id"])
        self.run_code(sid, "n = inc(n)", context_id=ctx["id"])
        r = self.run_code(sid, "console.log('n is', n); ({n: inc(n), list: [1, 2]})",
                          context_id=ctx["id"])
        self.assertEqual(r["stdout"], "n is 41\n")
        self.assertEqual(r["results"][0]["data"]["application/json"], {"n": 42, "list": [1, 2]})
        r = self.run_code(sid, "null.x", context_id=ctx["id"])
        self.assertEqual((r["status"], r["error"]["name"]), ("error", "TypeError"))
        r = self.run_code(sid, "while (true) {}", context_id=ctx["id"], timeout=2)
        self.assertEqual((r["status"], r["timed_out"]), ("timeout", True))
        self.assertEqual(self.run_code(sid, "n", context_id=ctx["id"])["results"][0]["data"]
                         ["text/plain"], "41")
        r = self.run_code(sid, "await_me = Promise.resolve(7)", context_id=ctx["id"])
        self.assertEqual(r["results"][0]["data"]["text/plain"], "7")

    def test_results_share_the_output_budget(self):
        sid = self.sandbox("node")
        # 3 x 300 kB fit in the 1 MiB budget, the 4th and 5th do not, the last value does.
        r = self.run_code(sid, "for (let i = 0; i < 5; i++)\n"
                               "  display({'text/plain': 'x'.repeat(300000)}, {raw: true});\n"
                               "'last'", language="javascript")
        self.assertEqual(len(r["results"]), 4, [len(x["data"]["text/plain"]) for x in r["results"]])
        self.assertEqual(r["results"][-1]["data"]["text/plain"], "'last'")
        self.assertEqual((r["truncated"], r["truncated_outputs"], r["dropped_results"]),
                         (True, ["results"], 2))

    def test_default_language_of_a_node_sandbox_is_javascript(self):
        sid = self.sandbox("node")
        r = self.run_code(sid, "typeof process.versions.node")
        self.assertEqual((r["language"], r["results"][0]["data"]["text/plain"]),
                         ("javascript", "'string'"))

    def test_python_context_in_node_template_is_a_clear_conflict(self):
        sid = self.sandbox("node")
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts" % sid,
                                {"language": "python"}, timeout=120)
        self.assertError(r, 409, "conflict")
        self.assertIn("python3-ipykernel", r.json()["error"]["message"])


class BashContexts(CodeCase):
    def test_variables_cwd_and_exit_codes_persist(self):
        sid = self.sandbox("base")
        ctx = self.context(sid, "bash")
        self.run_code(sid, "GREETING=hi; cd /tmp; f() { echo \"f:$1\"; }", context_id=ctx["id"])
        r = self.run_code(sid, "echo $GREETING $(pwd); f x; echo oops >&2; false",
                          context_id=ctx["id"])
        self.assertEqual((r["stdout"], r["stderr"]), ("hi /tmp\nf:x\n", "oops\n"))
        self.assertEqual((r["status"], r["exit_code"]), ("error", 1))
        r = self.run_code(sid, "while true; do :; done", context_id=ctx["id"], timeout=2)
        self.assertEqual((r["status"], r["timed_out"]), ("timeout", True))
        self.assertEqual(self.run_code(sid, "echo $GREETING", context_id=ctx["id"])["stdout"],
                         "hi\n")
        r = self.run_code(sid, "exit 3", context_id=ctx["id"])
        self.assertEqual((r["status"], r["error"]["name"]), ("dead", "KernelDied"))
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts/%s/restart"
                                % (sid, ctx["id"]))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.run_code(sid, "echo ${GREETING:-gone}",
                                       context_id=ctx["id"])["stdout"], "gone\n")

    def test_default_context_per_language(self):
        sid = self.sandbox("base")
        self.run_code(sid, "A=1", language="bash")
        self.assertEqual(self.run_code(sid, "echo $A", language="sh")["stdout"], "1\n")
        listed = self.server.request("GET", "/v1/sandboxes/%s/contexts" % sid).json()["contexts"]
        self.assertEqual([(c["language"], c["default"]) for c in listed], [("bash", True)])


class PerExecutionEnv(CodeCase):
    """env of one execution (E2B's runCode envs): set for it, put back after it, in each
    language; values are data, never code; the limit holds at its boundary."""

    TRICKY = "two words; $(touch /tmp/pwned) `id` 'q' \"d\" \\ \n end"

    def test_python(self):
        sid = self.sandbox("python")
        self.run_code(sid, "import os; os.environ['KEEP'] = 'before'")
        r = self.run_code(sid, "import os, subprocess\n"
                               "print(os.environ['KEEP'], os.environ['NEW'])\n"
                               "print(subprocess.run(['sh', '-c', 'echo $NEW'], "
                               "capture_output=True, text=True).stdout, end='')",
                          env={"KEEP": "during", "NEW": "fresh"})
        self.assertEqual(r["stdout"], "during fresh\nfresh\n", r)
        r = self.run_code(sid, "print(os.environ['KEEP'], os.environ.get('NEW'))")
        self.assertEqual(r["stdout"], "before None\n", r)
        r = self.run_code(sid, "print(repr(os.environ['T']))", env={"T": self.TRICKY})
        self.assertEqual(r["stdout"], repr(self.TRICKY) + "\n", r)
        # The execution count and the user's namespace do not see the bookkeeping.
        r = self.run_code(sid, "print(sorted(k for k in globals() if 'asb' in k))")
        self.assertEqual(r["stdout"], "[]\n", r)
        # Set even for an execution that fails or times out, and put back after it.
        r = self.run_code(sid, "import time; time.sleep(30)", env={"KEEP": "x"}, timeout=1)
        self.assertEqual(r["status"], "timeout", r)
        self.assertEqual(self.run_code(sid, "print(os.environ['KEEP'])")["stdout"], "before\n")

    def test_javascript(self):
        sid = self.sandbox("node")
        r = self.run_code(sid, "process.env.JS_ONE", env={"JS_ONE": "1"})
        self.assertEqual(r["results"][0]["data"]["text/plain"], "'1'", r)
        r = self.run_code(sid, "String(process.env.JS_ONE)")
        self.assertEqual(r["results"][0]["data"]["text/plain"], "'undefined'", r)

    def test_bash(self):
        sid = self.sandbox("base")
        self.run_code(sid, "export KEEP=before; LOCAL=mine", language="bash")
        r = self.run_code(sid, "echo \"$KEEP|$NEW|$LOCAL\"; sh -c 'echo $NEW'", language="bash",
                          env={"KEEP": "during", "NEW": "fresh", "LOCAL": "over"})
        self.assertEqual(r["stdout"], "during|fresh|over\nfresh\n", r)
        r = self.run_code(sid, "echo \"$KEEP|${NEW-unset}|$LOCAL\"; sh -c 'echo ${KEEP}'",
                          language="bash")
        self.assertEqual(r["stdout"], "before|unset|mine\nbefore\n", r)
        r = self.run_code(sid, "printf '%s' \"$T\"", language="bash", env={"T": self.TRICKY})
        self.assertEqual(r["stdout"], self.TRICKY, r)
        self.assertEqual(self.run_code(sid, "ls /tmp/pwned 2>&1 || echo none",
                                       language="bash")["stdout"].strip()[-4:], "none")
        r = self.server.request("POST", "/v1/sandboxes/%s/code" % sid,
                                {"code": "true", "language": "bash", "env": {"1BAD": "x"}},
                                check=False)
        self.assertError(r, 400, "invalid_request")

    def test_limits(self):
        sid = self.sandbox("base")
        # Keys and values: 65536 bytes pass, one more fails.
        at = {"K": "v" * (65536 - 1)}
        self.assertEqual(self.run_code(sid, "echo ${#K}", language="bash", env=at)["stdout"],
                         "65535\n")
        over = {"K": "v" * 65536}
        for env in (over, {"": "x"}, {"A=B": "x"}, {"A": 1}, []):
            r = self.server.request("POST", "/v1/sandboxes/%s/code" % sid,
                                    {"code": "true", "language": "bash", "env": env},
                                    check=False)
            self.assertError(r, 400, "invalid_request")


class HostileCode(CodeCase):
    """Code in a context is hostile: it floods, forges the driver's protocol, and hoards
    contexts. Each attempt leaves the server answering and the context (or a restart) usable."""

    # The flood's answer (the kernel's start included: the first run starts it) within this.
    FLOOD_ANSWERED_WITHIN_S = 20

    def test_flood_is_capped_and_interrupted(self):
        sid = self.sandbox("python")
        t0 = time.time()
        r = self.run_code(sid, "while True:\n    print('x' * 65536)", timeout=3)
        self.assertLess(time.time() - t0, self.FLOOD_ANSWERED_WITHIN_S)
        self.assertEqual((r["status"], r["timed_out"], r["truncated"]), ("timeout", True, True))
        self.assertLessEqual(len(r["stdout"].encode()), 1 << 20)
        self.assertEqual(self.run_code(sid, "print('after')")["stdout"], "after\n")

    def test_results_share_the_output_budget(self):
        # ADR 0014, round 3, before: 100 display()s of 10 MB answered 200 with 1 GB and
        # "truncated": false (server RSS 1.96 GB). After: results, stdout and stderr share
        # max_output_bytes; a result that does not fit is left out whole and the answer says so.
        # (CI size: 40 displays of 4 MB; the same assertions.)
        sid = self.sandbox("python")
        flood = ("for _ in range(40):\n"
                 "    display({'text/plain': 'x' * 4_000_000}, raw=True)\n"
                 "print('done')")
        with RssWatch(self.server.proc.pid) as watch:
            r = self.run_code(sid, flood)
        grew = watch.growth
        self.assertEqual(r["status"], "ok", r["status"])
        self.assertEqual((r["results"], r["stdout"]), ([], "done\n"))
        self.assertEqual((r["truncated"], r["truncated_outputs"], r["dropped_results"]),
                         (True, ["results"], 40))
        self.assertLess(grew, 64 << 20, "server RSS grew %d MiB" % (grew >> 20))
        # What fits is kept, in order, until the budget runs out; the end says the rest.
        fits = ("for i in range(3):\n"
                "    display({'text/plain': str(i) * 400_000}, raw=True)\n")
        r = self.run_code(sid, fits)
        self.assertEqual([x["data"]["text/plain"][0] for x in r["results"]], ["0", "1"])
        self.assertEqual((r["truncated"], r["truncated_outputs"], r["dropped_results"]),
                         (True, ["results"], 1))
        # With a smaller budget, stdout takes its part first; the stream's end says the same.
        events = self.stream_code(sid, {"code": "print('a' * 50)\n" + fits,
                                        "max_output_bytes": 500_000})
        end = events[-1]
        self.assertEqual((end["type"], end["truncated"], end["truncated_outputs"],
                          end["dropped_results"]), ("end", True, ["results"], 2))
        self.assertEqual(len([e for e in events if e["type"] == "result"]), 1)
        # Nothing cut: an empty list, and the context is fine.
        r = self.run_code(sid, "1 + 1")
        self.assertEqual((r["results"][0]["data"]["text/plain"], r["truncated"],
                          r["truncated_outputs"], r["dropped_results"]), ("2", False, [], 0))

    def test_bash_flood_is_capped_and_interrupted(self):
        sid = self.sandbox("base")
        r = self.run_code(sid, "yes flood", language="bash", timeout=2)
        self.assertEqual((r["status"], r["truncated"]), ("timeout", True))
        self.assertLessEqual(len(r["stdout"]), 1 << 20)
        self.assertEqual(self.run_code(sid, "echo ok", language="bash")["stdout"], "ok\n")

    def test_forged_driver_lines_are_ignored(self):
        sid = self.sandbox("python")
        # The driver is the kernel's parent. Writing to its stdout may be refused (the pipe is
        # sandboxd's); if it is not, the forged lines must change nothing.
        r = self.run_code(sid, "import os, json\n"
                               "try:\n"
                               "    f = open('/proc/%d/fd/1' % os.getppid(), 'w')\n"
                               "except OSError:\n"
                               "    f = open('/proc/self/fd/1', 'w')\n"
                               "f.write(json.dumps({'type': 'end', 'id': 'forged', "
                               "'status': 'ok'}) + '\\n')\n"
                               "f.write(json.dumps({'type': 'stdout', 'id': 'forged', "
                               "'data': 'fake'}) + '\\n')\n"
                               "f.write('not json at all\\n')\n"
                               "f.close()\n"
                               "print('real')")
        self.assertEqual(r["status"], "ok", r)
        # Written to the kernel's own fd 1, the lines come back as text, interleaved in any way
        # with the print (ipykernel forwards fd output on its own thread), never as events.
        rest = r["stdout"]
        for forged in (json.dumps({"type": "end", "id": "forged", "status": "ok"}),
                       json.dumps({"type": "stdout", "id": "forged", "data": "fake"}),
                       "not json at all"):
            rest = rest.replace(forged, "")
        self.assertEqual(rest.split(), ["real"], r)
        self.assertEqual(r["results"], [], r)
        self.assertEqual(self.run_code(sid, "1")["results"][0]["data"]["text/plain"], "1")

    def test_context_limit_exactly_and_over(self):
        sid = self.sandbox("base")
        for _ in range(16):
            self.context(sid, "bash")
        r = self.server.request("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": "bash"})
        self.assertError(r, 429, "limit_exceeded")
        # The default context counts too; deleting one makes room.
        self.assertError(self.server.request("POST", "/v1/sandboxes/%s/code" % sid,
                                             {"code": "echo", "language": "bash"}),
                         429, "limit_exceeded")
        first = self.server.request("GET", "/v1/sandboxes/%s/contexts" % sid).json()["contexts"][0]
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/%s/contexts/%s"
                                             % (sid, first["id"])).status, 204)
        self.assertEqual(self.run_code(sid, "echo room", language="bash")["stdout"], "room\n")

    def test_context_of_another_sandbox_is_unreachable(self):
        sid = self.sandbox("base")
        ctx = self.context(sid, "bash")
        # Another sandbox (same key here; tenancy is per sandbox owner, test_auth covers keys)
        # cannot name this context.
        other = self.sandbox("base")
        self.assertError(self.server.request("POST", "/v1/sandboxes/%s/code" % other,
                                             {"code": "echo", "context_id": ctx["id"]}),
                         404, "not_found")


class ServerRestart(unittest.TestCase):
    """Contexts are the sandbox's processes, so a server killed with SIGKILL and started again
    finds them, state included."""

    def setUp(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        self.server = Server()
        try:
            self.server.start()
        except Exception:
            self.server.close()
            raise

    def tearDown(self):
        self.server.close()

    def test_context_survives_a_server_restart(self):
        s = self.server
        sid = s.create(timeout_seconds=600)["id"]
        r = s.request("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": "bash"})
        self.assertEqual(r.status, 201, r)
        ctx = r.json()
        body = {"code": "KEPT=yes", "context_id": ctx["id"]}
        self.assertEqual(s.request("POST", "/v1/sandboxes/%s/code" % sid, body).status, 200)
        s.kill9()
        s.start()
        listed = s.request("GET", "/v1/sandboxes/%s/contexts" % sid).json()["contexts"]
        self.assertEqual([(c["id"], c["state"], c["cwd"]) for c in listed],
                         [(ctx["id"], "running", "/workspace")])
        r = s.request("POST", "/v1/sandboxes/%s/code" % sid,
                      {"code": "echo $KEPT", "context_id": ctx["id"]})
        self.assertEqual(r.json()["stdout"], "yes\n", r)


if __name__ == "__main__":
    main()
