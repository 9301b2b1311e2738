#!/usr/bin/env python3
"""Pause and resume on the microvm backend (docs/adr/0025): every test of test_pause.py, each
sandbox a QEMU microVM whose cgroups are frozen whole (QEMU's every thread, so the guest's vCPUs
and devices stop where they are). Plus what only a VM has: a paused guest cannot answer its
heartbeat and must not be taken for a hung one. Skips with the reason where QEMU or the
microVM guest is missing.
"""
import time
import unittest

from harness import main
from test_microvm import GUEST, missing_microvm
from test_pause import (PausedTimeoutTest, PauseTest, cpu_seconds, leftovers_after_a_while,
                        longest_gap_s, ticks)

MICROVM_ENV = {
    "AGENT_SANDBOX_BACKEND": "microvm",
    "AGENT_SANDBOX_MICROVM_GUEST": GUEST,
    "AGENT_SANDBOX_NETWORK": "false",  # nothing here may reach a real network
    # A hung guest is ended after this: a pause must outlast it unharmed. Not shorter: a guest
    # spinning a fork loop under TCG answers slowly.
    "AGENT_SANDBOX_MICROVM_HEARTBEAT_TIMEOUT_MS": "5000",
}


class OnMicrovm:
    """Mixed in before a test_pause.py class: its server runs microVMs, or the class skips."""

    @classmethod
    def setUpClass(cls):
        why = missing_microvm()
        if why:
            raise unittest.SkipTest(why)
        super().setUpClass()


class MicrovmPausedTimeoutTest(OnMicrovm, PausedTimeoutTest):
    SERVER_ENV = dict(PausedTimeoutTest.SERVER_ENV, **MICROVM_ENV)


class MicrovmPauseTest(OnMicrovm, PauseTest):
    SERVER_ENV = dict(PauseTest.SERVER_ENV, **MICROVM_ENV)

    def test_backends_say_the_ns_backend_can_pause(self):
        got = self.server.request("GET", "/v1/backends").json()
        self.assertEqual(got["default"], "microvm", got)
        vm = got["backends"][0]  # the default first (ns runs beside it)
        self.assertEqual(vm["name"], "microvm", got)
        self.assertIs(vm["capabilities"]["pause"], True)
        self.assertIs(vm["capabilities"]["adopt"], True)

    def test_processes_stop_while_paused_and_go_on_after(self):
        # test_pause.py's version counts ticks of a 20 ms loop over 0.3 s, which a guest under
        # TCG (software emulation) does not run that fast: the same check at a VM's pace.
        s = self.create(timeout_seconds=300)
        sid = s["id"]
        r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid, {
            "command": "while :; do date +%s%N >> /workspace/ticks; sleep 0.1; done"})
        self.assertEqual(r.status, 201, r)

        def count():
            got = self.server.get_file(sid, "ticks")
            return len(ticks(got.body.decode())) if got.status == 200 else 0

        deadline = time.time() + 30
        while count() < 3 and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.pause(sid).status, 200)
        time.sleep(2.5)
        self.assertEqual(self.resume(sid).status, 200)
        paused_ticks = count()
        deadline = time.time() + 30
        while count() < paused_ticks + 3 and time.time() < deadline:
            time.sleep(0.2)
        t = ticks(self.server.get_file(sid, "ticks").body.decode())
        self.assertGreaterEqual(longest_gap_s(t), 2.0, "the loop ran while paused")
        self.assertGreater(t[-1] / 1e9, time.time() - 5, "the loop did not go on after resume")

    def test_a_paused_vm_outlasts_its_heartbeat_and_uses_no_cpu(self):
        s = self.create()
        sid = s["id"]
        self.server.run(sid, "echo kept > /tmp/mark")  # the guest's RAM (tmpfs), not a disk
        self.assertEqual(self.pause(sid).status, 200)
        time.sleep(1)
        before = cpu_seconds(sid)
        time.sleep(11)  # two heartbeat timeouts and a check interval
        self.assertEqual(cpu_seconds(sid), before)  # frozen: not even a guest timer tick
        got = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(got["status"], "paused", got)
        self.assertEqual(self.resume(sid).status, 200)
        self.assertEqual(self.server.run(sid, "cat /tmp/mark")["stdout"], "kept\n")
        # The guest's clock stood still while frozen; the resume set it to the host's.
        guest = float(self.server.run(sid, "date +%s.%N")["stdout"])
        self.assertLess(abs(guest - time.time()), 2.0, guest)
        time.sleep(11)  # and the heartbeat looks after it again, finding it answering
        got = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(got["status"], "running", got)

    def test_a_files_only_pause_ends_the_vm_and_the_resume_boots_it_with_its_files(self):
        s = self.create(timeout_seconds=300)
        sid = s["id"]
        self.server.put_file(sid, "kept.txt", b"across a reboot\n")
        r = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid,
                                {"command": "sleep 1000"})
        self.assertEqual(r.status, 201, r)
        p = self.pause(sid, {"memory": False})
        self.assertEqual(p.status, 200, p)
        self.assertEqual((p.json()["status"], p.json()["paused_memory"]), ("paused", False))
        # No VM is left: its QEMU and everything of its runtime are gone from the host.
        self.assertEqual(leftovers_after_a_while(self.server, sid), [])
        r = self.resume(sid)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.server.get_file(sid, "kept.txt").body, b"across a reboot\n")
        self.assertEqual(self.server.run(sid, "pgrep -c sleep || true")["stdout"], "0\n")


del PauseTest, PausedTimeoutTest  # run only the microVM variants from this file

if __name__ == "__main__":
    main()
