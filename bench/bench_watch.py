#!/usr/bin/env python3
"""File watch figures (GET /v1/sandboxes/{id}/files/watch; sandboxd's file.watch). Not run by CI.

Over real HTTP against the real `agent-sandbox serve` (the e2e harness's server), in one
sandbox of the base template, it prints p50 and p99 of:
  change seen        PUT …/files of a small file until its create line arrives on an open watch
  5,000 creates      one command making 5,000 files until the watch has delivered all of them
each beside its yardstick from the same run and the same sandbox: for the first, polling
GET …/files/stat every 20 ms until the file exists (what a client without a watch does); for
the second, the same command without a watch (its own cost). The ratio is ours p50 / yardstick
p50.

    sudo ASB_BIN=build/bin/agent-sandbox python3 bench/bench_watch.py [--runs 30]
"""

import argparse
import json
import os
import sys
import threading
import time
from urllib.parse import quote

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from figures import row  # noqa: E402
from harness import Server, missing_prerequisite  # noqa: E402


class Watch:
    """An open watch whose lines a thread reads; `seen` maps path -> arrival time."""

    def __init__(self, server, sid, path, **query):
        q = "&".join("%s=%s" % kv for kv in query.items())
        self.conn = server.conn(timeout=600)
        self.conn.request("GET", "/v1/sandboxes/%s/files/watch?path=%s&%s" % (sid, quote(path), q),
                          headers=server._auth({}))
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.read()
        json.loads(self.resp.readline())  # start: armed
        self.seen = {}
        self.creates = 0
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.resp:
                ev = json.loads(line)
                with self.cond:
                    if ev["type"] == "create":
                        self.creates += 1
                        self.seen.setdefault(ev["path"], time.perf_counter())
                    self.cond.notify_all()
        except (OSError, ValueError, AttributeError):
            pass  # close() of the connection while a line was being read

    def wait(self, pred, timeout=60):
        with self.cond:
            if not self.cond.wait_for(pred, timeout):
                raise RuntimeError("the watch did not deliver in %d s" % timeout)

    def close(self):
        self.conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--bulk-runs", type=int, default=5)
    args = ap.parse_args()
    reason = missing_prerequisite()
    if reason:
        sys.exit("cannot run: " + reason)
    server = Server()
    server.start()
    try:
        sid = server.create()["id"]
        server.run(sid, "mkdir -p b")
        w = Watch(server, sid, "b", recursive="true", max_queue="65536")
        ours, yard = [], []
        for i in range(args.runs):
            path = "/workspace/b/w%d" % i
            t0 = time.perf_counter()
            assert server.put_file(sid, path, b"x").status == 200
            w.wait(lambda: path in w.seen)
            ours.append((w.seen[path] - t0) * 1000)
            # The yardstick: the write, then a poll of files/stat every 20 ms until it answers.
            path = "/workspace/p%d" % i
            t0 = time.perf_counter()
            assert server.put_file(sid, path, b"x").status == 200
            while server.request("GET", "/v1/sandboxes/%s/files/stat?path=%s" %
                                 (sid, quote(path)), check=False).status != 200:
                time.sleep(0.02)
            yard.append((time.perf_counter() - t0) * 1000)
        row("change seen", ours, yard, "poll files/stat 20 ms", 22, 24)

        ours, yard = [], []
        make = "mkdir -p %s && cd %s && seq 5000 | xargs touch"
        for i in range(args.bulk_runs):
            before = w.creates
            t0 = time.perf_counter()
            assert server.run(sid, make % ("b/n%d" % i, "b/n%d" % i))["exit_code"] == 0
            # the directory's own create and its 5,000 entries
            w.wait(lambda: w.creates >= before + 5001)
            ours.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            assert server.run(sid, make % ("q%d" % i, "q%d" % i))["exit_code"] == 0
            yard.append((time.perf_counter() - t0) * 1000)
        row("5,000 creates", ours, yard, "the command, unwatched", 22, 24)
        w.close()
    finally:
        server.close()


if __name__ == "__main__":
    main()
