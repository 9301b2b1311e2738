#!/usr/bin/env python3
"""The CLI as Docker, kubectl and E2B users expect it, against the real server:
cp of trees both ways, exec with stdin and with a real PTY (-it), global flags before or after
the verb, numbers printed as numbers; `code` (stdin into a stateful code context: output, the
result, figures saved as PNGs, exit codes 0/1/124) and `code-context`."""

import json
import os
import pty
import select
import signal
import stat
import subprocess
import tarfile
import io
import tempfile
import time
import unittest

from harness import BIN, TEMPLATES, ServerTestCase, main, parse_time


class CliTest(ServerTestCase):

    def env(self, **extra):
        e = dict(os.environ)
        e["AGENT_SANDBOX_URL"] = "http://127.0.0.1:%d" % self.server.port
        e.update(extra)
        return e

    def cli(self, *args, stdin=None, env=None, timeout=120):
        return subprocess.run([BIN] + list(args), env=env or self.env(), capture_output=True,
                              timeout=timeout, input=stdin,
                              stdin=None if stdin is not None else subprocess.DEVNULL)

    def sandbox(self):
        return self.create(memory_mb=256)["id"]

    def sh(self, sid, script):
        p = self.cli("exec", sid, "--", "sh", "-c", script)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.decode()

    # ---- cp ----------------------------------------------------------------------------------

    def make_tree(self, root):
        os.makedirs(os.path.join(root, "sub", "deep"))
        os.makedirs(os.path.join(root, "empty"))
        with open(os.path.join(root, "run.sh"), "w") as f:
            f.write("#!/bin/sh\necho run\n")
        os.chmod(os.path.join(root, "run.sh"), 0o750)
        with open(os.path.join(root, "sub", "deep", "data.bin"), "wb") as f:
            f.write(os.urandom(70000))
        os.chmod(os.path.join(root, "sub", "deep", "data.bin"), 0o600)
        os.symlink("sub/deep/data.bin", os.path.join(root, "link"))
        os.symlink("/etc/nowhere", os.path.join(root, "dangling"))
        os.chmod(os.path.join(root, "empty"), 0o700)

    def describe(self, root):
        """{relative path: (type, mode, content or link target)}"""
        out = {}
        for dirpath, dirs, files in os.walk(root):
            for name in dirs + files:
                p = os.path.join(dirpath, name)
                rel = os.path.relpath(p, root)
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = ("link", os.readlink(p))
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = ("dir", oct(st.st_mode & 0o7777))
                else:
                    with open(p, "rb") as f:
                        out[rel] = ("file", oct(st.st_mode & 0o7777), f.read())
        return out

    def test_cp_directory_both_ways_keeps_symlinks_modes_and_empty_dirs(self):
        sid = self.sandbox()
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "tree")
            self.make_tree(src)
            # Into a path that does not exist: becomes that directory (docker cp).
            up = self.cli("cp", src, sid + ":copy")
            self.assertEqual(up.returncode, 0, up.stderr)
            inside = self.sh(sid, "cd copy && find . | sort && stat -c '%n %a %F' run.sh empty "
                                  "sub/deep/data.bin && readlink link dangling && cat link | wc -c")
            self.assertIn("./empty\n", inside)
            self.assertIn("run.sh 750 regular file", inside)
            self.assertIn("empty 700 directory", inside)
            self.assertIn("sub/deep/data.bin 600 regular file", inside)
            self.assertIn("sub/deep/data.bin\n/etc/nowhere\n70000\n", inside)
            # Into an existing directory: lands below it under its own name.
            self.assertEqual(self.cli("cp", src, sid + ":copy").returncode, 0)
            self.assertIn("copy/tree/run.sh", self.sh(sid, "find copy/tree -name run.sh"))
            # And out again, into a new local directory: the same tree.
            back = os.path.join(d, "back")
            down = self.cli("cp", sid + ":copy", back)
            self.assertEqual(down.returncode, 0, down.stderr)
            expected = self.describe(src)
            got = self.describe(back)
            got = {k: v for k, v in got.items() if not k.startswith("tree")}
            self.assertEqual(got, expected)
            # Into an existing local directory: below it under its name.
            self.assertEqual(self.cli("cp", sid + ":copy", d).returncode, 0)
            self.assertEqual(
                {k: v for k, v in self.describe(os.path.join(d, "copy")).items()
                 if not k.startswith("tree")}, expected)

    def test_cp_tar_on_stdout_and_stdin(self):
        sid = self.sandbox()
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "tree")
            self.make_tree(src)
            self.assertEqual(self.cli("cp", src, sid + ":t").returncode, 0)
            out = self.cli("cp", sid + ":t", "-")
            self.assertEqual(out.returncode, 0, out.stderr)
            with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tf:
                names = {m.name: m for m in tf.getmembers()}
            self.assertTrue(names["link"].issym())
            self.assertEqual(names["link"].linkname, "sub/deep/data.bin")
            self.assertTrue(names["empty"].isdir())
            self.assertEqual(names["run.sh"].mode & 0o777, 0o750)
            # The same tar back in through stdin, into another directory.
            inp = self.cli("cp", "-", sid + ":again", stdin=out.stdout)
            self.assertEqual(inp.returncode, 0, inp.stderr)
            self.assertEqual(self.sh(sid, "readlink again/link; stat -c %a again/run.sh"),
                             "sub/deep/data.bin\n750\n")

    def test_cp_single_file_rename_and_into_dir(self):
        sid = self.sandbox()
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "a.txt")
            with open(f, "w") as fh:
                fh.write("hello\n")
            os.chmod(f, 0o640)
            self.assertEqual(self.cli("cp", f, sid + ":b.txt").returncode, 0)
            self.sh(sid, "mkdir -p dir")
            self.assertEqual(self.cli("cp", f, sid + ":dir").returncode, 0)
            self.assertEqual(self.sh(sid, "cat b.txt dir/a.txt; stat -c %a b.txt"),
                             "hello\nhello\n640\n")
            self.assertEqual(self.cli("cp", sid + ":b.txt", os.path.join(d, "c.txt")).returncode,
                             0)
            with open(os.path.join(d, "c.txt")) as fh:
                self.assertEqual(fh.read(), "hello\n")
            self.assertEqual(oct(os.stat(os.path.join(d, "c.txt")).st_mode & 0o777), "0o640")

    def test_cp_local_errors_are_one_line_and_125(self):
        sid = self.sandbox()
        with tempfile.TemporaryDirectory() as d:
            for args in ([os.path.join(d, "missing"), sid + ":x"],
                         [sid + ":nope", os.path.join(d, "y")],
                         [sid + ":", os.path.join(d, "no", "such", "dir", "z")]):
                p = self.cli("cp", *args)
                self.assertEqual(p.returncode, 125, (args, p.stderr))
                lines = p.stderr.decode().strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith("agent-sandbox: "), p.stderr)
            unreadable = os.path.join(d, "secret")
            os.makedirs(unreadable)
            os.chmod(unreadable, 0)
            # Root reads anything; drop to nobody for a real EACCES.
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                BIN, "cp", unreadable, sid + ":s"], env=self.env(),
                               capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"Permission denied", p.stderr)

    # ---- exec stdin and -it ------------------------------------------------------------------

    def test_exec_forwards_piped_stdin(self):
        sid = self.sandbox()
        p = subprocess.run([BIN, "exec", sid, "--", "cat"], env=self.env(), input=b"x\n",
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"x\n")
        p = subprocess.run("echo x | %s exec %s -- cat" % (BIN, sid), shell=True,
                           env=self.env(), capture_output=True, timeout=60)
        self.assertEqual(p.stdout, b"x\n")

    def read_until(self, fd, needle, timeout=30):
        """Reads the PTY until `needle`; what came after it stays for the next call."""
        buf = getattr(self, "_pending", b"")
        deadline = time.time() + timeout
        while needle not in buf:
            left = deadline - time.time()
            self.assertGreater(left, 0, "timed out waiting for %r; got %r" % (needle, buf))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                buf += chunk
        self.assertIn(needle, buf)
        at = buf.index(needle) + len(needle)
        self._pending = buf[at:]
        return buf[:at]

    def test_exec_it_is_a_real_terminal(self):
        sid = self.sandbox()
        import fcntl
        import struct
        import termios
        pid, fd = pty.fork()
        if pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 111, 0, 0))
            os.execve(BIN, [BIN, "exec", "-it", sid, "--", "sh"], self.env())
        try:
            os.write(fd, b"stty size; tty >/dev/null && echo IS-A-TTY\r")
            self.read_until(fd, b"33 111")
            self.read_until(fd, b"IS-A-TTY")
            # A resize reaches the process (SIGWINCH -> resize message).
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
            os.kill(pid, signal.SIGWINCH)
            time.sleep(0.5)
            os.write(fd, b"stty size\r")
            self.read_until(fd, b"40 120")
            # Ctrl-C interrupts the sleep inside; the shell and the CLI survive.
            os.write(fd, b"sleep 100\r")
            time.sleep(1.0)
            t0 = time.time()
            os.write(fd, b"\x03")
            self.read_until(fd, b"^C")
            os.write(fd, b"echo after-sleep $?\r")
            self.read_until(fd, b"after-sleep 130")
            self.assertLess(time.time() - t0, 20)
            os.write(fd, b"echo still-here\r")
            self.read_until(fd, b"still-here")
            os.write(fd, b"exit 3\r")
            _, status = os.waitpid(pid, 0)
            pid = 0
            self.assertTrue(os.WIFEXITED(status), status)
            self.assertEqual(os.WEXITSTATUS(status), 3)
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)

    def test_exec_it_without_a_terminal_on_stdin_is_refused(self):
        # As docker exec -it: a pipe into a PTY races the shell's raw mode and could hang.
        sid = self.sandbox()
        p = subprocess.run([BIN, "exec", "-it", sid, "--", "cat"], input=b"x\n",
                           capture_output=True, env=self.env(), timeout=60)
        self.assertNotEqual(p.returncode, 0, p)
        self.assertIn(b"the input device is not a TTY", p.stderr)
        p = subprocess.run([BIN, "exec", "-i", sid, "--", "cat"], input=b"x\n",
                           capture_output=True, env=self.env(), timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, b"x\n"), p)

    def test_exec_it_restores_the_terminal(self):
        sid = self.sandbox()
        import termios
        pid, fd = pty.fork()
        if pid == 0:
            before = termios.tcgetattr(0)
            p = subprocess.run([BIN, "exec", "-it", sid, "--", "sh", "-c", "exit 5"],
                               env=self.env())
            after = termios.tcgetattr(0)
            os._exit(p.returncode if before == after else 99)
        try:
            while True:
                try:
                    if not os.read(fd, 4096):
                        break
                except OSError:
                    break
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.WEXITSTATUS(status), 5)
        finally:
            os.close(fd)

    # ---- global flags, numbers ---------------------------------------------------------------

    def test_global_flags_before_and_after_the_verb(self):
        sid = self.sandbox()
        bad = self.env(AGENT_SANDBOX_URL="http://127.0.0.1:1")
        url = "http://127.0.0.1:%d" % self.server.port
        for args in (["--url", url, "inspect", sid], ["inspect", sid, "--url", url],
                     ["inspect", "--url", url, sid]):
            p = self.cli(*args, env=bad)
            self.assertEqual(p.returncode, 0, (args, p.stderr))
            self.assertEqual(json.loads(p.stdout)["id"], sid)
        for args in (["--json", "ls"], ["ls", "--json"]):
            p = self.cli(*args)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(sid, [s["id"] for s in json.loads(p.stdout)["sandboxes"]])
        # --url wins over the environment, also when it is the wrong one.
        p = self.cli("ls", "--url", "http://127.0.0.1:1")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"cannot connect", p.stderr)

    def test_docker_habits(self):
        # What a docker user types, each of which failed (a new user's first hour, round 3).
        sid = self.sandbox()
        # -e takes one value: `exec -e K=V ID -- cmd` (was rc 125, "cmd is required").
        p = self.cli("exec", "-e", "K=V", sid, "--", "sh", "-c", "echo $K")
        self.assertEqual((p.returncode, p.stdout), (0, b"V\n"), p.stderr)
        p = self.cli("exec", "-e", "K=V", "-e", "J=W", "-w", "/tmp", sid, "sh", "-c",
                     "echo $K$J $PWD")
        self.assertEqual((p.returncode, p.stdout), (0, b"VW /tmp\n"), p.stderr)
        # Everything after the id is the command, with or without --.
        p = self.cli("exec", sid, "ls", "-la", "/workspace")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"total", p.stdout)
        p = self.cli("exec", sid, "sh", "-c", "exit 3")
        self.assertEqual(p.returncode, 3, p.stderr)
        # ls -q: ids only.
        p = self.cli("ls", "-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(sid, p.stdout.decode().split())
        self.assertTrue(all(x.startswith("sb_") for x in p.stdout.decode().split()), p.stdout)
        # logs: a background process's output from the start, like docker logs -f.
        p = self.cli("exec", "-d", sid, "--", "sh", "-c", "echo early; sleep 1; echo late")
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = p.stdout.decode().split()[0]
        time.sleep(0.3)
        p = self.cli("logs", sid, pid)
        self.assertEqual((p.returncode, p.stdout), (0, b"early\nlate\n"), p.stderr)
        # rm of an unknown id: docker's message and exit 1; the known one is still removed.
        other = self.server.create(memory_mb=256)["id"]
        p = self.cli("rm", "sb_0000000000000000", other)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"No such sandbox: sb_0000000000000000", p.stderr)
        self.assertEqual(p.stdout, other.encode() + b"\n")
        # An unknown verb names the closest one.
        p = self.cli("lgos", sid)
        self.assertEqual(p.returncode, 125)
        self.assertIn(b'unknown command "lgos"; did you mean "logs"?', p.stderr)
        # A template that is not built says how to build it.
        p = self.cli("create", "--template", "nosuchtemplate")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"not built here", p.stderr)
        self.assertIn(b"agent-sandbox template build nosuchtemplate", p.stderr)

    def test_numbers_print_as_numbers(self):
        sid = self.create(memory_mb=256, cpus=0.5)["id"]
        for args in (["inspect", sid], ["ls", "--json"]):
            text = self.cli(*args).stdout.decode()
            self.assertNotRegex(text, r":\s*-?\d+(\.\d+)?[eE]", text)
        text = self.cli("inspect", sid).stdout.decode()
        self.assertRegex(text, r'"cpus": 0\.5\b')
        self.assertRegex(text, r'"memory_mb": 256\b')


    # ---- snapshot verbs ----------------------------------------------------------------------

    def test_snapshot_rollback_fork_verbs(self):
        sid = self.sandbox()
        self.sh(sid, "echo one > f")
        snap = self.cli("snapshot", "--name", "one", sid)
        self.assertEqual(snap.returncode, 0, snap.stderr)
        snap_id = snap.stdout.decode().strip()
        self.assertIn(snap_id, self.cli("snapshots").stdout.decode())
        self.sh(sid, "echo two > f")
        rb = self.cli("rollback", sid, snap_id)
        self.assertEqual(rb.returncode, 0, rb.stderr)
        self.assertEqual(self.sh(sid, "cat f"), "one\n")
        fork = self.cli("fork", snap_id)
        self.assertEqual(fork.returncode, 0, fork.stderr)
        forked = fork.stdout.decode().strip()
        self._created.append(forked)
        self.assertEqual(self.sh(forked, "cat f"), "one\n")
        self.assertEqual(self.cli("net", "--json", sid).returncode in (0, 125), True)
        idle = self.cli("create", "--idle-timeout", "123", "--json")
        self.assertEqual(idle.returncode, 0, idle.stderr)
        created = json.loads(idle.stdout)
        self._created.append(created["id"])
        self.assertEqual(created["idle_timeout_seconds"], 123)
        self.server.request("DELETE", "/v1/snapshots/" + snap_id, check=False)
        # A sandbox id forks it as it runs: one line per child, no snapshot left.
        kids = self.cli("fork", "--count", "2", "--timeout", "120", sid)
        self.assertEqual(kids.returncode, 0, kids.stderr)
        ids = kids.stdout.decode().split()
        self._created.extend(ids)
        self.assertEqual(len(ids), 2, ids)
        for k in ids:
            self.assertEqual(self.sh(k, "cat f"), "one\n")
        self.assertNotIn("snap_", self.cli("snapshots").stdout.decode())
        # Snapshot-only flags on a sandbox, and --count on a snapshot, are refused clearly.
        bad = self.cli("fork", "--memory-mb", "256", sid)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("keep its limits", bad.stderr.decode())
        bad = self.cli("fork", "--count", "2", "snap_0123456789abcdef")
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("--count forks a running sandbox", bad.stderr.decode())

    def test_pause_and_resume_verbs(self):
        made = self.cli("create", "--auto-pause", "--json")
        self.assertEqual(made.returncode, 0, made.stderr)
        created = json.loads(made.stdout)
        sid = created["id"]
        self._created.append(sid)
        self.assertIs(created["auto_pause"], True)
        woke = self.cli("create", "--auto-resume", "--json")
        self.assertEqual(woke.returncode, 0, woke.stderr)
        self._created.append(json.loads(woke.stdout)["id"])
        self.assertIs(json.loads(woke.stdout)["auto_resume"], True)
        p = self.cli("pause", sid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode().strip(), sid)
        # A command on a paused sandbox is the server's 409: one line, exit 125.
        e = self.cli("exec", sid, "--", "true")
        self.assertEqual(e.returncode, 125, e.stdout)
        self.assertIn(b"paused: resume it first", e.stderr)
        again = self.cli("pause", sid)
        self.assertEqual(again.returncode, 125)
        self.assertIn(b"already paused", again.stderr)
        r = self.cli("resume", "--timeout", "300", sid)
        self.assertEqual(r.returncode, 0, r.stderr)
        got_id, expires = r.stdout.decode().split()
        self.assertEqual(got_id, sid)
        self.assertAlmostEqual(parse_time(expires), time.time() + 300, delta=15)
        self.assertEqual(self.sh(sid, "echo back"), "back\n")
        j = self.cli("pause", "--json", sid)
        self.assertEqual(j.returncode, 0, j.stderr)
        self.assertEqual(json.loads(j.stdout)["status"], "paused")
        j = self.cli("resume", "--json", sid)
        self.assertEqual(j.returncode, 0, j.stderr)
        self.assertEqual(json.loads(j.stdout)["status"], "running")
        # Files only: the pause keeps the workspace, the resume starts it afresh.
        self.sh(sid, "echo kept > note.txt")
        j = self.cli("pause", "--keep-memory=false", "--json", sid)
        self.assertEqual(j.returncode, 0, j.stderr)
        self.assertEqual((json.loads(j.stdout)["status"], json.loads(j.stdout)["paused_memory"]),
                         ("paused", False))
        r = self.cli("resume", "--keep-memory=false", sid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.sh(sid, "cat note.txt"), "kept\n")
        files_only = self.cli("create", "--auto-pause", "--auto-pause-keep-memory=false", "--json")
        self.assertEqual(files_only.returncode, 0, files_only.stderr)
        self._created.append(json.loads(files_only.stdout)["id"])
        self.assertIs(json.loads(files_only.stdout)["auto_pause_keep_memory"], False)
        bad = self.cli("pause", "--keep-memory=maybe", sid)
        self.assertNotEqual(bad.returncode, 0)

    def test_create_with_an_idempotency_key_is_retry_safe(self):
        key = "cli-retry-%d" % os.getpid()
        first = self.cli("create", "--idempotency-key", key, "--memory-mb", "128")
        self.assertEqual(first.returncode, 0, first.stderr)
        sid = first.stdout.decode().strip()
        self._created.append(sid)
        before = len(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"])
        again = self.cli("create", "--idempotency-key", key, "--memory-mb", "128")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout.decode().strip(), sid)
        after = len(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"])
        self.assertEqual(after, before)
        # The same key with another body is the server's 409, as one error line and exit 125.
        other = self.cli("create", "--idempotency-key", key, "--memory-mb", "256")
        self.assertEqual(other.returncode, 125, other.stdout)
        self.assertIn(b"conflict", other.stderr)
        # A control byte never reaches the request head.
        bad = self.cli("create", "--idempotency-key", "a\nb")
        self.assertEqual(bad.returncode, 125)
        self.assertIn(b"printable ASCII", bad.stderr)

    # ---- code (ADR 0019) ----------------------------------------------------------------------

    def python_sandbox(self):
        if not os.path.isdir(os.path.join(TEMPLATES, "python", "rootfs")):
            self.skipTest("template python is not built (agent-sandbox template build python)")
        return self.create(template="python", timeout_seconds=600)["id"]

    def test_code_runs_stdin_in_a_python_context(self):
        sid = self.python_sandbox()
        p = self.cli("code", sid, stdin=b"print(1+1)\n", timeout=180)
        self.assertEqual((p.returncode, p.stdout), (0, b"2\n"), p.stderr)
        # The default context keeps its state; the last expression's text is printed.
        self.assertEqual(self.cli("code", sid, stdin=b"x = 20").returncode, 0)
        p = self.cli("code", sid, stdin=b"import sys\nprint('to err', file=sys.stderr)\nx * 2 + 2")
        self.assertEqual((p.returncode, p.stdout), (0, b"42\n"), p.stderr)
        self.assertIn(b"to err\n", p.stderr)
        # An exception is exit 1 with its traceback on stderr (no colours when not a tty).
        p = self.cli("code", sid, stdin=b"def f():\n    return 1 / 0\nf()")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"ZeroDivisionError", p.stderr)
        self.assertNotIn(b"\x1b[", p.stderr)
        # --timeout is 124, as for exec (ADR 0005).
        p = self.cli("code", "--timeout", "1", sid, stdin=b"import time\ntime.sleep(30)")
        self.assertEqual(p.returncode, 124, p.stderr)
        # --json is the sync answer.
        p = self.cli("code", "--json", sid, stdin=b"x")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = json.loads(p.stdout)
        self.assertEqual(r["status"], "ok")
        self.assertEqual([x["data"]["text/plain"] for x in r["results"] if x["is_main_result"]],
                         ["20"])

    def test_code_saves_each_figure_as_a_png_in_the_current_directory(self):
        sid = self.python_sandbox()
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "code-1.png"), "wb").close()  # taken: never overwritten
            names = []
            for code in (b"import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\nplt.show()",
                         b"plt.bar(['a'], [1])\nplt.show()"):
                p = subprocess.run([BIN, "code", sid], env=self.env(), capture_output=True,
                                   timeout=180, input=code, cwd=d)
                self.assertEqual(p.returncode, 0, p.stderr)
                names += p.stderr.decode().split()
            self.assertEqual(names, ["code-2.png", "code-3.png"])
            self.assertEqual(os.path.getsize(os.path.join(d, "code-1.png")), 0)
            for name in names:
                with open(os.path.join(d, name), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_code_contexts_and_bash_in_base(self):
        sid = self.sandbox()
        p = self.cli("code-context", "create", "--language", "bash", sid, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        ctx = p.stdout.decode().strip()
        self.assertTrue(ctx.startswith("ctx_"), ctx)
        self.assertEqual(self.cli("code", "--context", ctx, sid, stdin=b"cd /tmp; X=5").returncode,
                         0)
        p = self.cli("code", "--context", ctx, sid, stdin=b"echo $X $PWD; echo e >&2")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, b"5 /tmp\n", b"e\n"))
        p = self.cli("code-context", "ls", sid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(ctx, p.stdout.decode())
        p = self.cli("code-context", "restart", sid, ctx)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cli("code", "--context", ctx, sid, stdin=b"echo \"[$X]\"")
        self.assertEqual(p.stdout, b"[]\n", p.stderr)
        self.assertEqual(self.cli("code-context", "rm", sid, ctx).returncode, 0)
        p = self.cli("code", "--context", ctx, sid, stdin=b"true")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"not_found", p.stderr)
        self.assertEqual(self.cli("code", sid, stdin=b"").returncode, 125)


class ServeFlagsTest(unittest.TestCase):

    def test_log_level_after_serve_starts_the_server(self):
        from harness import Server, free_port, missing_prerequisite
        if missing_prerequisite():
            self.skipTest(missing_prerequisite())
        s = Server()
        s.port = free_port()
        p = subprocess.Popen([BIN, "serve", "--log-level", "info"], env=s.env(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 20
            up = False
            while time.time() < deadline and p.poll() is None and not up:
                try:
                    up = s.request("GET", "/healthz", timeout=2).status == 200
                except OSError:
                    time.sleep(0.1)
            self.assertTrue(up, "serve --log-level info exited %s" % p.poll())
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn(b"info", err)  # logged at info
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            s.close()

class RunKillTest(unittest.TestCase):
    """`run` SIGKILLed leaves nothing behind (its watcher destroys the sandbox), and what a run
    killed together with its watcher left is removed by the next run."""

    RUN_ARGS = []  # run's options before --cidfile: its backend (test_backends.py: microvm)
    RUN_DIR = "run"  # where run keeps its sandboxes' claims and state, in the data dir

    def setUp(self):
        from harness import missing_prerequisite, TEMPLATES
        reason = missing_prerequisite()
        if reason:
            self.skipTest(reason)
        self.data = tempfile.mkdtemp(prefix="asb-e2e-run-", dir="/var/tmp")
        os.symlink(TEMPLATES, os.path.join(self.data, "templates"))
        self.env = dict(os.environ, AGENT_SANDBOX_DATA_DIR=self.data)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        # Whatever a failed test left: a run of `true` sweeps dead runs' sandboxes.
        subprocess.run([BIN, "run"] + self.RUN_ARGS + ["--", "true"], env=self.env,
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        import shutil
        from harness import wait_for_run_watchers
        wait_for_run_watchers(self.data)
        shutil.rmtree(self.data, ignore_errors=True)

    def start_run(self):
        cid = os.path.join(self.data, "cid-%d" % len(self.procs))
        p = subprocess.Popen([BIN, "run"] + self.RUN_ARGS +
                             ["--cidfile", cid, "--", "sleep", "1000"],
                             env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(cid) and os.path.getsize(cid) > 0:
                with open(cid) as f:
                    sid = f.read().strip()
                if self.sandboxd_pids(sid):
                    return p, sid
            time.sleep(0.1)
        self.fail("run did not start its sandbox")

    def sandboxd_pids(self, sid):
        from harness import sandbox_pids
        return sandbox_pids(sid)

    def leftovers(self, sid):
        left = []
        if self.sandboxd_pids(sid):
            left.append("processes %s" % self.sandboxd_pids(sid))
        with open("/proc/self/mountinfo") as f:
            for line in f:
                if sid in line:
                    left.append("mount " + line.split()[4])
        for root, dirs, _ in os.walk("/sys/fs/cgroup"):
            for d in dirs:
                if sid in d:
                    left.append("cgroup " + os.path.join(root, d))
            if root.count("/") > 6:
                dirs[:] = []
        for dev in os.listdir("/sys/block"):
            try:
                with open("/sys/block/%s/loop/backing_file" % dev) as f:
                    if sid in f.read():
                        left.append("loop device " + dev)
            except OSError:
                pass
        run_dir = os.path.join(self.data, self.RUN_DIR)
        for name in os.listdir(run_dir) if os.path.isdir(run_dir) else []:
            if name.startswith(sid):
                left.append("run dir entry " + name)
        return left

    def wait_clean(self, sid, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline and self.leftovers(sid):
            time.sleep(0.2)
        return self.leftovers(sid)

    def watcher_of(self, run_pid):
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read()
                with open("/proc/%s/comm" % p, "rb") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            # A fork of run named run-watch while it waits; exec'd as `run-watch` to destroy.
            if ppid == run_pid and (comm == b"run-watch" or b"run-watch" in cmd):
                return int(p)
        return None

    def test_sigkilled_run_leaves_nothing(self):
        p, sid = self.start_run()
        self.assertTrue(self.leftovers(sid))  # the sandbox is there while it runs
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.assertEqual(self.wait_clean(sid), [])

    def test_a_run_whose_watcher_died_destroys_its_sandbox_itself(self):
        # A command that ends hands the teardown to the watcher; with the watcher gone, run
        # must do it before it exits, not leave it to the next run.
        cid = os.path.join(self.data, "cid-ends")
        p = subprocess.Popen([BIN, "run"] + self.RUN_ARGS +
                             ["--cidfile", cid, "--", "sh", "-c", "sleep 3; echo done"],
                             env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        self.procs.append(p)
        deadline = time.time() + 60
        watcher = None
        while time.time() < deadline and watcher is None:
            watcher = self.watcher_of(p.pid)
            time.sleep(0.05)
        self.assertIsNotNone(watcher, "run has no watcher")
        os.kill(watcher, signal.SIGKILL)
        out, _ = p.communicate(timeout=120)
        self.assertEqual((p.returncode, out), (0, b"done\n"))
        with open(cid) as f:
            sid = f.read().strip()
        self.assertEqual(self.leftovers(sid), [])  # at once: run destroyed it before exiting

    def test_leftover_of_a_run_killed_with_its_watcher_is_removed_by_the_next_run(self):
        p, sid = self.start_run()
        watcher = self.watcher_of(p.pid)
        self.assertIsNotNone(watcher, "run has no watcher")
        os.kill(watcher, signal.SIGKILL)
        p.send_signal(signal.SIGKILL)
        p.wait()
        time.sleep(2)
        self.assertTrue(self.leftovers(sid), "expected a leftover to be planted")
        # A live run's sandbox is not a leftover: it survives the sweep.
        live, live_sid = self.start_run()
        self.assertEqual(self.wait_clean(sid), [])
        self.assertTrue(self.sandboxd_pids(live_sid), "the live run's sandbox was removed")
        self.assertIsNone(live.poll())
        live.send_signal(signal.SIGTERM)
        live.wait(timeout=60)
        self.assertEqual(self.wait_clean(live_sid), [])


if __name__ == "__main__":
    main()
