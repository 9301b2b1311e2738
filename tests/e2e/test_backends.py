"""One server, several isolation backends (isolation/backend_set.h, docs/ARCHITECTURE.md): a
create's "backend" picks ns or microvm, the sandbox says which it runs on, a restart adopts each
from its own backend, and a backend the host cannot run is listed with the reason (no host
path) and refused with it.

MixedBackendsTest and MicrovmRunTest (`agent-sandbox run --backend microvm`) boot microVMs:
they need QEMU and the guest of scripts/microvm-guest.sh and skip (77) without them.
UnavailableBackendTest needs neither.
"""

import os
import platform
import time
import unittest

import subprocess

from harness import BIN, Server, main, missing_prerequisite
from test_cli import RunKillTest
from test_microvm import GUEST, close_and_end_vms, missing_microvm, qemu_pids


class UnavailableBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = missing_prerequisite()
        if why:
            raise unittest.SkipTest(why)
        cls.server = Server(env={"AGENT_SANDBOX_NETWORK": "false"})
        # A guest directory that does not exist: the microvm backend cannot start.
        cls.missing_guest = os.path.join(cls.server.data_dir, "no-guest-here")
        cls.server.extra_env["AGENT_SANDBOX_MICROVM_GUEST"] = cls.missing_guest
        cls.server.start()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_backends_lists_microvm_with_why_not(self):
        body = self.server.request("GET", "/v1/backends").json()
        self.assertEqual(body["default"], "ns")
        by_name = {b["name"]: b for b in body["backends"]}
        self.assertEqual(list(by_name), ["ns", "microvm"], body)
        self.assertTrue(by_name["ns"]["available"], body)
        vm = by_name["microvm"]
        self.assertFalse(vm["available"], vm)
        self.assertIn("scripts/microvm-guest.sh", vm["reason"], vm)
        self.assertNotIn(self.server.data_dir, vm["reason"], vm)
        self.assertFalse(any(vm["capabilities"].values()), vm)

    def test_a_create_on_it_is_refused_with_the_reason_and_leaves_nothing(self):
        s = self.server
        r = s.request("POST", "/v1/sandboxes", {"template": "base", "backend": "microvm"},
                      check=False)
        self.assertEqual(r.status, 503, r)
        err = r.json()["error"]
        self.assertEqual(err["code"], "unavailable", err)
        self.assertIn("microvm backend is not available", err["message"], err)
        self.assertIn("scripts/microvm-guest.sh", err["message"], err)
        self.assertNotIn(s.data_dir, r.body.decode(), r)
        self.assertEqual(s.request("GET", "/v1/sandboxes").json()["sandboxes"], [])

    def test_unknown_or_empty_backends_are_the_callers_error(self):
        s = self.server
        r = s.request("POST", "/v1/sandboxes", {"backend": "firecracker"}, check=False)
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"]["code"], "invalid_request", r)
        self.assertIn('unknown backend "firecracker"', r.json()["error"]["message"], r)
        self.assertIn("ns, microvm", r.json()["error"]["message"], r)
        for bad in ("", 7, ["ns"]):
            r = s.request("POST", "/v1/sandboxes", {"backend": bad}, check=False)
            self.assertEqual(r.status, 400, (bad, r))
        self.assertEqual(s.request("GET", "/v1/sandboxes").json()["sandboxes"], [])

    def test_a_plain_create_runs_on_the_default_and_says_so(self):
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()["id"]
        try:
            got = s.request("GET", "/v1/sandboxes/" + sid).json()
            self.assertEqual(got["backend"], "ns", got)
            listed = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
            self.assertEqual([x["backend"] for x in listed], ["ns"], listed)
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)


class MixedBackendsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = missing_prerequisite() or missing_microvm()
        if why:
            raise unittest.SkipTest(why)
        # The default stays ns; the microvm backend runs beside it (its guest is here).
        cls.server = Server(env={"AGENT_SANDBOX_MICROVM_GUEST": GUEST,
                                 "AGENT_SANDBOX_NETWORK": "false"}).start()

    @classmethod
    def tearDownClass(cls):
        close_and_end_vms(getattr(cls, "server", None))

    def test_each_create_runs_where_it_asked_and_a_restart_keeps_both(self):
        s = self.server
        body = s.request("GET", "/v1/backends").json()
        self.assertEqual(body["default"], "ns")
        self.assertEqual([(b["name"], b["available"]) for b in body["backends"]],
                         [("ns", True), ("microvm", True)], body)
        t0 = time.monotonic()
        vm = s.request("POST", "/v1/sandboxes", {"template": "base", "backend": "microvm"}).json()
        vm_boot_s = time.monotonic() - t0
        plain = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()
        ids = (vm["id"], plain["id"])
        try:
            self.assertEqual((vm["backend"], plain["backend"]), ("microvm", "ns"))
            # A kernel of its own in the VM; the host's in the namespaces sandbox.
            self.assertNotEqual(s.run(vm["id"], "uname -r")["stdout"].strip(), platform.release())
            self.assertEqual(s.run(plain["id"], "uname -r")["stdout"].strip(), platform.release())
            self.assertEqual(len(qemu_pids(s.data_dir)), 1)
            # Each backend's state is its own: the VM under microvm-sandboxes/ only.
            self.assertTrue(os.path.isdir(os.path.join(s.data_dir, "microvm-sandboxes", ids[0])))
            self.assertFalse(os.path.exists(os.path.join(s.data_dir, "sandboxes", ids[0])))
            listed = {x["id"]: x["backend"] for x in
                      s.request("GET", "/v1/sandboxes").json()["sandboxes"]}
            self.assertEqual(listed, {ids[0]: "microvm", ids[1]: "ns"})
            for sid in ids:
                s.run(sid, "echo kept > /tmp/mark")
            # A SIGKILLed server: the restarted one adopts each from its own backend.
            s.kill9()
            s.start()
            for sid, backend in zip(ids, ("microvm", "ns")):
                got = s.request("GET", "/v1/sandboxes/" + sid).json()
                self.assertEqual((got["status"], got["backend"]), ("running", backend), got)
                self.assertEqual(s.run(sid, "cat /tmp/mark")["stdout"], "kept\n")
            # Pause works on each, the way its backend pauses (a frozen VM, a frozen cgroup).
            for sid in ids:
                self.assertEqual(s.request("POST", "/v1/sandboxes/%s/pause" % sid, {}).status, 200)
                self.assertEqual(s.request("POST", "/v1/sandboxes/%s/resume" % sid, {}).status, 200)
                self.assertEqual(s.run(sid, "echo back")["stdout"], "back\n")
        finally:
            for sid in ids:
                self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status,
                                 204)
        deadline = time.monotonic() + 10
        while qemu_pids(s.data_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(qemu_pids(s.data_dir), [])
        print("\nmixed: microvm create beside ns: %.2f s" % vm_boot_s)


class MicrovmRunTest(RunKillTest):
    """`agent-sandbox run --backend microvm`: the command in a VM of its own, its exit code
    passed through, and RunKillTest's cleanup (a SIGKILLed run's VM ended by its watcher, or by
    the next run when the watcher died too) for VMs."""

    RUN_ARGS = ["--backend", "microvm"]
    RUN_DIR = "run-microvm"

    def setUp(self):
        why = missing_microvm()
        if why:
            self.skipTest(why)
        super().setUp()
        self.env["AGENT_SANDBOX_MICROVM_GUEST"] = GUEST

    def test_a_run_gets_a_kernel_of_its_own(self):
        r = subprocess.run([BIN, "run", "--backend", "microvm", "--", "sh", "-c",
                            "uname -r; echo out; echo err >&2; exit 3"], env=self.env,
                           capture_output=True, text=True, timeout=180,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 3, r)
        kernel, out = r.stdout.split("\n")[:2]
        self.assertNotEqual(kernel, platform.release(), r)
        self.assertEqual((out, r.stderr), ("out", "err\n"), r)
        r = subprocess.run([BIN, "run", "--backend", "firecracker", "--", "true"], env=self.env,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertNotEqual(r.returncode, 0, r)
        self.assertIn("firecracker", r.stderr, r)


del RunKillTest  # its ns tests run in test_cli.py

if __name__ == "__main__":
    main()
