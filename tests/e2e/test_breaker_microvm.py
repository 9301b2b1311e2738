#!/usr/bin/env python3
"""The breaker's hostile use (test_breaker.py, ADR 0014) on the microvm backend (docs/adr/0025):
every test, each sandbox a QEMU microVM. What the ns tests look at from the host (the commands'
processes, sandboxd's memory) is the guest's here, so this file looks from inside the guest,
as root in it. What differs by design is overridden with the reason. Skips with the reason
where QEMU or the microVM guest is missing.
"""
import ctypes
import json
import os
import time
import unittest

from harness import main
from test_breaker import BreakerKillTest, BreakerTest, inotify_grab_script
from test_microvm import qemu_pids
from test_pause_microvm import MICROVM_ENV, OnMicrovm

# Every process of the guest as "cmdline" text, one a line (the lister's own shell says only
# "for p in ...", which no test looks for).
LIST_GUEST = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"


def guest_cmdlines(server, sid):
    r = server.run(sid, LIST_GUEST, user="root")
    return [line for line in r["stdout"].splitlines() if line.strip()]


class MicrovmBreakerTest(OnMicrovm, BreakerTest):
    SERVER_ENV = dict(BreakerTest.SERVER_ENV, **MICROVM_ENV)

    def cmdlines(self, sid):
        return guest_cmdlines(self.server, sid)

    def sandboxd_rss_kib(self, sid):
        # sandboxd is the guest's PID 1. Its anonymous memory, where the rings and their
        # bookkeeping live: VmRSS also counts file pages (its own binary's as code paths are
        # first used), and in the guest those grew it by 780 KiB in all in this test.
        r = self.server.run(sid, "grep RssAnon: /proc/1/status", user="root")
        self.assertEqual(r["exit_code"], 0, r)
        return int(r["stdout"].split()[1])

    def test_inotify_instances_are_bounded_per_sandbox_not_taken_from_the_host(self):
        # A guest's inotify instances are its own kernel's: however many it opens, the host's
        # stay whole. Inside, the guest's per-user limit (its kernel's default) still bounds them.
        grab = inotify_grab_script(1000)
        r = self.sh("python3 -c '%s'" % grab.replace("'", "'\\''"))
        self.assertEqual(r["exit_code"], 0, r)
        count, err = (int(x) for x in r["stdout"].split())
        self.assertLess(count, 1000, r)
        self.assertEqual(err, 24)  # EMFILE
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(0)
        self.assertGreaterEqual(fd, 0, "the host lost inotify: errno %d" % ctypes.get_errno())
        os.close(fd)


class MicrovmBreakerKillTest(OnMicrovm, BreakerKillTest):
    SERVER_ENV = dict(BreakerKillTest.SERVER_ENV, **MICROVM_ENV)

    def test_sigkill_mid_exec_kills_the_commands_and_restart_adopts(self):
        # With no server the guest cannot be asked what runs, so the check is made after the
        # restart: the commands of the lost connection (their own session included) are gone
        # and the adopted VM answers.
        s = self.server
        sid = s.create()["id"]
        try:
            c = s.conn(30)
            c.request("POST", "/v1/sandboxes/%s/exec" % sid,
                      body=json.dumps({"command": "setsid sleep $((3000+50)) & "
                                                  "sleep $((3000+51))"}),
                      headers={"Content-Type": "application/json"})
            deadline = time.time() + 20
            while time.time() < deadline and not any(
                    "sleep 3051" in x for x in guest_cmdlines(s, sid)):
                time.sleep(0.2)
            self.assertTrue(any("sleep 3051" in x for x in guest_cmdlines(s, sid)))
            s.kill9()
            c.close()
            time.sleep(1)
            s.start()
            deadline = time.time() + 10
            while time.time() < deadline and any("sleep 305" in x
                                                 for x in guest_cmdlines(s, sid)):
                time.sleep(0.2)
            self.assertEqual([x for x in guest_cmdlines(s, sid) if "sleep 305" in x], [])
            self.assertEqual(s.run(sid, "echo back")["stdout"], "back\n")
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)
        self.assertEqual(qemu_pids(s.data_dir), [])


del BreakerTest, BreakerKillTest  # run only the microVM variants from this file

if __name__ == "__main__":
    main()
