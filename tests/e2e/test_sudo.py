#!/usr/bin/env python3
"""ADR 0028: a sandbox's `sudo` (sandboxd relaying the command) in real sandboxes, driven
through the real server: root as confined as the API's root, the caller's stdio, exit statuses
and signals, sudo's environment reset, timeouts reaching the command, hostile use bounded, and
`python` in the base template (E2B's base has both). The same on a microVM where QEMU and the
guest are here (else that class skips with the reason).
"""
import os
import unittest

from harness import TEMPLATES, ServerTestCase, main
from test_pause_microvm import MICROVM_ENV, OnMicrovm

# Everything the kernel says about a process's confinement.
CONFINEMENT = ("grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp)'"
               " /proc/self/status; cat /proc/self/cgroup")


class SudoTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        sudo = os.path.join(TEMPLATES, "base", "rootfs", "usr", "bin", "sudo")
        # Not a skip: scripts/test.sh builds base with the builder that leaves it.
        assert os.path.isfile(sudo), "%s is missing: rebuild the base template" % sudo
        cls.sid = cls.server.create(pids_limit=256)["id"]

    def sh(self, command, **kw):
        return self.server.run(self.sid, command, **kw)

    def test_sudo_runs_the_command_as_root_and_back_as_the_sandbox_user(self):
        r = self.sh("id -u; sudo id -u; sudo whoami; sudo -u sandbox id -u; sudo -n true && "
                    "echo fine; sudo -l | tail -1")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].split("\n")[:5], ["1000", "0", "root", "1000", "fine"], r)
        self.assertIn("NOPASSWD: ALL", r["stdout"])

    def test_root_by_sudo_is_exactly_as_confined_as_the_apis_root(self):
        by_api = self.sh(CONFINEMENT, user="root")
        by_sudo = self.sh("sudo sh -c \"$C\"", env={"C": CONFINEMENT})
        self.assertEqual(by_api["exit_code"], 0, by_api)
        self.assertEqual(by_sudo["exit_code"], 0, by_sudo)
        self.assertEqual(by_sudo["stdout"], by_api["stdout"])
        self.assertIn("NoNewPrivs:\t1", by_sudo["stdout"])
        self.assertIn("Seccomp:\t2", by_sudo["stdout"])

    def test_the_callers_stdio_pipes_and_exit_status_reach_the_command(self):
        r = self.sh("echo in | sudo sh -c 'read x; echo out:$x; echo err >&2; exit 7'; "
                    "echo status $?")
        self.assertEqual(r["stdout"], "out:in\nstatus 7\n", r)
        self.assertEqual(r["stderr"], "err\n", r)
        # Redirections are the caller's: the file is opened by the sandbox user's shell.
        r = self.sh("sudo sh -c 'id -u' > /workspace/by-root.txt && cat /workspace/by-root.txt "
                    "&& stat -c %U /workspace/by-root.txt")
        self.assertEqual(r["stdout"], "0\nsandbox\n", r)
        # A command killed by a signal: sudo dies by the same one (the shell says 128+N).
        r = self.sh("sudo sh -c 'kill -TERM $$'; echo status $?")
        self.assertEqual(r["stdout"], "status 143\n", r)

    def test_signals_are_forwarded_to_the_command(self):
        r = self.sh("sudo sh -c 'trap \"echo got-term; exit 3\" TERM; echo ready; "
                    "while :; do sleep 0.05; done' & sleep 1; kill -TERM $!; wait $!; "
                    "echo status $?", timeout=20)
        self.assertEqual(r["stdout"], "ready\ngot-term\nstatus 3\n", r)

    def test_the_environment_is_reset_as_debians_sudo_does(self):
        r = self.sh("sudo env", env={"SECRET_TOKEN": "s3", "LC_ALL": "C.UTF-8"})
        env = dict(line.split("=", 1) for line in r["stdout"].splitlines() if "=" in line)
        self.assertNotIn("SECRET_TOKEN", env)
        self.assertEqual(env["LC_ALL"], "C.UTF-8")
        self.assertEqual(env["HOME"], "/root")
        self.assertEqual(env["USER"], "root")
        self.assertEqual(env["SUDO_USER"], "sandbox")
        self.assertEqual(env["SUDO_UID"], "1000")
        self.assertEqual(env["PATH"], "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        r = self.sh("sudo -E env | grep ^SECRET_TOKEN=; sudo FOO=bar sh -c 'echo $FOO'; "
                    "sudo -i pwd; cd /tmp && sudo pwd", env={"SECRET_TOKEN": "s3"})
        self.assertEqual(r["stdout"], "SECRET_TOKEN=s3\nbar\n/root\n/tmp\n", r)

    def test_an_exec_timeout_takes_the_root_command_with_it(self):
        r = self.sh("sudo sh -c 'sleep $((3000+77))'", timeout=1)
        self.assertIs(r["timed_out"], True, r)
        left = self.sh("sleep 0.5; ps -eo args | grep -c '^sleep 3077' || true", user="root")
        self.assertEqual(left["stdout"].strip(), "0", left)
        # sudo's own parent gone (the client killed): the command goes too.
        r = self.sh("sudo sleep $((3000+78)) & sleep 0.5; kill -KILL $!; sleep 0.5; "
                    "ps -eo args | grep -c '^sleep 3078' || true")
        self.assertEqual(r["stdout"].strip(), "0", r)

    def test_bad_use_is_answered_as_sudo_does(self):
        r = self.sh("sudo")
        self.assertEqual(r["exit_code"], 1, r)
        self.assertIn("sudo: a command is required", r["stderr"])
        r = self.sh("sudo -u daemon id")
        self.assertEqual(r["exit_code"], 1, r)
        self.assertIn("unknown user daemon", r["stderr"])
        r = self.sh("sudo no-such-program-here")
        self.assertEqual(r["exit_code"], 127, r)
        self.assertIn("command not found", r["stderr"])
        r = self.sh("sudo -D /no/such/dir true")
        self.assertEqual(r["exit_code"], 1, r)
        self.assertIn("sudo: ", r["stderr"])
        r = self.sh("sudo -u root -g staff id")
        self.assertEqual(r["exit_code"], 1, r)

    def test_hostile_use_is_bounded(self):
        # More sudo commands than sandboxd serves at once: the rest are refused, nothing hangs,
        # and sandboxd still serves the host and sudo afterwards.
        # (Killing the sudo clients, the sandbox user's own processes, ends their commands.)
        r = self.sh("for i in $(seq 80); do sudo sleep 30 2>>/tmp/refused & p=\"$p $!\"; done; "
                    "sleep 3; cat /tmp/refused >&2; "
                    "grep -c 'too many sudo commands' /tmp/refused; kill $p 2>/dev/null; wait; "
                    "sleep 0.5; ps -eo args | grep -c '^sleep 30'; sudo id -u", timeout=60)
        lines = r["stdout"].split()
        self.assertGreaterEqual(int(lines[0]), 80 - 64, r)
        self.assertEqual(lines[1], "0", r)  # no root command outlived its sudo
        self.assertEqual(lines[-1], "0", r)
        # A request of the wrong shape straight at the socket: refused, sandboxd unharmed.
        probe = ("import socket\n"
                 "s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)\n"
                 "s.connect('\\0agent-sandbox/sudo')\n"
                 "s.send(b'asb-sudo/1\\0root\\0/\\0' + b'9' * 50 + b'\\0id\\0')\n"
                 "print(s.recv(1024).decode())\n")
        r = self.sh("python3 -c \"$P\"", env={"P": probe})
        self.assertTrue(r["stdout"].startswith("error "), r)
        self.assertEqual(self.sh("echo alive")["stdout"], "alive\n")

    def test_the_socket_is_the_sandboxs_own(self):
        # The abstract namespace is per network namespace: the host's has no such socket.
        with open("/proc/net/unix") as f:
            self.assertNotIn("@agent-sandbox/sudo", f.read())
        other = self.create()["id"]
        r = self.server.run(other, "sudo id -u")
        self.assertEqual(r["stdout"], "0\n", r)

    def test_python_is_python3_in_base(self):
        r = self.sh("python --version; python -c 'import sys; print(sys.version_info[0])'")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertTrue(r["stdout"].startswith("Python 3."), r)
        self.assertTrue(r["stdout"].endswith("\n3\n"), r)


class MicrovmSudoTest(OnMicrovm, ServerTestCase):
    SERVER_ENV = MICROVM_ENV

    def test_sudo_and_python_in_a_microvm(self):
        sid = self.create()["id"]
        r = self.server.run(sid, "sudo id -u; sudo -u sandbox id -u; "
                                 "echo in | sudo sh -c 'read x; echo $x; exit 5'; echo $?; "
                                 "python --version")
        self.assertEqual(r["exit_code"], 0, r)
        self.assertEqual(r["stdout"].split("\n")[:4], ["0", "1000", "in", "5"], r)
        self.assertIn("Python 3.", r["stdout"])
        by_api = self.server.run(sid, CONFINEMENT, user="root")
        by_sudo = self.server.run(sid, "sudo sh -c \"$C\"", env={"C": CONFINEMENT})
        self.assertEqual(by_sudo["stdout"], by_api["stdout"])


if __name__ == "__main__":
    main()
