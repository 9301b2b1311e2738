"""Seed B's clients against the real server (ADR 0007): seed B's REST contract and its Python
SDK's names (seed B: the FastAPI + Docker agent-sandbox, github.com/superintelligenceco/
agent-sandbox; its routes, `agent_sandbox.client` and README "See it work" session).

SeedBProgramTest runs a program written as a seed B user writes one, with seed B's names
(`from agent_sandbox.client import SandboxClient, ...`, `create(image=...)`, `exec(...,
timeout_seconds=...)`, `exec_stream` yielding ExecEvent, `list_sandboxes()`, ...), against our
SDK (sdk/python) and the real `agent-sandbox serve`. Each step is checked on its own and the run
ends with "N of M steps pass"; a step that fails is reported and, where later steps need what it
would have made, a fallback with our own names keeps the program going, so one missing name does
not hide the others. Seed B's images are OCI references; ours are templates, so the program
names the template "base" where a seed B user names "python:3.12-slim" (a reference answers 400
naming the templates, checked in SeedBCurlTest).

SeedBCurlTest sends seed B-shaped requests with curl (seed B README's `sb()` helper) and checks
the answers, then the aliases' edges: an alias and its canonical field both given with different
values, read_only_rootfs false, an argv list as `command`.
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import time
import traceback
import unittest

import harness
from harness import ServerTestCase, main

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python"))

IMAGE = "base"  # where a seed B user writes an OCI image, e.g. "python:3.12-slim"
API_KEY = "asb_" + os.urandom(24).hex()


def near(text, seconds, slack=60):
    """True when the RFC 3339 time `text` is about `seconds` from now."""
    return abs(harness.parse_time(text) - (time.time() + seconds)) < slack


class Program:
    """The seed B-style program as a list of named steps sharing state (self.*)."""

    def __init__(self):
        self.results = []  # (name, ok, detail)

    def step(self, name, fn, fallback=None):
        try:
            fn()
            self.results.append((name, True, ""))
        except Exception as e:  # a failed step is a finding, not the end of the program
            detail = "%s: %s" % (type(e).__name__, e)
            if not isinstance(e, AssertionError):
                detail += "\n" + traceback.format_exc(limit=3)
            self.results.append((name, False, detail))
            if fallback:
                fallback()

    def names(self):
        """Seed B's names, as `from agent_sandbox.client import ...` gives them; a name our SDK
        lacks falls back to ours (or None) so that the step that uses it fails on its own."""
        import agent_sandbox
        import agent_sandbox.client as c
        for n in ("SandboxClient", "Sandbox", "ExecResult", "ExecEvent", "SnapshotInfo",
                  "FileInfo", "SandboxAPIError"):
            setattr(self, n, getattr(c, n, getattr(agent_sandbox, n, None)))

    def run(self):
        self.names()
        self.step("import seed B's names from agent_sandbox.client", self.s_import)
        self.step("SandboxClient() from the environment, as a context manager",
                  self.s_client, fallback=lambda: setattr(self, "client", self.SandboxClient()))
        self.step("client.health()", self.s_health)
        self.step("client.create(image=, timeout_seconds=)", self.s_create,
                  fallback=lambda: setattr(self, "sb", self.client.create(
                      template=IMAGE, timeout_seconds=600)))
        self.step("Sandbox.status, .image, .expires_at", self.s_attrs)
        self.step("Sandbox.data is the server's JSON", self.s_data)
        self.step("repr(Sandbox) as seed B prints it", self.s_repr)
        self.step("exec(str) runs through /bin/sh -c", self.s_exec_string)
        self.step("exec(argv list) is never shell-expanded", self.s_exec_argv)
        self.step("a non-zero exit is a result, not an error", self.s_exec_exit)
        self.step("exec(timeout_seconds=) kills the command", self.s_exec_timeout)
        self.step("exec(env=, workdir=)", self.s_exec_env)
        self.step("ExecResult fields", self.s_exec_result)
        self.step("exec_stream yields ExecEvent(type, data, ..., exit_code, duration_ms)",
                  self.s_stream)
        self.step("exec_stream: stderr events and the exit code", self.s_stream_stderr)
        self.step("exec_stream(timeout_seconds=)", self.s_stream_timeout)
        self.step("write_file returns a FileInfo with .path", self.s_write)
        self.step("read_text / read_file, binary included", self.s_read)
        self.step("write_file(mode=0o755), then run it", self.s_mode)
        self.step("list_files() entries: name, path, type, size, modified_at", self.s_list_files)
        self.step("snapshot(name) -> SnapshotInfo with image and size_bytes", self.s_snapshot,
                  fallback=lambda: setattr(self, "snap", self.sb.snapshot("draft")))
        self.step("rollback(snapshot) returns the Sandbox, files restored", self.s_rollback)
        self.step("set_timeout(s).refresh().status", self.s_set_timeout)
        self.step("client.fork(snapshot_id, timeout_seconds=) as a context manager",
                  self.s_fork)
        self.step("forks in parallel (seed B's examples/parallel_forks.py)", self.s_parallel)
        self.step("client.get(id)", self.s_get)
        self.step("get_snapshot / list_snapshots equal the SnapshotInfo", self.s_snapshots)
        self.step("delete_snapshot, then get_snapshot is SandboxAPIError 404",
                  self.s_delete_snapshot)
        self.step("errors: SandboxAPIError with status_code 404 and code not_found",
                  self.s_error_404)
        self.step("an invalid create is a 4xx SandboxAPIError", self.s_error_400)
        self.step("create(image=, read_only_rootfs=True, network=False, env=), seed B's "
                  "defaults sent as its SDK sends them", self.s_create_defaults)
        self.step("write and run a Python app (seed B's quickstart)", self.s_quickstart)
        self.step("destroy(); exec_stream on it is SandboxAPIError 404", self.s_destroy)
        self.step("a second destroy() is SandboxAPIError 404, as seed B's", self.s_destroy_again)
        self.step("the with block tolerates a sandbox destroyed inside it", self.s_with_destroyed)
        self.step("list_sandboxes() is empty at the end", self.s_list_empty)
        self.step("leaving the client's with block closes it", self.s_close)
        return self.results

    # ---- the steps ----------------------------------------------------------------------

    def s_import(self):
        from agent_sandbox.client import (ExecEvent, ExecResult, FileInfo, Sandbox,  # noqa
                                          SandboxAPIError, SandboxClient, SnapshotInfo)

    def s_client(self):
        self.client = self.SandboxClient()
        assert self.client.__enter__() is self.client

    def s_health(self):
        h = self.client.health()
        assert h["status"] == "ok" and h["version"] and h["backend"], h

    def s_create(self):
        self.sb = self.client.create(image=IMAGE, timeout_seconds=600)

    def s_attrs(self):
        sb = self.sb
        assert (sb.status, sb.image) == ("running", IMAGE), (sb.status, sb.image)
        assert near(sb.expires_at, 600), sb.expires_at

    def s_data(self):
        d = self.sb.data
        assert d["id"] == self.sb.id and d["image"] == IMAGE, d
        assert d["read_only_rootfs"] is True and d["network"] is False, d

    def s_repr(self):
        r = repr(self.sb)
        assert r == "Sandbox(id=%r, image=%r, status='running')" % (self.sb.id, IMAGE), r

    def s_exec_string(self):
        r = self.sb.exec("echo hi && echo $((6 * 7)) | cat")
        assert (r.stdout, r.exit_code, r.ok) == ("hi\n42\n", 0, True), r

    def s_exec_argv(self):
        r = self.sb.exec(["printf", "%s\\n", "a b", "$HOME"])
        assert r.ok and r.stdout == "a b\n$HOME\n", r

    def s_exec_exit(self):
        r = self.sb.exec(["sh", "-c", "exit 3"])
        assert (r.exit_code, r.ok, r.timed_out) == (3, False, False), r

    def s_exec_timeout(self):
        t0 = time.time()
        r = self.sb.exec("sleep 30; echo never", timeout_seconds=1)
        assert r.timed_out and not r.ok and "never" not in r.stdout, r
        assert time.time() - t0 < 15, time.time() - t0

    def s_exec_env(self):
        r = self.sb.exec("pwd; echo $GREETING", env={"GREETING": "hi"}, workdir="/tmp")
        assert r.stdout == "/tmp\nhi\n", r

    def s_exec_result(self):
        r = self.sb.exec("echo out; echo err >&2")
        assert isinstance(r, self.ExecResult), type(r)
        assert (r.stdout, r.stderr, r.truncated, r.timed_out) == ("out\n", "err\n", False, False)
        assert isinstance(r.duration_ms, int) and r.duration_ms >= 0, r

    def s_stream(self):
        events = list(self.sb.exec_stream("for i in 1 2 3; do echo tick $i; sleep 0.1; done"))
        assert self.ExecEvent and all(isinstance(e, self.ExecEvent) for e in events), events
        out = [e for e in events if e.type == "stdout"]
        assert "".join(e.data for e in out) == "tick 1\ntick 2\ntick 3\n", events
        assert all(e.exit_code is None and e.duration_ms is None and not e.timed_out
                   for e in out), out
        last = events[-1]
        assert (last.type, last.data, last.exit_code, last.timed_out) == ("exit", "", 0, False)
        assert isinstance(last.duration_ms, int) and last.duration_ms >= 200, last

    def s_stream_stderr(self):
        events = list(self.sb.exec_stream("echo oops >&2; exit 4"))
        assert [(e.type, e.data) for e in events[:-1]] == [("stderr", "oops\n")], events
        assert (events[-1].type, events[-1].exit_code) == ("exit", 4), events

    def s_stream_timeout(self):
        events = list(self.sb.exec_stream("sleep 30", timeout_seconds=0.5))
        assert events[-1].type == "exit" and events[-1].timed_out, events

    def s_write(self):
        info = self.sb.write_file("notes.md", "draft")
        assert info.path == "/workspace/notes.md", info
        assert (info.name, info.type, info.size) == ("notes.md", "file", 5), info
        assert near(info.modified_at, 0), info

    def s_read(self):
        assert self.sb.read_text("notes.md") == "draft"
        blob = bytes(range(256)) * 4
        self.sb.write_file("data/blob.bin", blob)
        assert self.sb.read_file("/workspace/data/blob.bin") == blob

    def s_mode(self):
        self.sb.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
        assert self.sb.exec("./run.sh").stdout == "ran\n"

    def s_list_files(self):
        entries = self.sb.list_files()
        assert all(isinstance(e, self.FileInfo) for e in entries), entries
        by_name = {e.name: e for e in entries}
        assert {"notes.md", "run.sh", "data"} <= set(by_name), sorted(by_name)
        notes = by_name["notes.md"]
        assert (notes.path, notes.type, notes.size) == ("/workspace/notes.md", "file", 5), notes
        assert near(notes.modified_at, 0), notes

    def s_snapshot(self):
        snap = self.sb.snapshot("draft")
        self.snap = snap
        assert isinstance(snap, self.SnapshotInfo), type(snap)
        assert snap.id.startswith("snap_") and len(snap.id) == 21, snap
        assert (snap.sandbox_id, snap.name, snap.image) == (self.sb.id, "draft", IMAGE), snap
        assert snap.size_bytes > 0 and near(snap.created_at, 0), snap

    def s_rollback(self):
        self.sb.write_file("notes.md", "oops")
        same = self.sb.rollback(self.snap)
        assert same is self.sb, same
        assert self.sb.read_text("notes.md") == "draft"
        assert self.sb.data["source_snapshot_id"] == self.snap.id, self.sb.data

    def s_set_timeout(self):
        assert self.sb.set_timeout(120).refresh().status == "running"
        assert near(self.sb.expires_at, 120), self.sb.expires_at

    def s_fork(self):
        with self.client.fork(self.snap.id, timeout_seconds=300) as fork:
            assert isinstance(fork, self.Sandbox), type(fork)
            assert fork.read_text("notes.md") == "draft"
            assert (fork.image, fork.status) == (IMAGE, "running"), fork
            ids = {s.id for s in self.client.list_sandboxes()}
            assert ids == {self.sb.id, fork.id}, ids
            gone = fork.id
        try:
            self.client.get(gone)
        except self.SandboxAPIError as e:
            assert e.status_code == 404, e
        else:
            raise AssertionError("the fork outlived its with block")

    def s_parallel(self):
        candidates = {"loop": "def total(n):\n    s = 0\n    for i in range(n):\n        s += i\n"
                              "    return s\n",
                      "builtin": "def total(n):\n    return sum(range(n))\n",
                      "formula": "def total(n):\n    return n * (n - 1) // 2\n"}

        def trial(name):
            with self.client.fork(self.snap, timeout_seconds=300) as sandbox:
                sandbox.write_file("solution.py", candidates[name])
                r = sandbox.exec('python3 -c "import solution; print(solution.total(10))"')
                return name, r.stdout.strip() if r.ok else "failed: " + r.stderr

        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            got = dict(pool.map(trial, candidates))
        assert got == {name: "45" for name in candidates}, got

    def s_get(self):
        got = self.client.get(self.sb.id)
        assert (got.id, got.status, got.image) == (self.sb.id, "running", IMAGE), got

    def s_snapshots(self):
        assert self.client.get_snapshot(self.snap.id) == self.snap
        assert self.client.list_snapshots(self.sb.id) == [self.snap]

    def s_delete_snapshot(self):
        self.client.delete_snapshot(self.snap.id)
        try:
            self.client.get_snapshot(self.snap.id)
        except self.SandboxAPIError as e:
            assert (e.status_code, e.code) == (404, "not_found"), e
        else:
            raise AssertionError("the deleted snapshot is still there")

    def s_error_404(self):
        try:
            self.client.get("sb_missing")
        except self.SandboxAPIError as e:
            assert (e.status_code, e.code) == (404, "not_found") and e.message, e
        else:
            raise AssertionError("no error for sb_missing")

    def s_error_400(self):
        try:
            self.client.create(cpus=-1)
        except self.SandboxAPIError as e:
            # seed B answers 422 validation_error (FastAPI); ours is 400 invalid_request
            assert 400 <= e.status_code < 500 and e.code and "cpus" in e.message, e
        else:
            raise AssertionError("cpus -1 was accepted")

    def s_create_defaults(self):
        sb = self.client.create(image=IMAGE, network=False, read_only_rootfs=True,
                                env={"A": "1"})
        try:
            assert sb.exec("echo $A").stdout == "1\n"
            assert sb.data["read_only_rootfs"] is True
        finally:
            sb.destroy()

    def s_quickstart(self):
        self.sb.write_file("app.py",
                           "print('hello from', __import__('platform').python_version())\n")
        r = self.sb.exec("python3 app.py")
        assert r.ok and r.stdout.startswith("hello from 3."), r

    def s_destroy(self):
        self.sb.destroy()
        try:
            list(self.sb.exec_stream("echo x"))
        except self.SandboxAPIError as e:
            assert e.status_code == 404, e
        else:
            raise AssertionError("exec_stream on a destroyed sandbox did not fail")

    def s_destroy_again(self):
        try:
            self.sb.destroy()
        except self.SandboxAPIError as e:
            assert e.status_code == 404, e
        else:
            raise AssertionError("the second destroy answered nothing")

    def s_with_destroyed(self):
        with self.client.create(image=IMAGE) as sb:
            sb.destroy()

    def s_list_empty(self):
        assert self.client.list_sandboxes() == []

    def s_close(self):
        self.client.__exit__(None, None, None)
        try:
            self.client.health()
        except Exception:
            pass
        else:
            raise AssertionError("the closed client still answered")


class SeedBProgramTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": API_KEY}
    API_KEY = API_KEY

    def test_seed_b_program(self):
        # Seed B's SandboxClient() reads these, as ours does.
        os.environ["AGENT_SANDBOX_URL"] = "http://127.0.0.1:%d" % self.server.port
        os.environ["AGENT_SANDBOX_API_KEY"] = API_KEY
        results = Program().run()
        passed = sum(1 for _, ok, _ in results if ok)
        for name, ok, detail in results:
            print("%s  %s%s" % ("pass" if ok else "FAIL", name,
                                "" if ok else "\n      " + detail.replace("\n", "\n      ")))
        print("seed B program: %d of %d steps pass" % (passed, len(results)))
        self.assertEqual([n for n, ok, _ in results if not ok], [])


class SeedBCurlTest(ServerTestCase):
    """Seed B's REST contract with curl (its README's `sb()` helper), against the real server."""

    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": API_KEY}
    API_KEY = API_KEY

    def sb(self, args, status=None):
        """Runs `sb ARGS` as seed B's README defines sb(); returns (http status, body bytes)."""
        helper = ('sb() { curl -s -H "Authorization: Bearer $AGENT_SANDBOX_API_KEY" '
                  '-H "Content-Type: application/json" "$@"; }; ')
        env = dict(os.environ, API="http://127.0.0.1:%d/v1" % self.server.port,
                   AGENT_SANDBOX_API_KEY=API_KEY, SB=getattr(self, "sid", ""),
                   SNAP=getattr(self, "snap", ""))
        cmd = helper + "sb -w '\\n%{http_code}' " + args
        p = subprocess.run(["sh", "-c", cmd], capture_output=True, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        body, _, code = p.stdout.rpartition(b"\n")
        if status is not None:
            self.assertEqual(int(code), status, body)
        return int(code), body

    def sbj(self, args, status):
        return json.loads(self.sb(args, status)[1])

    def test_readme_session(self):
        # 1. Create (the README's image is an OCI reference; ours is a template name).
        s = self.sbj("""-X POST $API/sandboxes -d '{"image": "base", "timeout_seconds": 600}'""",
                     201)
        self._created.append(s["id"])
        self.sid = s["id"]
        self.assertRegex(s["id"], harness.ID_RE)
        self.assertEqual((s["image"], s["template"], s["status"]), ("base", "base", "running"))
        self.assertEqual((s["network"], s["read_only_rootfs"]), (False, True))
        self.assertTrue(near(s["expires_at"], 600), s)
        # 2. Write code, run it.
        w = self.sbj("""-X PUT "$API/sandboxes/$SB/files?path=app.py" """
                     """--data-binary 'print(sum(range(10)))'""", 200)
        self.assertEqual({k: w[k] for k in ("name", "path", "type", "size")},
                         {"name": "app.py", "path": "/workspace/app.py", "type": "file",
                          "size": 21})
        self.assertTrue(near(w["modified_at"], 0), w)
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec -d '{"command": "python3 app.py && id"}'""",
                     200)
        self.assertTrue(r["stdout"].startswith("45\nuid=1000"), r)
        self.assertEqual((r["stderr"], r["exit_code"], r["timed_out"], r["truncated"]),
                         ("", 0, False, False))
        self.assertIsInstance(r["duration_ms"], int)
        # 3. Snapshot.
        snap = self.sbj("""-X POST $API/sandboxes/$SB/snapshots -d '{"name": "working"}'""", 201)
        self.snap = snap["id"]
        self.addCleanup(self.server.request, "DELETE", "/v1/snapshots/" + snap["id"],
                        check=False)
        self.assertRegex(snap["id"], r"^snap_[0-9a-f]{16}$")
        self.assertEqual((snap["name"], snap["image"], snap["sandbox_id"]),
                         ("working", "base", self.sid))
        # 4. Break something.
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec """
                     """-d '{"command": "rm -rf /workspace/* && python3 app.py"}'""", 200)
        self.assertEqual(r["exit_code"], 2, r)
        self.assertIn("app.py", r["stderr"])
        # 5. Roll back, stream the next command.
        rb = self.sbj("-X POST $API/sandboxes/$SB/rollback "
                      """-d "{\\"snapshot_id\\": \\"$SNAP\\"}" """, 200)
        self.assertEqual((rb["id"], rb["status"], rb["source_snapshot_id"]),
                         (self.sid, "running", self.snap))
        _, body = self.sb("""-X POST $API/sandboxes/$SB/exec/stream """
                          """-d '{"command": "python3 app.py; ls -l"}'""", 200)
        events = [json.loads(line) for line in body.splitlines() if line.strip()]
        self.assertEqual(events[0], {"type": "stdout", "data": "45\n"})
        self.assertIn("app.py", "".join(e.get("data", "") for e in events))
        self.assertEqual((events[-1]["type"], events[-1]["exit_code"], events[-1]["timed_out"]),
                         ("exit", 0, False))
        # The rest of seed B's routes, as its SDK calls them.
        ls = self.sbj('"$API/sandboxes/$SB/files/list?path=/workspace"', 200)
        entry = [e for e in ls["entries"] if e["name"] == "app.py"][0]
        self.assertEqual((entry["path"], entry["type"], entry["size"]),
                         ("/workspace/app.py", "file", 21))
        self.assertEqual(entry["modified_at"], entry["mtime"])
        self.assertIn(self.sid, [x["id"] for x in self.sbj("$API/sandboxes", 200)["sandboxes"]])
        self.assertEqual(self.sbj("$API/sandboxes/$SB", 200)["image"], "base")
        snaps = self.sbj('"$API/snapshots?sandbox_id=$SB"', 200)["snapshots"]
        self.assertEqual([(x["id"], x["image"]) for x in snaps], [(self.snap, "base")])
        t = self.sbj("""-X POST $API/sandboxes/$SB/timeout -d '{"timeout_seconds": 120}'""", 200)
        self.assertTrue(near(t["expires_at"], 120), t)
        fork = self.sbj("""-X POST $API/snapshots/$SNAP/fork """
                        """-d '{"timeout_seconds": 300, "network": false, "cpus": 0.5, """
                        """"memory_mb": 256}'""", 201)
        self._created.append(fork["id"])
        self.assertEqual((fork["image"], fork["source_snapshot_id"]), ("base", self.snap))
        # 6. Clean up.
        self.assertEqual(self.sb("-X DELETE -o /dev/null $API/sandboxes/$SB")[0], 204)
        self.assertEqual(self.sb("-X DELETE -o /dev/null $API/sandboxes/$SB")[0], 404)

    def test_healthz(self):
        _, body = self.sb('"${API%/v1}/healthz"', 200)
        h = json.loads(body)
        self.assertEqual((h["status"], h["backend"]), ("ok", "ns"))
        self.assertTrue(h["version"])

    def test_command_as_argv_list(self):
        self.sid = self.create()["id"]
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec -d '{"command": ["sh", "-c", "exit 2"]}'""",
                     200)
        self.assertEqual(r["exit_code"], 2, r)
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec """
                     """-d '{"command": ["printf", "%s\\n", "a b", "$HOME"]}'""", 200)
        self.assertEqual(r["stdout"], "a b\n$HOME\n")
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec """
                     """-d '{"command": "sleep 30", "timeout_seconds": 0.5}'""", 200)
        self.assertTrue(r["timed_out"], r)
        # The same list as argv is no conflict.
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec """
                     """-d '{"command": ["echo", "x"], "argv": ["echo", "x"]}'""", 200)
        self.assertEqual(r["stdout"], "x\n")
        # Streams and background processes read the same fields.
        _, body = self.sb("""-X POST $API/sandboxes/$SB/exec/stream """
                          """-d '{"command": ["sh", "-c", "echo s; exit 5"]}'""", 200)
        events = [json.loads(x) for x in body.splitlines() if x.strip()]
        self.assertEqual((events[0]["data"], events[-1]["exit_code"]), ("s\n", 5), events)
        p = self.sbj("""-X POST $API/sandboxes/$SB/processes -d '{"command": ["sleep", "0"]}'""",
                     201)
        self.assertEqual((p["argv"], p["command"]), (["sleep", "0"], None))

    def test_alias_edges(self):
        self.sid = self.create()["id"]
        bad = [
            ("sandboxes", {"image": "base", "template": "go"}, "template and image"),
            ("sandboxes", {"image": "python:3.12-slim"}, "available: "),
            ("sandboxes", {"image": 5}, "image: must be a string"),
            ("sandboxes", {"read_only_rootfs": False}, "read_only_rootfs"),
            ("sandboxes", {"read_only_rootfs": "yes"}, "read_only_rootfs: must be a boolean"),
            ("sandboxes/$SB/exec", {"command": ["echo", "a"], "argv": ["echo", "b"]},
             "command and argv"),
            ("sandboxes/$SB/exec", {"command": []}, "command"),
            ("sandboxes/$SB/exec", {"command": ["echo", 1]}, "command: must be"),
            ("sandboxes/$SB/exec", {"command": {"sh": "x"}}, "command: must be"),
            ("sandboxes/$SB/exec", {"command": "echo", "argv": ["echo"]}, "not both"),
            ("sandboxes/$SB/exec", {"command": "true", "timeout": 1, "timeout_seconds": 2},
             "timeout and timeout_seconds"),
            ("sandboxes/$SB/exec/stream", {"command": ["a"], "argv": ["b"]}, "command and argv"),
            ("sandboxes/$SB/processes", {"command": [], "tag": "x"}, "command"),
        ]
        before = len(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"])
        for route, body, words in bad:
            code, data = self.sb("-X POST $API/%s -d '%s'" % (route, json.dumps(body)))
            self.assertEqual(code, 400, (route, body, data))
            err = json.loads(data)["error"]
            self.assertEqual(err["code"], "invalid_request", data)
            self.assertIn(words, err["message"], (route, body))
        after = len(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"])
        self.assertEqual(before, after, "a refused create made a sandbox")
        # Both names with the same value, and the value that describes what we do, pass.
        ok = self.sbj("""-X POST $API/sandboxes """
                      """-d '{"image": "base", "template": "base", "read_only_rootfs": true}'""",
                      201)
        self._created.append(ok["id"])
        self.assertEqual((ok["image"], ok["read_only_rootfs"]), ("base", True))
        r = self.sbj("""-X POST $API/sandboxes/$SB/exec """
                     """-d '{"command": "echo y", "timeout": 5, "timeout_seconds": 5}'""", 200)
        self.assertEqual(r["stdout"], "y\n")


if __name__ == "__main__":
    main()
