#!/usr/bin/env python3
"""Pause and resume figures (POST /v1/sandboxes/{id}/pause and /resume; ADR 0024). Not run by CI.

Over real HTTP against the real `agent-sandbox serve` (the e2e harness's server), in one
sandbox of the base template running 20 background processes, it prints p50 and p99 of:
  pause              the HTTP call until the whole tree is frozen (the answer says paused)
  resume             the HTTP call until the tree runs again
  resume + exec      a resume and then `true` run to completion (the first thing a client does)
each beside its yardstick from the same run and the same sandbox: SIGSTOP (and SIGCONT) sent by
this process to every process of the sandbox, which is what an operator could do on the host
without our API (it stops the processes but not atomically, and a forking tree can slip past
it), and for the last row the exec alone. The ratio is ours p50 / yardstick p50.

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_pause.py [--runs 30]
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from figures import row  # noqa: E402
from harness import Server, missing_prerequisite, sandbox_pids  # noqa: E402


def signal_all(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        sys.exit("cannot run: " + reason)
    server = Server()
    server.start()
    try:
        sid = server.create()["id"]
        for _ in range(20):
            server.request("POST", "/v1/sandboxes/%s/processes" % sid, {"command": "sleep 100000"})
        pids = sandbox_pids(sid)
        pause, resume, both = [], [], []
        stop, cont, exec_only = [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = server.request("POST", "/v1/sandboxes/%s/pause" % sid)
            pause.append((time.perf_counter() - t0) * 1000)
            assert r.json()["status"] == "paused", r
            t0 = time.perf_counter()
            server.request("POST", "/v1/sandboxes/%s/resume" % sid)
            resume.append((time.perf_counter() - t0) * 1000)
            server.request("POST", "/v1/sandboxes/%s/pause" % sid)
            t0 = time.perf_counter()
            server.request("POST", "/v1/sandboxes/%s/resume" % sid)
            assert server.run(sid, "true")["exit_code"] == 0
            both.append((time.perf_counter() - t0) * 1000)

            t0 = time.perf_counter()
            signal_all(pids, signal.SIGSTOP)
            stop.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            signal_all(pids, signal.SIGCONT)
            cont.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            assert server.run(sid, "true")["exit_code"] == 0
            exec_only.append((time.perf_counter() - t0) * 1000)
        print("%d processes in the sandbox, %d runs" % (len(pids), args.runs))
        row("pause", pause, stop, "SIGSTOP every pid", 16, 20)
        row("resume", resume, cont, "SIGCONT every pid", 16, 20)
        row("resume + exec", both, exec_only, "exec alone", 16, 20)
    finally:
        server.close()


if __name__ == "__main__":
    main()
