#!/usr/bin/env python3
"""The REST server's own figures (ADR 0007). Not run by CI.

Over real HTTP against the real `agent-sandbox serve` (started by the e2e harness on a free
loopback port with a temporary data directory), it prints p50 and p99 of:
  create -> first output   POST /v1/sandboxes, then POST …/exec/stream of `echo hi` until the
                           first stdout event arrives (a fresh connection each time)
  exec round trip          POST …/exec of `true` in a running sandbox (keep-alive connection)
  50 concurrent creates    wall time for 50 creates issued at once, and each one's latency
and, when given the backend-level figures of bench_foundation (--backend-create-ms,
--backend-exec-ms, its p50s), the ratio server/backend, which is the server's own overhead.

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_server.py \
        [--creates 30] [--execs 300] [--concurrent 50] [--backend-create-ms X] [--backend-exec-ms Y]
"""

import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from figures import pct  # noqa: E402
from harness import Server, missing_prerequisite  # noqa: E402


def row(name, values, unit="ms", backend=None):
    p50, p99 = pct(values, 50), pct(values, 99)
    line = "%-28s p50 %8.2f %s   p99 %8.2f %s   (n=%d)" % (name, p50, unit, p99, unit, len(values))
    if backend:
        line += "   backend p50 %.2f %s, server/backend %.2fx" % (backend, unit, p50 / backend)
    print(line, flush=True)


def create(server, **spec):
    r = server.request("POST", "/v1/sandboxes", spec)
    if r.status != 201:
        raise RuntimeError("create failed: %r" % r)
    return r.json()["id"]


def first_output_ms(server, sid):
    """POST …/exec/stream of `echo hi`; milliseconds until the first stdout event."""
    conn = server.conn(timeout=60)
    t0 = time.perf_counter()
    body = json.dumps({"command": "echo hi"})
    conn.request("POST", "/v1/sandboxes/%s/exec/stream" % sid, body=body,
                 headers={"content-type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError("stream answered %d: %r" % (resp.status, resp.read()[:200]))
    first = None
    for line in resp:
        ev = json.loads(line)
        if ev.get("type") == "stdout" and first is None:
            first = (time.perf_counter() - t0) * 1000.0
        if ev.get("type") in ("exit", "error"):
            break
    conn.close()
    return first


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--creates", type=int, default=30)
    ap.add_argument("--execs", type=int, default=300)
    ap.add_argument("--concurrent", type=int, default=50)
    ap.add_argument("--backend-create-ms", type=float)
    ap.add_argument("--backend-exec-ms", type=float)
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        print("bench_server: cannot run: " + reason)
        return 2

    server = Server(env={"AGENT_SANDBOX_MAX_SANDBOXES": str(max(args.concurrent, 10) + 5)})
    try:
        server.start()
        # Warm up: the first create pays for the workspace pool and page cache.
        server.request("DELETE", "/v1/sandboxes/" + create(server))

        # create -> first output, each sandbox destroyed right after.
        firsts = []
        for _ in range(args.creates):
            t0 = time.perf_counter()
            sid = create(server, memory_mb=256)
            create_ms = (time.perf_counter() - t0) * 1000.0
            firsts.append(create_ms + first_output_ms(server, sid))
            server.request("DELETE", "/v1/sandboxes/" + sid)
        row("create -> first output", firsts, backend=args.backend_create_ms)

        # exec round trip of `true` on one keep-alive connection.
        sid = create(server)
        conn = server.conn()
        body = json.dumps({"argv": ["true"]})
        rtts = []
        for _ in range(args.execs):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/sandboxes/%s/exec" % sid, body=body,
                         headers={"content-type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200 or json.loads(data)["exit_code"] != 0:
                raise RuntimeError("exec failed: %d %r" % (resp.status, data[:200]))
            rtts.append((time.perf_counter() - t0) * 1000.0)
        conn.close()
        server.request("DELETE", "/v1/sandboxes/" + sid)
        row("exec round trip (true)", rtts, backend=args.backend_exec_ms)

        # N concurrent creates.
        lat, ids, errors = [], [], []
        lock = threading.Lock()

        def one():
            t0 = time.perf_counter()
            try:
                sid = create(server, memory_mb=128)
                with lock:
                    ids.append(sid)
                    lat.append((time.perf_counter() - t0) * 1000.0)
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(str(e))

        threads = [threading.Thread(target=one) for _ in range(args.concurrent)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = (time.perf_counter() - t0) * 1000.0
        print("%d concurrent creates: %d ok, %d failed, wall %.0f ms" %
              (args.concurrent, len(ids), len(errors), wall), flush=True)
        if lat:
            row("  each create (concurrent)", lat)
        for e in errors[:3]:
            print("  error: " + e)
        for sid in ids:
            server.request("DELETE", "/v1/sandboxes/" + sid)
        return 0 if not errors else 1
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main())
