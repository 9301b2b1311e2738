"""Pause and resume over HTTP (ADR 0024): a paused sandbox's processes stop where they are and
go on after the resume; what needs it running answers 409 with the way on; its TTL stops and
the paused timeout applies; auto_pause pauses at the TTL instead of destroying; destroying a
paused sandbox leaves nothing. The restart of a server with a paused sandbox is tested in
src/core/manager_ns_test.cc."""

import os
import threading
import time
import unittest

from harness import ServerTestCase, main, parse_time, sandbox_leftovers, sandbox_pids


def ticks(text):
    return [int(x) for x in text.split()]


def cpu_seconds(sid):
    """CPU time (user + system) of every live process of the sandbox, as the host counts it."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in sandbox_pids(sid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def leftovers_after_a_while(server, sid):
    """What of sandbox `sid` is still on the host after up to 3 s (a destroy's last steps)."""
    for _ in range(30):
        left = sandbox_leftovers(server, sid)
        if not left:
            break
        time.sleep(0.1)
    return left


def longest_gap_s(values):
    return max((b - a for a, b in zip(values, values[1:])), default=0) / 1e9


class PauseTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_PAUSED_TIMEOUT_SECONDS": "3600"}

    def pause(self, sid, body=None):
        return self.server.request("POST", "/v1/sandboxes/%s/pause" % sid, body, check=False)

    def resume(self, sid, body=None):
        return self.server.request("POST", "/v1/sandboxes/%s/resume" % sid, body, check=False)

    def test_processes_stop_while_paused_and_go_on_after(self):
        s = self.create(timeout_seconds=120)
        sid = s["id"]
        self.assertIs(s["auto_pause"], False)
        self.assertIsNone(s["paused_at"])
        self.server.put_file(sid, "kept.txt", b"before the pause\n")
        r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid, {
            "command": "while :; do date +%s%N >> /workspace/ticks; sleep 0.02; done"})
        self.assertEqual(r.status, 201, r)
        time.sleep(0.3)

        before = time.time()
        p = self.pause(sid)
        self.assertEqual(p.status, 200, p)
        got = p.json()
        self.assertEqual(got["status"], "paused")
        self.assertAlmostEqual(parse_time(got["paused_at"]), before, delta=5)
        # The paused timeout replaces the TTL while paused.
        self.assertAlmostEqual(parse_time(got["expires_at"]), before + 3600, delta=10)
        listed = {x["id"]: x for x in self.server.request("GET", "/v1/sandboxes").json()[
            "sandboxes"]}
        self.assertEqual(listed[sid]["status"], "paused")

        # Everything that needs it running says how to go on; pause twice is a conflict.
        for r in (self.server.request("POST", "/v1/sandboxes/%s/exec" % sid,
                                      {"command": "true"}, check=False),
                  self.server.request("GET", "/v1/sandboxes/%s/files?path=kept.txt" % sid,
                                      check=False),
                  self.server.request("GET", "/v1/sandboxes/%s/processes" % sid, check=False)):
            self.assertError(r, 409, "conflict")
            self.assertIn("paused: resume it first", r.json()["error"]["message"])
        self.assertError(self.pause(sid), 409, "conflict")
        self.assertIn("already paused", self.pause(sid).json()["error"]["message"])
        self.assertError(self.server.request("POST", "/v1/sandboxes/%s/timeout" % sid,
                                             {"timeout_seconds": 60}, check=False),
                         409, "conflict")
        time.sleep(1.2)

        r = self.resume(sid, {"timeout_seconds": 300})
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual(got["status"], "running")
        self.assertIsNone(got["paused_at"])
        self.assertEqual(got["timeout_seconds"], 300)
        self.assertAlmostEqual(parse_time(got["expires_at"]), time.time() + 300, delta=10)
        self.assertError(self.resume(sid), 409, "conflict")
        time.sleep(0.3)
        t = ticks(self.server.get_file(sid, "ticks").body.decode())
        self.assertGreaterEqual(len(t), 10)
        self.assertGreaterEqual(longest_gap_s(t), 1.1, "the loop ran while paused")
        self.assertGreater(t[-1] / 1e9, time.time() - 1, "the loop did not go on after resume")
        self.assertEqual(self.server.get_file(sid, "kept.txt").body, b"before the pause\n")
        self.assertEqual(self.server.run(sid, "echo alive")["stdout"], "alive\n")

    def test_a_spinning_forking_sandbox_is_frozen_whole(self):
        # Hostile code does not stop for a pause: two CPU spinners and a loop that forks as
        # fast as it can (bounded by the pids limit) are all frozen, and run again after.
        s = self.create(pids_limit=64)
        sid = s["id"]
        for command in ("while :; do :; done", "while :; do :; done",
                        "while :; do (true &) 2>/dev/null; done"):
            r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                                    {"command": command})
            self.assertEqual(r.status, 201, r)
        time.sleep(0.5)
        p = self.pause(sid)
        self.assertEqual(p.status, 200, p)
        time.sleep(0.2)
        a = cpu_seconds(sid)
        time.sleep(1.0)
        frozen = cpu_seconds(sid) - a
        self.assertLess(frozen, 0.05, "the sandbox used %.2f s of CPU while paused" % frozen)
        self.assertEqual(self.resume(sid).status, 200)
        a = cpu_seconds(sid)
        time.sleep(1.0)
        self.assertGreater(cpu_seconds(sid) - a, 0.3, "its processes did not run again")
        self.assertEqual(self.server.run(sid, "echo alive")["stdout"], "alive\n")

    def test_a_streamed_command_across_a_pause_finishes_with_all_its_output(self):
        s = self.create()
        sid = s["id"]
        out = {}

        def run():
            out["r"] = self.server.stream(sid, {"command": "echo before; sleep 0.5; echo after"})

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.2)
        self.assertEqual(self.pause(sid).status, 200)
        time.sleep(1.0)
        self.assertTrue(t.is_alive(), "the command finished while its sandbox was paused")
        self.assertEqual(self.resume(sid).status, 200)
        t.join(30)
        self.assertFalse(t.is_alive())
        _, status, events = out["r"]
        self.assertEqual(status, 200)
        text = "".join(e.get("data", "") for e in events if e["type"] == "stdout")
        self.assertEqual(text, "before\nafter\n")
        self.assertEqual(events[-1]["type"], "exit")

    def test_calls_in_flight_are_never_frozen_mid_answer(self):
        # A command run to completion that outlasts the pause's 2 s wait makes the pause a 409
        # (busy), and the command finishes untouched; calls arriving during a pause's wait are
        # refused, so no request ever waits on a frozen sandbox.
        s = self.create()
        sid = s["id"]
        out = {}

        def run():
            out["r"] = self.server.exec(sid, {"command": "sleep 4; echo done"}).json()

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        t0 = time.time()
        p = self.pause(sid)
        self.assertError(p, 409, "conflict")
        self.assertIn("busy", p.json()["error"]["message"])
        self.assertLess(time.time() - t0, 4)
        t.join(30)
        self.assertEqual(out["r"]["stdout"], "done\n")
        # A flood of short calls: the pause waits for those in flight, refuses new ones with 409,
        # and nothing is left hanging once it is paused.
        stop = threading.Event()
        hung = []

        def flood():
            while not stop.is_set():
                t1 = time.time()
                r = self.server.request("GET", "/v1/sandboxes/%s/files/list?path=." % sid,
                                        check=False, timeout=30)
                if time.time() - t1 > 5:
                    hung.append(r.status)

        threads = [threading.Thread(target=flood) for _ in range(8)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        p = self.pause(sid)
        self.assertEqual(p.status, 200, p)
        time.sleep(2)
        stop.set()
        try:
            for th in threads:
                th.join(10)
            # Still paused: a call frozen mid-answer would still be waiting here.
            self.assertEqual([th.is_alive() for th in threads], [False] * len(threads),
                             "calls wait on the frozen sandbox")
            self.assertEqual(hung, [], "calls waited on the frozen sandbox")
        finally:
            self.assertEqual(self.resume(sid).status, 200)
            for th in threads:
                th.join(30)

    def test_destroying_a_paused_sandbox_ends_a_stream_waiting_on_it(self):
        s = self.create()
        sid = s["id"]
        out = {}

        def run():
            try:
                out["r"] = self.server.stream(sid, {"command": "sleep 30"}, timeout=60)
            except Exception as e:  # the stream cut off by the destroy is an answer too
                out["r"] = e

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.3)
        self.assertEqual(self.pause(sid).status, 200)
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 204)
        t.join(20)
        self.assertFalse(t.is_alive(), "the stream hung on a destroyed paused sandbox")
        r = out["r"]
        if not isinstance(r, Exception):
            _, status, events = r
            self.assertNotEqual(events[-1:][0]["type"] if events else None, "exit", events)

    def test_backends_say_the_ns_backend_can_pause(self):
        r = self.server.request("GET", "/v1/backends")
        self.assertEqual(r.status, 200, r)
        got = r.json()
        self.assertEqual(got["default"], "ns")
        ns = [b for b in got["backends"] if b["name"] == "ns"]
        self.assertEqual(len(ns), 1, got)
        self.assertIs(ns[0]["available"], True)
        self.assertIsNone(ns[0]["reason"])
        self.assertIsNone(ns[0]["accelerator"])  # no guests: a VM backend's field
        self.assertIs(ns[0]["capabilities"]["pause"], True)
        self.assertIs(ns[0]["capabilities"]["adopt"], True)
        self.assertIs(ns[0]["capabilities"]["memory_snapshot"], False)

    def test_bad_requests(self):
        s = self.create()
        sid = s["id"]
        self.assertError(self.pause(sid, {"memory": "no"}), 400, "invalid_request")
        self.assertError(self.resume(sid), 409, "conflict")  # running: nothing to resume
        self.assertEqual(self.pause(sid, {}).status, 200)
        self.assertError(self.resume(sid, {"timeout_seconds": "soon"}), 400, "invalid_request")
        self.assertError(self.resume(sid, {"timeout_seconds": 0}), 400, "invalid_request")
        self.assertError(self.resume(sid, {"ttl": 5}), 400, "invalid_request")
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid).json()["status"],
                         "paused")
        for method, route, body in (("POST", "snapshots", {}), ("GET", "contexts", None),
                                    ("GET", "files/watch?path=.", None)):
            r = self.server.request(method, "/v1/sandboxes/%s/%s" % (sid, route), body,
                                    check=False)
            self.assertError(r, 409, "conflict")
        for bad in ("sb_123", "sb_0123456789abcdef"):
            self.assertError(self.pause(bad), 404, "not_found")
            self.assertError(self.resume(bad), 404, "not_found")
        self.assertError(self.server.request("POST", "/v1/sandboxes", {"auto_pause": "yes"},
                                             check=False), 400, "invalid_request")

    def test_destroying_a_paused_sandbox_leaves_nothing(self):
        s = self.create()
        sid = s["id"]
        self.server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                            {"command": "sleep 1000"})
        self.assertEqual(self.pause(sid).status, 200)
        d = self.server.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(d.status, 204, d)
        self.assertEqual(leftovers_after_a_while(self.server, sid), [])

    def test_auto_pause_pauses_at_the_ttl_and_keeps_the_workspace(self):
        s = self.create(timeout_seconds=1, auto_pause=True)
        sid = s["id"]
        self.assertIs(s["auto_pause"], True)
        self.server.put_file(sid, "note.txt", b"still here\n")
        deadline = time.time() + 8
        state = None
        while time.time() < deadline:
            state = self.server.request("GET", "/v1/sandboxes/" + sid).json()["status"]
            if state == "paused":
                break
            time.sleep(0.1)
        self.assertEqual(state, "paused", "auto_pause did not pause at the TTL")
        metrics = self.server.request("GET", "/metrics").body.decode()
        self.assertRegex(metrics, r"\nasb_sandboxes_auto_paused_total [1-9]")
        self.assertRegex(metrics, r'\nasb_sandboxes\{state="paused"\} [1-9]')
        r = self.resume(sid, {"timeout_seconds": 60})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.server.get_file(sid, "note.txt").body, b"still here\n")

    def test_auto_resume_wakes_a_paused_sandbox_for_its_requests(self):
        s = self.create(auto_resume=True)
        sid = s["id"]
        self.assertIs(s["auto_resume"], True)
        self.server.put_file(sid, "note.txt", b"kept\n")
        self.assertEqual(self.pause(sid).status, 200)
        # What needs it running wakes it, then is served: several at once resume it once.
        results = []

        def call(i):
            if i % 2:
                results.append(self.server.run(sid, "cat note.txt")["stdout"])
            else:
                results.append(self.server.get_file(sid, "note.txt").body.decode())
        threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(results, ["kept\n"] * 4)
        got = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual((got["status"], got["paused_at"]), ("running", None))
        events = self.server.request("GET", "/v1/events?sandbox_id=" + sid).json()["events"]
        self.assertEqual(len([e for e in events if e["action"] == "sandbox.pause"]), 1)
        # Reading its record, or pausing it again, is no traffic: it stays paused.
        self.assertEqual(self.pause(sid).status, 200)
        for _ in range(3):
            self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid).json()["status"],
                             "paused")
        # Without auto_resume a paused sandbox's commands answer 409, as before.
        plain = self.create()["id"]
        self.assertEqual(self.pause(plain).status, 200)
        r = self.server.request("POST", "/v1/sandboxes/%s/exec" % plain, {"command": "true"})
        self.assertEqual((r.status, r.json()["error"]["code"]), (409, "conflict"))


class PausedTimeoutTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_PAUSED_TIMEOUT_SECONDS": "2"}

    def test_a_paused_sandbox_is_destroyed_at_the_paused_timeout(self):
        s = self.create(timeout_seconds=600)
        sid = s["id"]
        p = self.server.request("POST", "/v1/sandboxes/%s/pause" % sid)
        self.assertEqual(p.status, 200, p)
        paused_at = time.time()
        deadline = paused_at + 8
        while time.time() < deadline:
            if self.server.request("GET", "/v1/sandboxes/" + sid, check=False).status == 404:
                break
            time.sleep(0.1)
        gone_after = time.time() - paused_at
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid,
                                             check=False).status, 404)
        self.assertGreaterEqual(gone_after, 1.5)
        self.assertLess(gone_after, 6)
        self.assertEqual(leftovers_after_a_while(self.server, sid), [])


if __name__ == "__main__":
    main()
