#!/usr/bin/env python3
"""ADR 0013 on the microvm backend (docs/adr/0025): every test of test_network.py, with each
sandbox a QEMU microVM whose virtio-net device is a tap device joined to the veth the host
network gives QEMU's network namespace. The same test "internet" in network namespaces, the
same egress policy, resolver, bandwidth limit and port proxy, and the same check that nothing
is left behind. Skips with the reason where QEMU or the microVM guest is missing.
"""
import os
import platform

import harness
from test_microvm import GUEST, missing_microvm, qemu_pid_of
from test_network import PY_GET, NetworkTest


class MicrovmNetworkTest(NetworkTest):
    @classmethod
    def backend_env(cls):
        return {"AGENT_SANDBOX_BACKEND": "microvm", "AGENT_SANDBOX_MICROVM_GUEST": GUEST}

    @classmethod
    def missing_backend(cls):
        return missing_microvm()

    def test_a_networked_sandbox_is_a_vm_behind_a_tap_device(self):
        # Not the ns backend by mistake: a kernel of its own, QEMU with a tap device in its
        # own network namespace, the test internet reached through it.
        r = self.server.request("GET", "/v1/backends").json()
        self.assertEqual(r["default"], "microvm", r)
        self.assertTrue(r["backends"][0]["capabilities"]["network"], r)
        sid = self.networked({"allow_out": ["allowed.test"]})["id"]
        out = self.server.run(sid, "uname -r")["stdout"].strip()
        self.assertNotEqual(out, platform.release())
        pid = qemu_pid_of(self.server.data_dir, sid)
        self.assertIsNotNone(pid)
        self.assertNotEqual(os.readlink("/proc/%d/ns/net" % pid), os.readlink("/proc/self/ns/net"))
        with open("/proc/%d/net/dev" % pid) as f:  # QEMU's namespace: the veth and the tap
            devices = {line.split(":")[0].strip() for line in f if ":" in line}
        self.assertTrue({"eth0", "tap0"} <= devices, devices)
        self.assertTrue(self.py(sid, PY_GET, "http://allowed.test/hello.txt").startswith("ok 29"))


del NetworkTest  # run only the microVM variant from this file

if __name__ == "__main__":
    harness.main()
