"""The microvm backend, step (a) (docs/adr/0025-microvm-backend.md): a server started with
--backend microvm gives every sandbox a QEMU microVM with a kernel of its own, and exec, files
and destroy work over the same sandbox protocol as on the ns backend.

Needs what scripts/install-deps.sh installs (QEMU, erofs-utils) and the guest that
scripts/microvm-guest.sh prepares (AGENT_SANDBOX_MICROVM_GUEST, default
/var/lib/agent-sandbox/microvm); skips (77) with the reason when either is missing. Boots one VM
at a time: under TCG (software, as on these machines) a boot takes a few seconds.
"""

import contextlib
import hashlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import unittest

from harness import BIN, Server, free_port, main, missing_prerequisite

GUEST = os.environ.get("AGENT_SANDBOX_MICROVM_GUEST", "/var/lib/agent-sandbox/microvm")
QEMU = "/usr/bin/qemu-system-x86_64"


def missing_microvm():
    if not os.access(QEMU, os.X_OK):
        return "qemu-system-x86_64 not installed (scripts/install-deps.sh)"
    if not os.access("/usr/bin/mkfs.erofs", os.X_OK):
        return "mkfs.erofs not installed (erofs-utils)"
    for f in ("vmlinuz", "initrd-base.cpio"):
        if not os.path.isfile(os.path.join(GUEST, f)):
            return "no microVM guest in %s (run scripts/microvm-guest.sh)" % GUEST
    return None


def vm_cgroup_name(data_dir):
    """The server's cgroup name for its VMs: cli/serve.cc's CgroupNameFor (FNV-1a of the data
    dir's canonical path) + "-vm"."""
    h = 1469598103934665603
    for c in os.path.realpath(data_dir).encode():
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    return "agent-sandbox-%08x-vm" % (h & 0xFFFFFFFF)


def wait_for_few_commands(server, sid, timeout_s=20):
    """Waits until the guest's cgroup of commands holds at most 2 processes (the probe and its
    shell): what a fork loop started has ended. Under TCG on a busy host that takes longer than
    the commands' own sleeps. Shell builtins only: it must not need a fork to look."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        n = server.run(sid, "read n < /sys/fs/cgroup/work/pids.current; echo $n")["stdout"]
        if n.strip().isdigit() and int(n) <= 2:
            return
        time.sleep(0.3)


def close_and_end_vms(server):
    """Stops `server` (None: nothing) and SIGKILLs any QEMU left in its cgroups: a failed test
    must not leave a VM running."""
    if server is None:
        return
    data_dir = server.data_dir
    server.close()
    for pid in qemu_pids(data_dir):
        os.kill(pid, 9)


def qemu_pids(data_dir):
    """Pids of QEMU processes in the cgroups of the server on `data_dir` (jailed, QEMU's
    command line names only paths inside its jail)."""
    marker = ("/%s/" % vm_cgroup_name(data_dir)).encode()
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/cgroup" % pid, "rb") as f:
                cgroups = f.read()
        except OSError:
            continue
        if b"qemu-system" in cmd and marker in cgroups:
            out.append(int(pid))
    return out


def qemu_pid_of(data_dir, sid):
    """The pid of sandbox `sid`'s QEMU (found by its cgroup), or None."""
    marker = ("/%s/%s" % (vm_cgroup_name(data_dir), sid)).encode()
    for pid in qemu_pids(data_dir):
        try:
            with open("/proc/%d/cgroup" % pid, "rb") as f:
                if marker in f.read():
                    return pid
        except OSError:
            continue
    return None


def status_fields(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


class MicrovmTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = missing_microvm()
        if why:
            raise unittest.SkipTest(why)
        cls.server = Server(env={"AGENT_SANDBOX_BACKEND": "microvm",
                                 "AGENT_SANDBOX_MICROVM_GUEST": GUEST,
                                 # No host network here: test_network_microvm.py builds a test
                                 # internet for that; nothing here may reach a real one.
                                 "AGENT_SANDBOX_NETWORK": "false",
                                 # A hung guest is ended after this (default 30 s under TCG).
                                 "AGENT_SANDBOX_MICROVM_HEARTBEAT_TIMEOUT_MS": "4000"}).start()

    @classmethod
    def tearDownClass(cls):
        close_and_end_vms(getattr(cls, "server", None))

    def crash_guest(self, sid):
        """Panics the guest's kernel as root in it; the exec in flight must fail at once (502),
        not hang. Returns the sandbox once it is in "error" (within 10 s)."""
        s = self.server
        t0 = time.monotonic()
        r = s.exec(sid, {"command": "echo c > /proc/sysrq-trigger", "user": "root",
                         "timeout_seconds": 30})
        self.assertEqual(r.status, 502, r)
        self.assertLess(time.monotonic() - t0, 20)
        deadline = time.monotonic() + 10
        while True:
            got = s.request("GET", "/v1/sandboxes/" + sid).json()
            if got["status"] == "error" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(got["status"], "error", got)
        return got

    @contextlib.contextmanager
    def vm(self, **spec):
        """A sandbox of the base template (and `spec`) for the block, destroyed after it
        whatever happens; the destroy must succeed (204)."""
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", dict({"template": "base"}, **spec)).json()["id"]
        try:
            yield sid
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)

    def test_a_vm_boots_and_answers_exec_files_and_destroy(self):
        s = self.server
        t0 = time.monotonic()
        r = s.request("POST", "/v1/sandboxes",
                      {"template": "base", "memory_mb": 256, "pids_limit": 32,
                       "env": {"GREETING": "hi vm"}},
                      check=False)
        boot_s = time.monotonic() - t0
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        try:
            self.assertEqual(len(qemu_pids(s.data_dir)), 1)
            # A kernel of its own: not the host's.
            out = s.run(sid, "uname -r; id -un; pwd; hostname; cat /proc/1/comm")
            self.assertEqual(out["exit_code"], 0, out)
            lines = out["stdout"].split("\n")
            self.assertNotEqual(lines[0], platform.release(), out)
            self.assertEqual(lines[1:5], ["sandbox", "/workspace", "sandbox", "sandboxd"], out)
            # A CPU with what Debian's builds use (QEMU's default model lacks it: matplotlib's
            # import died of SIGILL): the host's under KVM, all TCG emulates under TCG.
            out = s.run(sid, "grep -o -w 'ssse3\\|sse4_2\\|popcnt' /proc/cpuinfo | sort -u")
            self.assertEqual(out["stdout"].split(), ["popcnt", "sse4_2", "ssse3"], out)
            # stdout and stderr apart, the exit code, a timeout that kills the command.
            out = s.run(sid, "echo out; echo err >&2; exit 3")
            self.assertEqual((out["stdout"], out["stderr"], out["exit_code"]),
                             ("out\n", "err\n", 3), out)
            out = s.run(sid, "sleep 30", timeout_seconds=1)
            self.assertTrue(out["timed_out"], out)
            # The root filesystem is the template's, read-only; /workspace and /tmp are written.
            out = s.run(sid, "touch /usr/x 2>&1; echo w > /workspace/w; echo t > /tmp/t; "
                             "cat /workspace/w /tmp/t; findmnt -no FSTYPE /")
            self.assertIn("Read-only file system", out["stdout"], out)
            self.assertTrue(out["stdout"].endswith("w\nt\nerofs\n"), out)
            # The create's env reaches every command (sandboxd's config disk).
            self.assertEqual(s.run(sid, "echo $GREETING")["stdout"], "hi vm\n")
            # Streams: stdout and stderr events apart, then the exit.
            _, status, events = s.stream(sid, {"command": "echo a; echo b >&2; exit 4"})
            self.assertEqual(status, 200)
            kinds = [(e["type"], e.get("data")) for e in events if e["type"] != "start"]
            self.assertIn(("stdout", "a\n"), kinds, events)
            self.assertIn(("stderr", "b\n"), kinds, events)
            self.assertEqual(events[-1].get("exit_code"), 4, events)
            # Loopback is up in the guest: a server and a client inside it talk.
            out = s.run(sid, "python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 & "
                             "for i in $(seq 50); do python3 -c \"import urllib.request as u; "
                             "print(u.urlopen('http://127.0.0.1:8000/').status)\" 2>/dev/null "
                             "&& break; sleep 0.2; done", timeout_seconds=60)
            self.assertEqual(out["stdout"], "200\n", out)
            # The pids limit holds inside the guest (its cgroup of commands): a fork loop stops
            # and the sandbox still answers once the loop's orphans have ended.
            out = s.run(sid, "cat /sys/fs/cgroup/work/pids.max")
            self.assertEqual(out["stdout"], "32\n", out)
            out = s.run(sid, "for i in $(seq 100); do sleep 1 & done; wait", timeout_seconds=30)
            self.assertTrue("fork" in out["stderr"] or "unavailable" in out["stderr"], out)
            wait_for_few_commands(s, sid)  # the loop's orphans end
            # The file API reaches the guest through the same protocol.
            self.assertEqual(s.put_file(sid, "hello.txt", b"from the host").status, 200)
            self.assertEqual(s.run(sid, "cat hello.txt")["stdout"], "from the host")
            self.assertEqual(s.get_file(sid, "/workspace/w").body, b"w\n")
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)
        # Destroy ends the VM and leaves nothing of it.
        deadline = time.monotonic() + 10
        while qemu_pids(s.data_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(qemu_pids(s.data_dir), [])
        self.assertFalse(os.path.exists(os.path.join(s.data_dir, "microvm-sandboxes", sid)))
        print("\nmicrovm create to running: %.2f s" % boot_s, file=sys.stderr)

    def test_a_guest_kernel_panic_is_the_sandboxs_failure_with_its_reason(self):
        # Root in the guest may crash its own kernel; the VM ends (panic=-1, -no-reboot), the
        # call in flight fails at once instead of hanging, and the sandbox says why.
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()["id"]
        try:
            t0 = time.monotonic()
            got = self.crash_guest(sid)
            self.assertLess(time.monotonic() - t0, 30)
            self.assertIn("the guest kernel panicked", got.get("error_message", ""), got)
            self.assertNotIn("/var/", got.get("error_message", ""), got)
        finally:
            s.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        self.assertEqual(qemu_pids(s.data_dir), [])

    def test_a_console_flood_costs_the_host_no_disk_and_hides_no_panic(self):
        # Root in the guest may write to its serial console without end. The server reads the
        # console into a bounded buffer (guest_console.h), so nothing of the VM's on the host
        # grows (a file-backed console would, by every byte), and a panic after the flood is
        # still found and reported.
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", {"template": "base", "memory_mb": 256}).json()["id"]
        vm_dir = os.path.join(s.data_dir, "microvm-sandboxes", sid)

        def host_bytes():  # what the VM holds on the host's disk, its two disk images apart
            total = 0
            for root, _, files in os.walk(vm_dir):
                for f in files:
                    if f not in ("workspace.img", "config.img"):
                        total += os.lstat(os.path.join(root, f)).st_blocks * 512
            return total

        try:
            before = host_bytes()
            out = s.run(sid, "timeout 8 sh -c 'yes flood-flood-flood-flood' | tee /dev/console"
                             " | wc -c", user="root", timeout_seconds=60)
            written = int(out["stdout"])
            self.assertGreater(written, 256 << 10, out)  # well past the 64 KiB kept
            self.assertLess(host_bytes() - before, 64 << 10)
            self.assertEqual(s.run(sid, "echo alive")["stdout"], "alive\n")
            got = self.crash_guest(sid)
            self.assertIn("the guest kernel panicked", got.get("error_message", ""), got)
            print("\nmicrovm console flood: %d bytes written by the guest, host grew %d bytes"
                  % (written, host_bytes() - before), file=sys.stderr)
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)
        self.assertEqual(qemu_pids(s.data_dir), [])

    def test_the_guests_own_figures_pids_limited_and_metrics(self):
        # The host sees only QEMU (its threads, its memory); the commands' figures are the
        # guest's own, from its sandboxd (the stats operation): a fork refused by pids_limit
        # inside the guest makes the exec say pids_limited, and the metrics count the memory
        # of the guest's commands.
        s = self.server
        with self.vm(memory_mb=256, pids_limit=16) as sid:
            self.assertFalse(s.run(sid, "true")["pids_limited"])
            out = s.run(sid, "for i in $(seq 40); do sleep 2 & done 2>/dev/null; wait",
                        timeout_seconds=60)
            self.assertTrue(out["pids_limited"], out)
            # The sleeps the loop started (sh gave up at the refused fork) end.
            wait_for_few_commands(s, sid)
            self.assertFalse(s.run(sid, "true")["pids_limited"])
            # Shared memory stays charged to the commands' cgroup after its writer exits.
            out = s.run(sid, "head -c 48m /dev/zero > /dev/shm/fill")
            self.assertEqual(out["exit_code"], 0, out)
            # E2B's route (its shape is E2B's, not in api/openapi.json): the history, then the
            # sample taken now, last.
            r = s.request("GET", "/sandboxes/%s/metrics" % sid, check=False)
            self.assertEqual(r.status, 200, r)
            m = r.json()[-1]
            self.assertGreaterEqual(m["memUsed"], 48 << 20, m)
            self.assertLess(m["memUsed"], 256 << 20, m)

    def test_a_port_in_the_vm_is_reached_through_its_sandboxd(self):
        # A microVM has no network the host could reach (none at all unless networked): the
        # port proxy reaches its ports through the guest's sandboxd (tcp.connect), bytes intact
        # both ways, and says so clearly when nothing listens.
        s = self.server
        with self.vm() as sid:
            r = s.request("GET", "/v1/sandboxes/%s/ports/8000/" % sid, check=False)
            self.assertEqual(r.status, 503, r)
            self.assertIn("nothing listens on port 8000", r.json()["error"]["message"])
            out = s.run(sid, "echo hello-from-the-vm > index.html; head -c 3000000 /dev/urandom"
                             " > big.bin; sha256sum big.bin")
            digest = out["stdout"].split()[0]
            r = s.request("POST", "/v1/sandboxes/%s/processes" % sid,
                          {"command": "python3 -m http.server 8000 --bind 127.0.0.1"})
            self.assertEqual(r.status, 201, r)
            deadline = time.monotonic() + 30
            while True:
                r = s.request("GET", "/v1/sandboxes/%s/ports/8000/index.html" % sid, check=False)
                if r.status == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.3)
            self.assertEqual((r.status, r.body), (200, b"hello-from-the-vm\n"), r)
            r = s.request("GET", "/v1/sandboxes/%s/ports/8000/big.bin" % sid, check=False)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(hashlib.sha256(r.body).hexdigest(), digest)
            caps = [b for b in s.request("GET", "/v1/backends").json()["backends"]
                    if b["name"] == "microvm"][0]["capabilities"]
            self.assertTrue(caps["tcp_connect"], caps)

    def test_a_guest_oom_kill_is_reported_and_the_vm_lives_on(self):
        # The sandbox's memory limit is its commands' (memory.max of the guest's cgroup of
        # commands, its /tmp included, as on ns); the VM has that plus what the guest kernel and
        # sandboxd need. A command past it is ended by the guest kernel's OOM killer (sandboxd,
        # the guest's init, outside that cgroup, is never its victim), the exec says oom_killed
        # with exit 137, and the sandbox keeps answering.
        s = self.server
        with self.vm(memory_mb=128) as sid:
            out = s.run(sid, "cat /sys/fs/cgroup/work/memory.max; "
                             "awk '/MemTotal/ {print ($2 > 128 * 1024)}' /proc/meminfo")
            self.assertEqual(out["stdout"], "134217728\n1\n", out)
            # All of /tmp (64 MiB) fits beside the commands: no OOM, the tmpfs is full.
            out = s.run(sid, "head -c 100m /dev/zero > /tmp/fill; df -P /tmp | tail -1",
                        timeout_seconds=60)
            self.assertFalse(out["oom_killed"], out)
            self.assertIn(" 100% ", out["stdout"], out)
            s.run(sid, "rm /tmp/fill")
            self.assertFalse(s.run(sid, "true")["oom_killed"])
            out = s.run(sid, "python3 -c 'a = []\nwhile True: a.append(b\"x\" * (1 << 20))'",
                        timeout_seconds=120)
            self.assertEqual((out["oom_killed"], out["exit_code"]), (True, 137), out)
            out = s.run(sid, "echo alive")
            self.assertEqual((out["stdout"], out["oom_killed"]), ("alive\n", False), out)

    def test_a_hung_guest_is_the_sandboxs_failure_not_a_hung_request(self):
        # A guest that stops answering (here QEMU stopped by SIGSTOP: the socket stays open and
        # nothing answers) fails its heartbeat: the VM is ended, a call in flight fails at once
        # instead of waiting out its own timeout, and the sandbox says why.
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()["id"]
        try:
            (pid,) = qemu_pids(s.data_dir)
            os.kill(pid, signal.SIGSTOP)
            t0 = time.monotonic()
            r = s.exec(sid, {"command": "echo never", "timeout_seconds": 60})
            waited = time.monotonic() - t0
            self.assertIn(r.status, (502, 503), r)  # the connection ended under it
            self.assertLess(waited, 15)  # the heartbeat (4 s + its 2 s interval), not 60 s
            got = s.request("GET", "/v1/sandboxes/" + sid).json()
            self.assertEqual(got["status"], "error", got)
            self.assertIn("the guest stopped answering", got.get("error_message", ""), got)
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)
        self.assertEqual(qemu_pids(s.data_dir), [])

    def test_z_a_restarted_server_adopts_its_vms_and_drops_the_ended(self):
        # A SIGKILLed server leaves its VMs running (QEMU has a session and cgroups of its own).
        # The restarted server adopts each: the same VM (its /tmp, a tmpfs in the guest's RAM,
        # and its kernel's boot id are as they were), commands run and destroy ends it. A VM
        # that ended while no server ran is dropped and leaves nothing. QEMU must not hold the
        # server's listening socket either, or the restart cannot bind.
        s = self.server
        keep = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()["id"]
        ended = s.request("POST", "/v1/sandboxes", {"template": "base"}).json()["id"]
        try:
            before = s.run(keep, "echo kept > /tmp/mark; cat /proc/sys/kernel/random/boot_id")
            self.assertEqual(before["exit_code"], 0, before)
            self.assertEqual(len(qemu_pids(s.data_dir)), 2)
            s.kill9()
            self.assertEqual(len(qemu_pids(s.data_dir)), 2)  # they outlive the server
            os.kill(qemu_pid_of(s.data_dir, ended), signal.SIGKILL)  # one ends meanwhile
            deadline = time.monotonic() + 10
            while qemu_pid_of(s.data_dir, ended) and time.monotonic() < deadline:
                time.sleep(0.1)
            s.start()
            got = s.request("GET", "/v1/sandboxes/" + keep).json()
            self.assertEqual(got["status"], "running", got)
            after = s.run(keep, "cat /tmp/mark /proc/sys/kernel/random/boot_id")
            self.assertEqual(after["stdout"], "kept\n" + before["stdout"], after)
            self.assertEqual(s.request("GET", "/v1/sandboxes/" + ended, check=False).status, 404)
            self.assertFalse(os.path.exists(os.path.join(s.data_dir, "microvm-sandboxes", ended)))
            self.assertEqual(len(qemu_pids(s.data_dir)), 1)
            # Adopted twice: the guest serves its port again each time the host comes back.
            s.kill9()
            s.start()
            self.assertEqual(s.run(keep, "cat /tmp/mark")["stdout"], "kept\n")
        finally:
            for sid in (keep, ended):
                s.request("DELETE", "/v1/sandboxes/" + sid, check=False)
        self.assertEqual(qemu_pids(s.data_dir), [])
        self.assertEqual(sorted(os.listdir(os.path.join(s.data_dir, "microvm-sandboxes"))),
                         [".images", ".seeds"])  # the caches alone: no VM's files are left

    def test_qemu_runs_jailed_and_leaves_nothing(self):
        # docs/adr/0026-qemu-jail.md: a guest that breaks out of its kernel into QEMU finds an
        # unprivileged uid of its own, namespaces of its own, a root holding only /usr and the
        # VM's own files, no capabilities, no_new_privs and seccomp, inside the VM's cgroups.
        s = self.server
        sid = s.request("POST", "/v1/sandboxes", {"template": "base", "memory_mb": 256}).json()["id"]
        try:
            (pid,) = qemu_pids(s.data_dir)
            st = status_fields(pid)
            uids = [int(x) for x in st["Uid"].split()]
            gids = [int(x) for x in st["Gid"].split()]
            self.assertEqual(len(set(uids)), 1, st["Uid"])
            self.assertGreaterEqual(uids[0], 1_000_000_000, st["Uid"])  # a uid range of its own
            self.assertEqual(set(gids), {uids[0]}, st["Gid"])
            self.assertEqual(st["Groups"].strip(), "", st)
            self.assertEqual(int(st["CapEff"], 16), 0, st)
            self.assertEqual(int(st["CapPrm"], 16), 0, st)
            self.assertEqual(st["NoNewPrivs"].strip(), "1", st)
            self.assertEqual(st["Seccomp"].strip(), "2", st)  # QEMU's own filter (-sandbox on)
            for ns in ("user", "pid", "mnt", "net", "ipc", "uts", "cgroup"):
                self.assertNotEqual(os.readlink("/proc/%d/ns/%s" % (pid, ns)),
                                    os.readlink("/proc/self/ns/%s" % ns), ns)
            # Nothing of the host's tree but /usr, the loader's cache and the VM's files.
            root = "/proc/%d/root" % pid
            self.assertLessEqual(set(os.listdir(root)),
                                 {"usr", "etc", "proc", "dev", "vm", "guest", "lib", "lib64",
                                  "bin", "sbin", ".kvm"}, os.listdir(root))
            self.assertLessEqual(set(os.listdir(root + "/etc")), {"ld.so.cache"})
            self.assertEqual(sorted(os.listdir(root + "/guest")),
                             ["initrd", "rootfs.img", "vmlinuz"])
            self.assertEqual(sorted(os.listdir(root + "/vm")),
                             ["config.img", "console.sock", "sandboxd.sock", "workspace.img"])
            self.assertFalse(os.path.exists(root + "/var"))
            # The VM's cgroups bound QEMU: memory above the guest's 256 MiB (QEMU's own share)
            # but not unbounded; threads counted.
            with open("/proc/%d/cgroup" % pid) as f:
                lines = [l.strip().split(":", 2) for l in f]
            cg = {ctrl: path for _, ctrl, path in lines}
            mem_dir = None
            if "memory" in cg and os.path.isdir("/sys/fs/cgroup/memory"):
                mem_dir = "/sys/fs/cgroup/memory" + cg["memory"]
                limit_file = mem_dir + "/memory.limit_in_bytes"
            elif "" in cg:
                mem_dir = "/sys/fs/cgroup" + cg[""]
                limit_file = mem_dir + "/memory.max"
            self.assertIn(sid, mem_dir)
            with open(limit_file) as f:
                limit = int(f.read())
            self.assertGreater(limit, 256 << 20)
            self.assertLess(limit, 1 << 30)
        finally:
            self.assertEqual(s.request("DELETE", "/v1/sandboxes/" + sid, check=False).status, 204)
        self.assertEqual(qemu_pids(s.data_dir), [])
        self.assertFalse(os.path.exists(mem_dir), mem_dir)  # cgroups removed
        registry = "/run/agent-sandbox/uid-ranges"
        for name in os.listdir(registry) if os.path.isdir(registry) else []:
            with open(os.path.join(registry, name)) as f:
                self.assertNotIn(sid, f.read())  # the uid range released

    def test_backends_names_microvm_and_its_accelerator(self):
        r = self.server.request("GET", "/v1/backends")
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["default"], "microvm")
        # The default first; ns runs beside it (a create may still ask for it).
        self.assertEqual([x["name"] for x in body["backends"]], ["microvm", "ns"], body)
        b = body["backends"][0]
        self.assertEqual((b["name"], b["available"]), ("microvm", True), b)
        # KVM only where a test boot under it worked; these machines fall back to TCG.
        self.assertIn(b["accelerator"], ("kvm", "tcg"), b)
        if not os.path.exists("/dev/kvm"):
            self.assertEqual(b["accelerator"], "tcg", b)
        self.assertFalse(b["capabilities"]["network"])

    def test_a_server_killed_during_its_kvm_test_boot_leaves_no_qemu(self):
        # With --microvm-accel auto and a /dev/kvm, a server that must pick the accelerator
        # boots the guest once under KVM to see whether it works. A server SIGKILLed during that
        # boot left its QEMU behind for good (on a /dev/kvm that takes only PVM guests it spins
        # in the host kernel: 18 of them ate these 2 cores once); it now dies with the server.
        if not os.path.exists("/dev/kvm"):
            self.skipTest("no /dev/kvm: no KVM test boot to interrupt")
        srv = Server(env={"AGENT_SANDBOX_BACKEND": "microvm", "AGENT_SANDBOX_NETWORK": "false",
                          "AGENT_SANDBOX_MICROVM_GUEST": GUEST})
        srv.port = free_port()
        self.addCleanup(shutil.rmtree, srv.data_dir, True)  # it makes no sandbox to clean up
        with open(srv.log_path, "ab") as log:
            proc = subprocess.Popen([BIN, "serve"], env=srv.env(), stdout=log,
                                    stderr=subprocess.STDOUT)

        def probes():  # the test boots' QEMUs (their kernel command line says asb.probe=1)
            out = []
            for pid in os.listdir("/proc"):
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as f:
                        if b"asb.probe=1" in f.read():
                            with open("/proc/%s/stat" % pid) as st:
                                ppid = int(st.read().rsplit(")", 1)[1].split()[1])
                            out.append((int(pid), ppid))
                except (OSError, ValueError):
                    continue
            return out

        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not any(pp == proc.pid for _, pp in probes()):
                time.sleep(0.05)
            mine = [p for p, pp in probes() if pp == proc.pid]
            if not mine:
                self.skipTest("the accelerator was decided without a test boot in time")
        finally:
            proc.kill()
            proc.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(p in mine for p, _ in probes()):
            time.sleep(0.05)
        self.assertEqual([p for p, _ in probes() if p in mine], [])

    def test_unsupported_options_are_refused_clearly(self):
        # This server has no host network (test_network_microvm.py tests one that has).
        r = self.server.request("POST", "/v1/sandboxes", {"template": "base", "network": True},
                                check=False)
        self.assertEqual(r.status, 400, r)
        self.assertIn("networking is not enabled", r.json()["error"]["message"], r)


if __name__ == "__main__":
    main()
