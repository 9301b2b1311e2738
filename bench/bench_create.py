#!/usr/bin/env python3
"""The create path beside bubblewrap, in one run: the table of "Performance, part 1". Not CI.

Rows (each ours beside its yardstick measured in the same run, interleaved, on the same host):
  run, whole process     `agent-sandbox run -- echo hi` from exec to exit, beside the same
                         command under `bwrap` with comparable isolation (BWRAP below)
  create -> first output POST /v1/sandboxes, then POST .../exec of `echo hi` until its answer,
                         beside the same bwrap
  exec round trip        POST .../exec of `true` on a keep-alive connection, beside a host
                         posix_spawn + wait of /bin/true from this process
  exec after 1 s idle    the same, each after a second of quiet (--idle-execs of them)
  pooled create -> first the same from a warm pool (PUT /v1/pools/base, ADR 0027): a create
    output               of the pool's shape takes a ready sandbox; beside the exec round trip
                         of this run (goal: a pooled create costs no more than 1.5 execs)
  N concurrent           N creates + execs of `echo hi` issued at once (N from --bursts): the
                         burst's wall time and each one's latency, beside N bwraps at once;
                         and /healthz polled every 20 ms meanwhile (its worst answer)
Each row prints p50 and p99 of ours and of the yardstick, the ratio of the p50s (the bursts:
of the wall times), the goal and a one-line verdict; the first line says the machine's load.
Every sandbox made is destroyed on every exit path (the harness's server is closed last).

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_create.py \\
        [--runs 30] [--execs 300] [--idle-execs 10] [--bursts 200,500]
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from figures import pct  # noqa: E402
from harness import BIN, Server, missing_prerequisite  # noqa: E402

# Goals of the table (ours / yardstick), "Performance, part 1".
GOAL = {"run": 1.5, "create": 1.5, "exec": 1.3, "burst": 1.5, "pooled": 1.5}


def bwrap_argv(rootfs, command):
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", rootfs,
            "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/workspace",
            "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL"] + command


def timed(argv):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ms = (time.perf_counter() - t0) * 1000.0
    if r.returncode != 0 or r.stdout != b"hi\n":
        raise RuntimeError("%s failed: %d %r %r" % (argv[0], r.returncode, r.stdout, r.stderr))
    return ms


def spawn_true_ms():
    t0 = time.perf_counter()
    pid = os.posix_spawn("/bin/true", ["/bin/true"], {})
    os.waitpid(pid, 0)
    return (time.perf_counter() - t0) * 1000.0


def row(name, ours, yard, yard_name, goal, ratio=None):
    o50, o99, y50, y99 = pct(ours, 50), pct(ours, 99), pct(yard, 50), pct(yard, 99)
    ratio = ratio if ratio is not None else o50 / y50
    verdict = "meets the goal" if ratio <= goal else "%.1fx over the goal" % (ratio / goal)
    print("%-24s p50 %8.1f ms p99 %8.1f ms | %-22s p50 %7.1f ms p99 %7.1f ms | %5.2fx "
          "(goal <= %.1fx: %s)" % (name, o50, o99, yard_name, y50, y99, ratio, goal, verdict),
          flush=True)


def exec_json(server, sid, command, conn=None):
    body = json.dumps({"command": command})
    c = conn or server.conn(timeout=300)
    c.request("POST", "/v1/sandboxes/%s/exec" % sid, body=body,
              headers={"content-type": "application/json"})
    resp = c.getresponse()
    data = resp.read()
    if conn is None:
        c.close()
    if resp.status != 200:
        raise RuntimeError("exec answered %d: %r" % (resp.status, data[:200]))
    return json.loads(data)


def create_and_first_output(server, made, body=None):
    """Milliseconds from POST /v1/sandboxes to the answer of `echo hi` in it."""
    t0 = time.perf_counter()
    r = server.request("POST", "/v1/sandboxes", {"memory_mb": 128} if body is None else body,
                       timeout=300, check=False)
    if r.status != 201:
        raise RuntimeError("create answered %d: %r" % (r.status, r.body[:200]))
    sid = r.json()["id"]
    made.append(sid)
    out = exec_json(server, sid, "echo hi")
    ms = (time.perf_counter() - t0) * 1000.0
    if out.get("stdout") != "hi\n":
        raise RuntimeError("echo answered %r" % out)
    return ms


def burst(n, one):
    """Runs one(i) n times at once; returns (wall ms, latencies ms, failures)."""
    lat, failures = [], []
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as ex:
        for f in [ex.submit(one, i) for i in range(n)]:
            try:
                lat.append(f.result())
            except Exception as e:  # a failure is a figure too: counted and shown
                failures.append(repr(e)[:160])
    return (time.perf_counter() - t0) * 1000.0, lat, failures


class HealthProbe:
    """GET /healthz every 20 ms on a connection of its own while a burst runs: the server must
    stay responsive (goal: the worst answer within 50 ms, "Performance, part 1")."""

    def __init__(self, server):
        import threading
        self.server, self.ms, self.errors = server, [], 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        conn = self.server.conn(timeout=30)
        while not self.stop.is_set():
            t0 = time.perf_counter()
            try:
                conn.request("GET", "/healthz")
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    self.errors += 1
            except Exception:  # counted; a new connection for the next probe
                self.errors += 1
                conn = self.server.conn(timeout=30)
            self.ms.append((time.perf_counter() - t0) * 1000.0)
            self.stop.wait(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def destroy_all(server, made):
    def one(sid):
        server.request("DELETE", "/v1/sandboxes/" + sid, timeout=300, check=False)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        list(ex.map(one, list(made)))
    made.clear()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--execs", type=int, default=300)
    ap.add_argument("--idle-execs", type=int, default=10)
    ap.add_argument("--bursts", default="200,500")
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        sys.exit("bench_create: cannot run: " + reason)
    bursts = [int(x) for x in args.bursts.split(",") if x]
    rootfs = "/var/lib/agent-sandbox/templates/base/rootfs"
    if subprocess.run(["bwrap", "--version"], capture_output=True).returncode != 0:
        sys.exit("bench_create: bwrap is missing (apt-get install bubblewrap)")
    print("load average %s; %d CPUs" % (" ".join("%.2f" % x for x in os.getloadavg()),
                                        os.cpu_count()), flush=True)

    # run, whole process, interleaved with bwrap.
    ours, yard = [], []
    timed([BIN, "run", "--", "echo", "hi"])  # warm the page cache
    for _ in range(args.runs):
        ours.append(timed([BIN, "run", "--", "echo", "hi"]))
        yard.append(timed(bwrap_argv(rootfs, ["echo", "hi"])))
    row("run, whole process", ours, yard, "bwrap echo hi", GOAL["run"])

    most = max(bursts + [10])
    server = Server(env={"AGENT_SANDBOX_MAX_SANDBOXES": str(most + 10),
                         "AGENT_SANDBOX_MAX_CONNECTIONS": str(most * 2 + 1000),
                         "AGENT_SANDBOX_MAX_CONNECTIONS_PER_IP": str(most * 2 + 100)})
    made = []
    try:
        server.start(timeout=120)
        create_and_first_output(server, made)  # warm up the pool and the page cache
        destroy_all(server, made)
        ours, yard = [], []
        for _ in range(args.runs):
            ours.append(create_and_first_output(server, made))
            destroy_all(server, made)
            yard.append(timed(bwrap_argv(rootfs, ["echo", "hi"])))
        row("create -> first output", ours, yard, "bwrap echo hi", GOAL["create"])

        r = server.request("POST", "/v1/sandboxes", {})
        sid = r.json()["id"]
        made.append(sid)
        conn = server.conn()
        ours, yard = [], []
        for _ in range(args.execs):
            t0 = time.perf_counter()
            exec_json(server, sid, "true", conn)
            ours.append((time.perf_counter() - t0) * 1000.0)
            yard.append(spawn_true_ms())
        row("exec round trip (true)", ours, yard, "host spawn /bin/true", GOAL["exec"])
        exec_rtt = ours
        # The same after a second of quiet, as an agent execs after thinking: on cgroup v1 the
        # move into the work cgroup then waits for an RCU grace period (sandboxd/spare_child.h).
        # Beside it, alternating, a second server without the spare (--exec-spare=false).
        plain = Server(env={"AGENT_SANDBOX_EXEC_SPARE": "false"})
        try:
            plain.start(timeout=120)
            plain_sid = plain.request("POST", "/v1/sandboxes", {}).json()["id"]
            plain_conn = plain.conn()
            ours, yard, unspared = [], [], []
            for _ in range(args.idle_execs):
                time.sleep(1.0)
                t0 = time.perf_counter()
                exec_json(server, sid, "true", conn)
                ours.append((time.perf_counter() - t0) * 1000.0)
                yard.append(spawn_true_ms())
                time.sleep(1.0)
                t0 = time.perf_counter()
                exec_json(plain, plain_sid, "true", plain_conn)
                unspared.append((time.perf_counter() - t0) * 1000.0)
            plain_conn.close()
        finally:
            plain.close()  # destroys its sandbox
        conn.close()
        destroy_all(server, made)
        row("exec after 1 s idle", ours, yard, "host spawn /bin/true", GOAL["exec"])
        row("  beside no spare", ours, unspared, "--exec-spare=false", 1.0)

        # The same create from a warm pool of 2 (the default shape: {}), waiting for the pool to
        # be full before each one (not timed), then the pool is ended.
        server.request("PUT", "/v1/pools/base", {"size": 2})
        ours = []
        try:
            for _ in range(args.runs):
                deadline = time.time() + 30
                while time.time() < deadline:
                    pools = server.request("GET", "/v1/pools").json()["pools"]
                    # A full pool: its refill is not running beside the timed create.
                    if any(p["template"] == "base" and p["ready"] == 2 for p in pools):
                        break
                    time.sleep(0.02)
                ours.append(create_and_first_output(server, made, {}))
                destroy_all(server, made)
            pools = server.request("GET", "/v1/pools").json()["pools"]
        finally:
            server.request("PUT", "/v1/pools/base", {"size": 0})
        row("pooled create -> output", ours, exec_rtt, "exec round trip", GOAL["pooled"])
        print("%-24s %s" % ("", "; ".join("%s: %d hits, %d misses" % (p["template"], p["hits"],
                                                                      p["misses"])
                                          for p in pools)), flush=True)

        for n in bursts:
            with HealthProbe(server) as health:
                wall, lat, failures = burst(n, lambda i: create_and_first_output(server, made))
            destroy_all(server, made)
            ywall, ylat, yfail = burst(n, lambda i: timed(bwrap_argv(rootfs, ["echo", "hi"])))
            row("%d concurrent" % n, lat or [0], ylat or [0], "%d bwraps at once" % n,
                GOAL["burst"], ratio=wall / ywall)
            print("%-24s wall %.0f ms, %d ok, %d failed%s | bwraps: wall %.0f ms, %d failed" %
                  ("", wall, len(lat), len(failures),
                   (" (first: %s)" % failures[0]) if failures else "", ywall, len(yfail)),
                  flush=True)
            worst = max(health.ms) if health.ms else 0.0
            print("%-24s /healthz during it: %d probes, p50 %.1f ms, worst %.1f ms, %d failed "
                  "(goal: worst <= 50 ms: %s)" %
                  ("", len(health.ms), pct(health.ms, 50) if health.ms else 0.0, worst,
                   health.errors, "met" if worst <= 50 and not health.errors else "NOT met"),
                  flush=True)
    finally:
        try:
            destroy_all(server, made)
        finally:
            server.close()


if __name__ == "__main__":
    main()
