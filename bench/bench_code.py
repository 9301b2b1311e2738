#!/usr/bin/env python3
"""The code interpreter's figures (ADR 0019). Not run by CI.

Over real HTTP against the real `agent-sandbox serve` (the e2e harness's server), in sandboxes
of the python and node templates, it prints p50 and p99 of:
  context start            POST …/contexts until the kernel answers (python, javascript, bash)
  execution round trip     POST …/code of a trivial expression in a warm context
  1 MiB of stdout          POST …/code printing 1 MiB (through the flow-controlled driver)
  matplotlib line chart    POST …/code drawing one figure (PNG + chart data)
each beside its yardstick from the same run and the same sandbox: a one-shot POST …/exec of the
same interpreter (`python3 -c`, `node -e`, `bash -c`), which is what run_code cost before
contexts (a fresh interpreter per call, state lost), and for the 1 MiB row the same print by a
one-shot exec. The ratio is ours p50 / yardstick p50.

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_code.py [--runs 30]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from figures import row  # noqa: E402
from harness import TEMPLATES, Server, missing_prerequisite  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def must(r, status=200):
    if r.status != status:
        raise RuntimeError("unexpected answer: %r" % r)
    return r.json() if r.body else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--starts", type=int, default=5)
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        sys.exit("cannot run: " + reason)
    for t in ("python", "node"):
        if not os.path.isdir(os.path.join(TEMPLATES, t, "rootfs")):
            sys.exit("template %s is not built" % t)
    server = Server()
    server.start()
    try:
        req = server.request
        langs = [("python", "python", "1 + 1", ["python3", "-c", "print(1 + 1)"]),
                 ("javascript", "node", "1 + 1", ["node", "-e", "console.log(1 + 1)"]),
                 ("bash", "python", "echo 2", ["bash", "-c", "echo 2"])]
        for lang, template, code, oneshot in langs:
            sid = must(req("POST", "/v1/sandboxes", {"template": template,
                                                     "timeout_seconds": 900}), 201)["id"]
            base = "/v1/sandboxes/" + sid
            starts, ctx = [], None
            for _ in range(args.starts):
                t = time.perf_counter()
                ctx = must(req("POST", base + "/contexts", {"language": lang}, timeout=120), 201)
                starts.append((time.perf_counter() - t) * 1000)
                if _ < args.starts - 1:
                    must(req("DELETE", base + "/contexts/" + ctx["id"]), 204)
            oneshots = [timed(lambda: must(req("POST", base + "/exec", {"argv": oneshot})))
                        for _ in range(args.runs)]
            row("%s context start" % lang, starts, oneshots, "one-shot exec")
            body = {"code": code, "context_id": ctx["id"]}
            runs = [timed(lambda: must(req("POST", base + "/code", body)))
                    for _ in range(args.runs)]
            row("%s execution round trip" % lang, runs, oneshots, "one-shot exec")
            if lang == "python":
                mib = {"code": "import sys; sys.stdout.write('x' * (1 << 20))",
                       "context_id": ctx["id"]}
                big = [timed(lambda: must(req("POST", base + "/code", mib)))
                       for _ in range(max(3, args.runs // 3))]
                ex = {"argv": ["python3", "-c", "import sys; sys.stdout.write('x' * (1 << 20))"],
                      "max_output_bytes": 1 << 20}
                big_y = [timed(lambda: must(req("POST", base + "/exec", ex)))
                         for _ in range(max(3, args.runs // 3))]
                row("python 1 MiB of stdout", big, big_y, "one-shot exec")
                plot = {"code": "import matplotlib.pyplot as plt\n"
                                "plt.plot([1, 2, 3], [2, 4, 8]); plt.title('t')",
                        "context_id": ctx["id"]}
                charts = [timed(lambda: must(req("POST", base + "/code", plot)))
                          for _ in range(max(3, args.runs // 3))]
                ex = {"argv": ["python3", "-c", "import matplotlib; matplotlib.use('Agg');"
                               "import matplotlib.pyplot as plt; plt.plot([1, 2, 3], [2, 4, 8]);"
                               "plt.savefig('/tmp/b.png')"]}
                charts_y = [timed(lambda: must(req("POST", base + "/exec", ex)))
                            for _ in range(max(3, args.runs // 3))]
                row("python matplotlib line chart", charts, charts_y, "one-shot savefig")
            must(req("DELETE", base), 204)
    finally:
        server.close()


if __name__ == "__main__":
    main()
