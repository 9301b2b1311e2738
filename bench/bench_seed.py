#!/usr/bin/env python3
"""Creates of a template with /workspace content (the workspace seed,
isolation/ns/workspace_seed.h) beside creates of the same base template without it, over the
real server. Not run by CI.

A Dockerfile `FROM base` copies N MiB (default 1 and 50) of files under /workspace/app; the
first create of it makes the seed image (timed on its own), every later one clones it. The
yardstick is a create from `base` in the same run (the workspace pool's pre-made empty image),
and the fork of a snapshot of the same content (the clone path the seed reuses).

    ASB_BIN=build/bin/agent-sandbox python3 bench/bench_seed.py [--mib 1,50] [--n 10]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import BIN, TEMPLATES, Server, missing_prerequisite  # noqa: E402


def ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def timed_create(server, template):
    t0 = time.perf_counter()
    sb = server.create(template=template)
    return ms(t0), sb["id"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", default="1,50")
    ap.add_argument("--n", type=int, default=10)
    args = ap.parse_args()
    why = missing_prerequisite()
    if why:
        print("skipped:", why)
        return 0
    data = tempfile.mkdtemp(prefix="asb-bench-seed-", dir="/var/tmp")
    server = None
    made = []
    try:
        templates = os.path.join(data, "templates")
        os.makedirs(templates)
        os.symlink(os.path.join(TEMPLATES, "base"), os.path.join(templates, "base"))
        ctx = os.path.join(data, "ctx")
        os.makedirs(os.path.join(ctx, "app"))
        sizes = [int(x) for x in args.mib.split(",")]
        for mib in sizes:
            app = os.path.join(ctx, "app")
            shutil.rmtree(app)
            os.makedirs(app)
            for i in range(mib * 4):  # 256 KiB files
                with open(os.path.join(app, "f%04d" % i), "wb") as f:
                    f.write(os.urandom(256 * 1024))
            with open(os.path.join(ctx, "Dockerfile"), "w") as f:
                f.write("FROM base\nCOPY app /workspace/app\nWORKDIR /workspace/app\n")
            r = subprocess.run([BIN, "template", "build", "--dockerfile",
                                os.path.join(ctx, "Dockerfile"), "--name", "seed%d" % mib,
                                "--data-dir", data], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=600)
            assert r.returncode == 0, r.stderr
        server = Server(data_dir=data).start()
        print("%-22s %10s %10s %10s" % ("create of", "first ms", "median ms", "p90 ms"))

        def series(template):
            first, sid = timed_create(server, template)
            made.append(sid)
            times = []
            for _ in range(args.n):
                t, sid = timed_create(server, template)
                made.append(sid)
                times.append(t)
            for sid in made:
                server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
            made.clear()
            times.sort()
            return first, statistics.median(times), times[int(len(times) * 0.9) - 1]

        print("%-22s %10.1f %10.1f %10.1f" % (("base (yardstick)",) + series("base")))
        for mib in sizes:
            print("%-22s %10.1f %10.1f %10.1f" % (("seed, %d MiB" % mib,) + series("seed%d" % mib)))
            # The clone path the seed reuses: a fork of a snapshot of the same content.
            sid = server.create(template="seed%d" % mib)["id"]
            made.append(sid)
            snap = server.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {}).json()
            forks = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                r = server.request("POST", "/v1/snapshots/%s/fork" % snap["id"], {})
                forks.append(ms(t0))
                made.append(r.json()["id"])
            for s in made:
                server.request("DELETE", "/v1/sandboxes/" + s, check=False)
            made.clear()
            server.request("DELETE", "/v1/snapshots/" + snap["id"], check=False)
            forks.sort()
            print("%-22s %10s %10.1f %10.1f" % ("fork, %d MiB" % mib, "-",
                                               statistics.median(forks),
                                               forks[int(len(forks) * 0.9) - 1]))
    finally:
        if server is not None:
            for sid in made:
                server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
            server.close()
        shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
