#!/usr/bin/env python3
"""Fork of a running sandbox (POST /v1/sandboxes/{id}/fork) over the real server. Not run by CI.

A parent with a 1 GiB workspace holding --fill-mib MiB of random bytes is forked x1, x10 and
x100; for each, the time to the fork's answer and to every child's first output (an exec of
`echo ok` in each child, 8 at a time), beside the yardstick of the same run: one create of the
same template and workspace size to its first output. Once per workspace pool: "none" (images
on the data dir's file system; clones are sparse copies on ext4) and "xfs" (the server's reflink
XFS loop file, so clones are reflinks). Every sandbox is destroyed on every exit path.

    ASB_BIN=build/bin/agent-sandbox python3 bench/bench_fork.py [--counts 1,10,100] \
        [--pools none,xfs] [--fill-mib 100]
"""

import argparse
import concurrent.futures
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import Server, missing_prerequisite  # noqa: E402


def ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def first_output(server, sid):
    r = server.run(sid, "echo ok", timeout=120)
    assert r["stdout"] == "ok\n", r


def one_pool(pool, counts, fill_mib):
    env = {"AGENT_SANDBOX_MAX_SANDBOXES": str(max(counts) + 10),
           "AGENT_SANDBOX_MAX_FORK_COUNT": str(max(counts))}
    if pool != "none":
        env["AGENT_SANDBOX_WORKSPACE_POOL"] = pool
    server = Server(env).start(timeout=120)
    made = []
    try:
        t0 = time.perf_counter()
        ref = server.create(workspace_mb=1024)
        made.append(ref["id"])
        first_output(server, ref["id"])
        create_ms = ms(t0)
        server.request("DELETE", "/v1/sandboxes/" + made.pop(), check=False)
        parent = server.create(workspace_mb=1024, timeout_seconds=3600)["id"]
        made.append(parent)
        r = server.run(parent, "head -c %d /dev/urandom > /workspace/data.bin" % (fill_mib << 20),
                       timeout=600)
        assert r["exit_code"] == 0, r
        print("%-5s %-8s %12s %14s %16s" % ("pool", "fork", "answer ms", "all output ms",
                                             "per child ms"))
        print("%-5s %-8s %12s %14.1f %16s   (yardstick: one create to its first output)" %
              (pool, "create", "-", create_ms, "-"))
        for n in counts:
            t0 = time.perf_counter()
            r = server.request("POST", "/v1/sandboxes/%s/fork" % parent, {"count": n},
                               timeout=900)
            answer_ms = ms(t0)
            assert r.status == 201, r
            kids = [f["sandbox"]["id"] for f in r.json()["forks"] if "sandbox" in f]
            made.extend(kids)
            errors = [f["error"] for f in r.json()["forks"] if "error" in f]
            with concurrent.futures.ThreadPoolExecutor(8) as pool_exec:
                list(pool_exec.map(lambda sid: first_output(server, sid), kids))
            all_ms = ms(t0)
            print("%-5s %-8s %12.1f %14.1f %16.1f%s" %
                  (pool, "x%d" % n, answer_ms, all_ms, all_ms / max(1, len(kids)),
                   "   %d not made: %s" % (len(errors), errors[0]) if errors else ""))
            for sid in kids:
                server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
                made.remove(sid)
    finally:
        for sid in made:
            server.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="1,10,100")
    ap.add_argument("--pools", default="none,xfs")
    ap.add_argument("--fill-mib", type=int, default=100)
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        print("SKIP: " + reason)
        return 77
    counts = [int(c) for c in args.counts.split(",")]
    print("fork of a running sandbox: 1 GiB workspace holding %d MiB; %d CPUs" %
          (args.fill_mib, os.cpu_count()))
    for pool in args.pools.split(","):
        one_pool(pool, counts, args.fill_mib)
    return 0


if __name__ == "__main__":
    sys.exit(main())
