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

Then the files-only pause (`{"memory": false}`) of a sandbox whose workspace holds --fill-mib
MiB of random bytes and runs 20 processes:
  files-only pause          the HTTP call until the processes ended, the workspace was kept
                            and the runtime destroyed
  files-only resume + exec  the resume (the runtime made again with that workspace) and `true`
beside the yardstick of a create of the same template and workspace size to its first exec.

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_pause.py [--runs 30] [--fill-mib 100] \
        [--pool xfs]   # the server's reflink XFS pool: kept workspaces are reflinks
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
    ap.add_argument("--fill-mib", type=int, default=100)
    ap.add_argument("--pool", default="", help="AGENT_SANDBOX_WORKSPACE_POOL (default: none)")
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        sys.exit("cannot run: " + reason)
    server = Server({"AGENT_SANDBOX_WORKSPACE_POOL": args.pool} if args.pool else {})
    server.start(timeout=120)
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
        server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        files_only(server, args.runs, args.fill_mib)
    finally:
        server.close()


def files_only(server, runs, fill_mib):
    """The files-only pause and its resume beside a create (see the module's doc)."""
    made = []
    try:
        sid = server.create(workspace_mb=1024, timeout_seconds=3600)["id"]
        made.append(sid)
        r = server.run(sid, "head -c %d /dev/urandom > data.bin" % (fill_mib << 20), timeout=600)
        assert r["exit_code"] == 0, r
        pause, resume, create = [], [], []
        for _ in range(runs):
            for _ in range(20):
                server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                               {"command": "sleep 100000"})
            t0 = time.perf_counter()
            r = server.request("POST", "/v1/sandboxes/%s/pause" % sid, {"memory": False})
            pause.append((time.perf_counter() - t0) * 1000)
            assert r.json()["paused_memory"] is False, r
            t0 = time.perf_counter()
            server.request("POST", "/v1/sandboxes/%s/resume" % sid)
            assert server.run(sid, "true")["exit_code"] == 0
            resume.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            other = server.create(workspace_mb=1024)["id"]
            made.append(other)
            assert server.run(other, "true")["exit_code"] == 0
            create.append((time.perf_counter() - t0) * 1000)
            server.request("DELETE", "/v1/sandboxes/" + made.pop(), check=False)
        print("files only: a %d MiB workspace, 20 processes, %d runs" % (fill_mib, runs))
        row("files-only pause", pause, create, "create + exec", 24, 20)
        row("files-only resume + exec", resume, create, "create + exec", 24, 20)
    finally:
        for s in made:
            server.request("DELETE", "/v1/sandboxes/" + s, check=False)


if __name__ == "__main__":
    main()
