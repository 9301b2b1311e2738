#!/usr/bin/env python3
"""Bursts of creates, as RL and eval harnesses send them: 100 concurrent create + exec + delete
from one client with no failure while the server keeps answering /healthz, and a burst past
the server's capacity answered by clean 429s with their reason and nothing half-made. The
figures (wall, p50, p99, /healthz's worst) are printed for the record; bench/run.sh measures
wider bursts beside their bubblewrap yardstick.
"""
import concurrent.futures
import threading
import time

from harness import ServerTestCase, main, sandbox_leftovers

WIDTH = 100


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


class HealthProbe:
    """Polls /healthz every 50 ms on its own connection while a burst runs."""

    def __init__(self, server):
        self.server, self.worst, self.failures = server, 0.0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            t0 = time.time()
            try:
                status = self.server.request("GET", "/healthz", timeout=10).status
                if status != 200:
                    self.failures.append(status)
            except OSError as e:
                self.failures.append(repr(e))
            self.worst = max(self.worst, time.time() - t0)
            self._stop.wait(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(15)


class BurstTest(ServerTestCase):
    # One client opens WIDTH connections at once: the per-address cap (a guard against one
    # client taking every connection) is lifted, as the 500-wide goal says to.
    SERVER_ENV = {"AGENT_SANDBOX_MAX_CONNECTIONS_PER_IP": "0",
                  "AGENT_SANDBOX_MAX_SANDBOXES": str(WIDTH + 10)}

    def test_100_concurrent_creates_each_run_a_command_with_no_failure(self):
        s = self.server

        def one(i):
            t0 = time.time()
            r = s.request("POST", "/v1/sandboxes", {"template": "base"}, timeout=180)
            if r.status != 201:
                return i, None, "create %d: %s" % (r.status, r.body[:200]), 0
            sid = r.json()["id"]
            e = s.exec(sid, {"command": "echo hi-%d" % i}, timeout=180)
            took = time.time() - t0
            if e.status != 200 or e.json()["stdout"] != "hi-%d\n" % i:
                return i, sid, "exec %d: %s" % (e.status, e.body[:200]), took
            return i, sid, None, took

        t0 = time.time()
        with HealthProbe(s) as probe:
            with concurrent.futures.ThreadPoolExecutor(WIDTH) as pool:
                results = list(pool.map(one, range(WIDTH)))
        wall = time.time() - t0
        made = [sid for _, sid, _, _ in results if sid]
        self._created.extend(made)
        failures = [err for _, _, err, _ in results if err]
        took = [t for _, _, err, t in results if not err]
        print("\n%d-wide create + exec: wall %.2f s, p50 %.0f ms, p99 %.0f ms; /healthz worst "
              "%.0f ms" % (WIDTH, wall, 1000 * percentile(took, 50), 1000 * percentile(took, 99),
                           1000 * probe.worst))
        self.assertEqual(failures, [])
        self.assertEqual(len(made), WIDTH)
        self.assertEqual(probe.failures, [])
        # Loose on purpose (CI's 2 cores also run the burst): the server never stops answering.
        self.assertLess(probe.worst, 5.0)
        listed = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual(sorted(x["id"] for x in listed), sorted(made))
        self.assertTrue(all(x["status"] == "running" for x in listed), listed)

        # Deletes in a burst too: every one goes, with nothing left on the host.
        with concurrent.futures.ThreadPoolExecutor(WIDTH) as pool:
            codes = list(pool.map(
                lambda sid: s.request("DELETE", "/v1/sandboxes/" + sid, timeout=180).status,
                made))
        self.assertEqual(codes, [204] * WIDTH)
        self._created.clear()
        left = [x for sid in made for x in sandbox_leftovers(s, sid)]
        self.assertEqual(left, [])


class BurstPastCapacityTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_CONNECTIONS_PER_IP": "0",
                  "AGENT_SANDBOX_MAX_SANDBOXES": "10"}

    def test_a_burst_past_capacity_gets_clean_429s_and_nothing_half_made(self):
        s = self.server
        with concurrent.futures.ThreadPoolExecutor(40) as pool:
            answers = list(pool.map(
                lambda _: s.request("POST", "/v1/sandboxes", {"template": "base"}, timeout=180),
                range(40)))
        made = [r.json()["id"] for r in answers if r.status == 201]
        self._created.extend(made)
        refused = [r for r in answers if r.status != 201]
        self.assertEqual(len(made), 10, [r.status for r in answers])
        self.assertEqual(len(refused), 30)
        for r in refused:
            self.assertError(r, 429, "limit_exceeded")
            self.assertIn("10", r.json()["error"]["message"])
        # Only the ten exist, each running and usable; no refused create left a record.
        listed = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual(sorted(x["id"] for x in listed), sorted(made))
        for sid in made[:3]:
            self.assertEqual(s.run(sid, "echo ok")["stdout"], "ok\n")
        # The capacity comes back as sandboxes go.
        self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + made[0]).status, 204)
        self._created.remove(made[0])
        self.assertEqual(sandbox_leftovers(s, made[0]), [])
        self.assertEqual(s.request("POST", "/v1/sandboxes", {"template": "base"}).status, 201)
        again = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self._created.extend(x["id"] for x in again if x["id"] not in made)


if __name__ == "__main__":
    main()
