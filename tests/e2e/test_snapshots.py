"""Over HTTP (ADR 0008): snapshots, rollback, fork, portable archives."""

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import unittest

from harness import ServerTestCase, main, parse_time

SNAP_RE = re.compile(r"^snap_[0-9a-f]{16}$")

# A tree with every file type a workspace may hold.
TREE = r"""
set -e
cd /workspace
mkdir -p src/pkg empty/dir
printf 'hello\n' > src/a.txt
printf '#!/bin/sh\necho run\n' > src/run.sh && chmod 755 src/run.sh
printf 'secret' > src/private && chmod 600 src/private
ln -s a.txt src/link
ln src/a.txt src/hard
truncate -s 64M sparse.bin && printf 'end' >> sparse.bin
head -c 100000 /dev/urandom > src/pkg/blob
"""

MANIFEST = ("cd /workspace && find . -printf '%p %y %m %s %l\\n' | sort && "
            "md5sum src/pkg/blob sparse.bin && stat -c '%h' src/a.txt")
# Owners too (as the sandbox sees them): an image moved between sandboxes must keep them.
OWNERS = "cd /workspace && find . -printf '%p %U:%G %m\\n' | sort"


def zstd(data):
    return subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def unzstd(data):
    return subprocess.run(["zstd", "-q", "-d", "-c"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def tar_with(members):
    """members: list of (TarInfo, bytes-or-None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name, data=b"x", type_=tarfile.REGTYPE, **kw):
    info = tarfile.TarInfo(name)
    info.type = type_
    if type_ == tarfile.REGTYPE:
        info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info, (data if type_ == tarfile.REGTYPE else None)


class SnapshotsTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_SNAPSHOT_BYTES": str(200 << 20),
                  "AGENT_SANDBOX_MAX_SNAPSHOTS_PER_SANDBOX": "5",
                  "AGENT_SANDBOX_MAX_FILE_BYTES": str(8 << 20)}

    def snapshot(self, sid, name=None):
        body = json.dumps({"name": name}).encode() if name else None
        return self.server.request("POST", "/v1/sandboxes/%s/snapshots" % sid, body=body)

    def rollback(self, sid, snap):
        return self.server.request("POST", "/v1/sandboxes/%s/rollback" % sid,
                                   body=json.dumps({"snapshot_id": snap}).encode())

    def sh(self, sid, cmd, **kw):
        r = self.server.run(sid, cmd, **kw)
        return r

    def test_s1_s2_snapshot_and_rollback(self):
        sid = self.create()["id"]
        self.assertEqual(self.sh(sid, TREE)["exit_code"], 0)
        before = self.sh(sid, MANIFEST)["stdout"]
        r = self.snapshot(sid, "before-change")
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self.assertRegex(s["id"], SNAP_RE)
        self.assertEqual(s["sandbox_id"], sid)
        self.assertEqual(s["name"], "before-change")
        self.assertEqual(s["template"], "base")
        self.assertGreater(s["size_bytes"], 0)
        self.assertIn("created_at", s)
        # The sparse 64 MiB file must not make a 64 MiB archive.
        self.assertLess(s["size_bytes"], 4 << 20)

        # Change everything: content, modes, new files, a deleted file, processes, /tmp.
        change = ("cd /workspace && printf changed > src/a.txt && chmod 700 src/run.sh && "
                  "rm src/private && mkdir newdir && touch newdir/new new.txt && "
                  "echo tmpdata > /tmp/junk")
        self.assertEqual(self.sh(sid, change)["exit_code"], 0)
        self.server.exec(sid, {"command": "nohup sleep 1000 >/dev/null 2>&1 &"})
        self.assertIn("sleep", self.sh(sid, "ps -eo comm")["stdout"])
        self.assertNotEqual(self.sh(sid, MANIFEST)["stdout"], before)

        r = self.rollback(sid, s["id"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["id"], sid)
        self.assertEqual(r.json()["source_snapshot_id"], s["id"])
        self.assertEqual(self.sh(sid, MANIFEST)["stdout"], before)
        self.assertEqual(self.sh(sid, "cat /workspace/src/a.txt")["stdout"], "hello\n")
        self.assertNotIn("sleep", self.sh(sid, "ps -eo comm")["stdout"])
        self.assertEqual(self.sh(sid, "ls -A /tmp")["stdout"], "")
        self.assertEqual(self.sh(sid, "./src/run.sh")["stdout"], "run\n")
        g = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(g["source_snapshot_id"], s["id"])
        # A rollback is not an origin: it was not forked from anything (the console said
        # "Forked from snap_..." for it); the rollback is said apart, with its time.
        self.assertIsNone(g["forked_from_snapshot_id"])
        self.assertEqual(g["last_rollback"]["snapshot_id"], s["id"])
        self.assertGreaterEqual(parse_time(g["last_rollback"]["at"]), parse_time(g["created_at"]))

        lst = self.server.request("GET", "/v1/snapshots?sandbox_id=" + sid)
        self.assertEqual(lst.status, 200)
        self.assertEqual([x["id"] for x in lst.json()["snapshots"]], [s["id"]])
        one = self.server.request("GET", "/v1/snapshots/" + s["id"])
        self.assertEqual(one.json(), s)

    def test_s3_fork_inherits_and_is_isolated(self):
        sid = self.create(env={"GREETING": "hi"}, memory_mb=256)["id"]
        self.assertEqual(self.sh(sid, "echo original > /workspace/f")["exit_code"], 0)
        snap = self.snapshot(sid).json()
        self.assertIsNone(snap["name"])
        r = self.server.request("POST", "/v1/snapshots/%s/fork" % snap["id"],
                                body=json.dumps({"cpus": 0.5}).encode())
        self.assertEqual(r.status, 201, r)
        fork = r.json()
        self._created.append(fork["id"])
        self.assertNotEqual(fork["id"], sid)
        self.assertEqual(fork["source_snapshot_id"], snap["id"])
        self.assertEqual((fork["forked_from_snapshot_id"], fork["last_rollback"]),
                         (snap["id"], None))
        # Its origin outlives a rollback of its own.
        own = self.snapshot(fork["id"]).json()
        self.assertEqual(self.rollback(fork["id"], own["id"]).status, 200)
        after = self.server.request("GET", "/v1/sandboxes/" + fork["id"]).json()
        self.assertEqual((after["forked_from_snapshot_id"], after["last_rollback"]["snapshot_id"],
                          after["source_snapshot_id"]), (snap["id"], own["id"], own["id"]))
        self.assertEqual(fork["memory_mb"], 256)
        self.assertEqual(fork["cpus"], 0.5)
        self.assertEqual(fork["env_keys"], ["GREETING"])
        self.assertEqual(self.sh(fork["id"], "cat /workspace/f; echo $GREETING")["stdout"],
                         "original\nhi\n")
        self.sh(fork["id"], "echo forked > /workspace/f; touch /workspace/only-fork")
        self.assertEqual(self.sh(sid, "cat /workspace/f; ls /workspace | grep -v lost+found")
                         ["stdout"], "original\nf\n")

    def test_s4_outlive_delete_and_bad_ids(self):
        sid = self.create()["id"]
        self.sh(sid, "echo keep > /workspace/k")
        snap = self.snapshot(sid).json()
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 204)
        self.assertEqual(self.server.request("GET", "/v1/snapshots/" + snap["id"]).status, 200)
        r = self.server.request("POST", "/v1/snapshots/%s/fork" % snap["id"])
        self.assertEqual(r.status, 201, r)
        fid = r.json()["id"]
        self._created.append(fid)
        self.assertEqual(self.sh(fid, "cat /workspace/k")["stdout"], "keep\n")

        self.assertEqual(self.server.request("DELETE", "/v1/snapshots/" + snap["id"]).status, 204)
        self.assertError(self.server.request("GET", "/v1/snapshots/" + snap["id"]), 404,
                         "not_found")
        # The snapshot is a body field of rollback: 400 naming it (404 is for the sandbox).
        r = self.rollback(fid, snap["id"])
        self.assertError(r, 400, "invalid_request")
        self.assertIn("snapshot_id", r.json()["error"]["message"])
        self.assertError(self.server.request("DELETE", "/v1/snapshots/" + snap["id"]), 404,
                         "not_found")
        for bad in ["snap_../../etc", "snap_0123456789abcdef/x", "../x", "snap_zz"]:
            r = self.server.request("GET", "/v1/snapshots/" + bad)
            self.assertEqual(r.status, 404, (bad, r))
        self.assertError(self.rollback(fid, "snap_0123/4567"), 400, "invalid_request")
        self.assertError(self.rollback("sb_0000000000000000", "snap_0123"), 404, "not_found")
        self.assertFalse(os.path.exists(os.path.join(self.server.data_dir, "snapshots",
                                                     snap["id"] + ".tar.zst")))

    def test_s5_failed_rollback_leaves_sandbox_as_it_was(self):
        # A snapshot whose content does not fit the target's 16 MiB workspace: the import
        # fails part-way (ENOSPC), and the previous workspace must come back.
        big = self.create(workspace_mb=64)["id"]
        self.sh(big, "head -c 15500000 /dev/urandom > /workspace/big.bin")
        snap = self.snapshot(big).json()
        small = self.create(workspace_mb=16)["id"]
        self.assertEqual(self.sh(small, TREE.replace("64M", "8M"))["exit_code"], 0)
        before = self.sh(small, MANIFEST)["stdout"]
        r = self.rollback(small, snap["id"])
        self.assertError(r, 413, "payload_too_large")
        self.assertEqual(self.sh(small, MANIFEST)["stdout"], before)
        g = self.server.request("GET", "/v1/sandboxes/" + small).json()
        self.assertEqual(g["status"], "running")
        self.assertIsNone(g["source_snapshot_id"])
        # A corrupt archive is refused before anything is touched.
        snap2 = self.snapshot(small).json()
        # The archive is made on first use; make it now, then damage it.
        self.assertEqual(self.server.request(
            "GET", "/v1/snapshots/%s/archive" % snap2["id"]).status, 200)
        path = os.path.join(self.server.data_dir, "snapshots", snap2["id"] + ".tar.zst")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
        # Its image too (where the backend keeps one): a damaged image is not used, and the
        # damaged archive is refused before anything is touched.
        for img in image_paths(self.server, snap2["id"]):
            with open(img, "r+b") as f:
                f.truncate(os.path.getsize(img) // 2)
        self.sh(small, "echo after > /workspace/after")
        r = self.rollback(small, snap2["id"])
        self.assertGreaterEqual(r.status, 400, r)
        self.assertEqual(self.sh(small, "cat /workspace/after")["stdout"], "after\n")

    def test_archive_round_trip_between_servers(self):
        sid = self.create()["id"]
        self.assertEqual(self.sh(sid, TREE)["exit_code"], 0)
        before = self.sh(sid, MANIFEST)["stdout"]
        snap = self.snapshot(sid, "export-me").json()
        a = self.server.request("GET", "/v1/snapshots/%s/archive" % snap["id"])
        self.assertEqual(a.status, 200, a)
        # Made on demand from the image: the snapshot's stored bytes now include the archive.
        stored = self.server.request("GET", "/v1/snapshots/" + snap["id"]).json()["size_bytes"]
        self.assertGreaterEqual(stored, len(a.body))
        names = tarfile.open(fileobj=io.BytesIO(unzstd(a.body))).getnames()
        self.assertIn("src/link", names)
        # Upload it as a new snapshot and fork from it.
        u = self.server.request("POST", "/v1/snapshots?name=imported", body=a.body,
                                headers={"Content-Type": "application/zstd"})
        self.assertEqual(u.status, 201, u)
        up = u.json()
        self.assertRegex(up["id"], SNAP_RE)
        self.assertIsNone(up["sandbox_id"])
        self.assertEqual(up["name"], "imported")
        r = self.server.request("POST", "/v1/snapshots/%s/fork" % up["id"])
        self.assertEqual(r.status, 201, r)
        fid = r.json()["id"]
        self._created.append(fid)
        self.assertEqual(self.sh(fid, MANIFEST)["stdout"], before)
        # Sparse stays sparse: 64 MiB apparent, little allocated.
        du = int(self.sh(fid, "du -k /workspace/sparse.bin | cut -f1")["stdout"])
        self.assertLess(du, 8 * 1024)

    def test_hostile_archives_rejected(self):
        cases = {
            "absolute": tar_with([member("/etc/evil")]),
            "dotdot": tar_with([member("a/../../evil")]),
            "device": tar_with([member("dev", type_=tarfile.CHRTYPE, devmajor=1, devminor=3)]),
            "hardlink-out": tar_with([member("h", type_=tarfile.LNKTYPE, linkname="../x")]),
        }
        for name, data in cases.items():
            r = self.server.request("POST", "/v1/snapshots", body=zstd(data))
            self.assertError(r, 400, "invalid_request")
        self.assertError(self.server.request("POST", "/v1/snapshots", body=b"not an archive"),
                         400, "invalid_request")
        # A zip bomb: 300 MiB of zeros compress to a few KiB; the limit is 200 MiB.
        bomb = tar_with([member("zeros", b"\0" * (300 << 20))])
        r = self.server.request("POST", "/v1/snapshots", body=zstd(bomb))
        self.assertError(r, 413, "payload_too_large")
        lst = self.server.request("GET", "/v1/snapshots").json()["snapshots"]
        self.assertEqual([s for s in lst if s["sandbox_id"] is None and s["name"] is None], [])
        left = [n for n in os.listdir(os.path.join(self.server.data_dir, "snapshots"))
                if n.startswith(".")]
        self.assertEqual(left, [])

    def test_snapshot_count_limit(self):
        sid = self.create()["id"]
        ids = []
        for _ in range(5):
            r = self.snapshot(sid)
            self.assertEqual(r.status, 201, r)
            ids.append(r.json()["id"])
        self.assertError(self.snapshot(sid), 429, "limit_exceeded")
        for i in ids:
            self.server.request("DELETE", "/v1/snapshots/" + i)
        self.assertEqual(self.snapshot(sid).status, 201)

    def test_image_fork_and_rollback_are_exact_and_isolated(self):
        sid = self.create()["id"]
        self.assertEqual(self.sh(sid, TREE)["exit_code"], 0)
        self.sh(sid, "cd /workspace && mkdir rootdir && chown 0:0 rootdir", user="root")
        before, owners = self.sh(sid, MANIFEST)["stdout"], self.sh(sid, OWNERS)["stdout"]
        self.assertIn("./rootdir 0:0 755", owners)
        self.assertIn("./src/a.txt 1000:1000 644", owners)
        snap = self.snapshot(sid).json()
        self.assertTrue(image_paths(self.server, snap["id"]), "no image kept")
        self.assertIn("snapshot %s image:" % snap["id"], self.server.log_tail(400))

        r = self.server.request("POST", "/v1/snapshots/%s/fork" % snap["id"])
        self.assertEqual(r.status, 201, r)
        fid = r.json()["id"]
        self._created.append(fid)
        self.assertIn("sandbox_id=%s forked from %s (image)" % (fid, snap["id"]),
                      self.server.log_tail(400))
        self.assertEqual(self.sh(fid, MANIFEST)["stdout"], before)
        self.assertEqual(self.sh(fid, OWNERS)["stdout"], owners)
        # Writes go one way only, in both directions; the fork's user owns what it writes.
        self.assertEqual(self.sh(fid, "cd /workspace && echo fork > src/a.txt && touch f-only && "
                                      "stat -c %u f-only")["stdout"], "1000\n")
        self.sh(sid, "cd /workspace && echo src > src/pkg/new && rm src/hard")
        self.assertEqual(self.sh(sid, "cat /workspace/src/a.txt; ls /workspace/f-only")
                         ["exit_code"], 2)
        self.assertEqual(self.sh(fid, "cat /workspace/src/a.txt; ls src/pkg/new src/hard")
                         ["stdout"], "fork\nsrc/hard\n")

        # Rollback of the source through the image: exact tree, modes, owners, content.
        self.sh(sid, "cd /workspace && chmod 600 src/run.sh && rm -r empty && mkdir x")
        self.server.exec(sid, {"command": "cd /workspace && nohup sleep 1000 >/dev/null 2>&1 &"})
        self.sh(sid, "echo junk > /tmp/junk")
        r = self.rollback(sid, snap["id"])
        self.assertEqual(r.status, 200, r)
        self.assertIn("sandbox_id=%s rolled back to %s (image, " % (sid, snap["id"]),
                      self.server.log_tail(400))
        self.assertEqual(self.sh(sid, MANIFEST)["stdout"], before)
        self.assertEqual(self.sh(sid, OWNERS)["stdout"], owners)
        # sandboxd's own file operations (files API, tar export) see the new workspace too.
        self.assertEqual(self.server.get_file(sid, "src/a.txt").body, b"hello\n")
        self.assertEqual(self.server.put_file(sid, "via-api", b"x").status, 200)
        self.assertEqual(self.sh(sid, "cat /workspace/via-api")["stdout"], "x")
        again = self.snapshot(sid).json()
        a = self.server.request("GET", "/v1/snapshots/%s/archive" % again["id"])
        names = tarfile.open(fileobj=io.BytesIO(unzstd(a.body))).getnames()
        self.assertIn("via-api", names)
        self.assertNotIn("x", names)
        self.server.request("DELETE", "/v1/snapshots/" + again["id"])
        self.assertNotIn("sleep", self.sh(sid, "ps -eo comm")["stdout"])
        self.assertEqual(self.sh(sid, "ls -A /tmp")["stdout"], "")
        # The rolled-back workspace is writable and its quota unchanged.
        self.assertEqual(self.sh(sid, "echo again > /workspace/again && cat /workspace/again")
                         ["stdout"], "again\n")
        self.assertEqual(self.sh(sid, "df -m /workspace | tail -1 | awk '{print $2}'")
                         ["stdout"], self.sh(fid, "df -m /workspace | tail -1 | "
                                                  "awk '{print $2}'")["stdout"])
        # The fork is untouched by the source's rollback.
        self.assertEqual(self.sh(fid, "cat /workspace/src/a.txt")["stdout"], "fork\n")

    def test_workspace_directory_archives(self):
        sid = self.create()["id"]
        self.sh(sid, "mkdir -p /workspace/d/sub && echo one > /workspace/d/sub/f && "
                     "chmod 640 /workspace/d/sub/f")
        r = self.server.request("GET", "/v1/sandboxes/%s/archive?path=d" % sid)
        self.assertEqual(r.status, 200, r)
        t = tarfile.open(fileobj=io.BytesIO(r.body))
        self.assertIn("sub/f", t.getnames())
        self.assertEqual(t.getmember("sub/f").mode & 0o777, 0o640)
        up = tar_with([member("x/y.txt", b"uploaded"), member("x/z", b"#!", mode=0o755)])
        r = self.server.request("PUT", "/v1/sandboxes/%s/archive?path=target" % sid, body=up)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.sh(sid, "cat target/x/y.txt; stat -c %a target/x/z")["stdout"],
                         "uploaded755\n")
        # Over the download limit (AGENT_SANDBOX_MAX_FILE_BYTES here: 8 MiB): 413, not a
        # server holding the whole tar in memory.
        self.sh(sid, "head -c 9000000 /dev/urandom > /workspace/d/big")
        r = self.server.request("GET", "/v1/sandboxes/%s/archive?path=d" % sid)
        self.assertError(r, 413, "payload_too_large")
        bad = tar_with([member("../escape")])
        r = self.server.request("PUT", "/v1/sandboxes/%s/archive?path=target" % sid, body=bad)
        self.assertError(r, 400, "invalid_request")


def image_dirs(server):
    """Where the ns backend keeps snapshot images (plain or XFS pool layout)."""
    return [d for d in (os.path.join(server.data_dir, "sandboxes", ".images"),
                        os.path.join(server.data_dir, "xfs", "sandboxes", ".images"))
            if os.path.isdir(d)]


def image_paths(server, snap_id):
    return [p for p in (os.path.join(d, snap_id + ".img") for d in image_dirs(server))
            if os.path.exists(p)]


def staged_rollback(server, sid):
    for root in ("sandboxes", "xfs/sandboxes"):
        d = os.path.join(server.data_dir, root, sid)
        if any(os.path.exists(os.path.join(d, n))
               for n in ("workspace.next.img", ".workspace.next.tmp")):
            return True
    return False


class SnapshotXfsPoolTest(ServerTestCase):
    """--workspace-pool=xfs: images on the server's own reflink XFS loop file (ext4 host)."""
    SERVER_ENV = {"AGENT_SANDBOX_WORKSPACE_POOL": "xfs", "AGENT_SANDBOX_WORKSPACE_POOL_GB": "8"}

    @classmethod
    def setUpClass(cls):
        if not any(os.access(os.path.join(d, "mkfs.xfs"), os.X_OK)
                   for d in ("/usr/sbin", "/sbin", "/usr/bin")):
            raise unittest.SkipTest("mkfs.xfs not installed (xfsprogs)")
        super().setUpClass()

    def test_reflink_fork_and_rollback_survive_a_restart(self):
        pool = os.path.join(self.server.data_dir, "xfs")
        self.assertEqual(subprocess.run(["findmnt", "-n", "-o", "FSTYPE", pool],
                                        capture_output=True, text=True).stdout.strip(), "xfs")
        sid = self.create(workspace_mb=256)["id"]
        self.assertEqual(self.server.run(sid, TREE.replace("64M", "8M"))["exit_code"], 0)
        self.server.run(sid, "head -c 50000000 /dev/urandom > /workspace/big")
        before = self.server.run(sid, MANIFEST + " && md5sum big")["stdout"]
        snap = self.server.request("POST", "/v1/sandboxes/%s/snapshots" % sid).json()
        self.assertIn("snapshot %s image: reflink" % snap["id"], self.server.log_tail(400))
        r = self.server.request("POST", "/v1/snapshots/%s/fork" % snap["id"])
        self.assertEqual(r.status, 201, r)
        fid = r.json()["id"]
        self._created.append(fid)
        self.assertEqual(self.server.run(fid, MANIFEST + " && md5sum big")["stdout"], before)
        self.server.run(fid, "echo fork >> /workspace/big")
        self.server.run(sid, "rm /workspace/big; echo gone > /workspace/src/a.txt")
        # A restart finds the pool mounted and adopts both sandboxes.
        self.server.kill9()
        self.server.start()
        self.assertNotEqual(self.server.run(fid, "md5sum big")["stdout"],
                            before.splitlines()[-1] + "\n")
        r = self.server.request("POST", "/v1/sandboxes/%s/rollback" % sid,
                                body=json.dumps({"snapshot_id": snap["id"]}).encode())
        self.assertEqual(r.status, 200, r)
        self.assertIn("rolled back to %s (image, reflink)" % snap["id"],
                      self.server.log_tail(400))
        self.assertEqual(self.server.run(sid, MANIFEST + " && md5sum big")["stdout"], before)


class SnapshotCrashTest(ServerTestCase):
    """SIGKILL of the server during a snapshot and during a rollback, then restart."""

    def state(self, sid):
        return self.server.run(sid, "cd /workspace && ls | grep -v lost+found; "
                                    "stat -c %s big.bin 2>/dev/null; cat marker 2>/dev/null")

    def test_kill_during_snapshot_and_rollback(self):
        import threading
        sid = self.create(workspace_mb=512)["id"]
        self.server.run(sid, "head -c 150000000 /dev/urandom > /workspace/big.bin")
        ok = self.server.request("POST", "/v1/sandboxes/%s/snapshots" % sid).json()
        snap_state = self.state(sid)["stdout"]
        snaps = os.path.join(self.server.data_dir, "snapshots")
        for action in ("snapshot", "rollback", "rollback-after-staging"):
            if action == "snapshot":
                path, body = "/v1/sandboxes/%s/snapshots" % sid, None
                under_way = lambda n: n.startswith(".tmp-snap_") or any(
                    m.startswith(".tmp-snap_") for d in image_dirs(self.server)
                    for m in os.listdir(d))
            else:
                # Change the workspace, then kill once the rollback saved it and is importing
                # (archive path) or is staging the image (image path); or, the second time, once
                # the staged image is complete: then a restart must finish the rollback.
                self.server.run(sid, "rm -f /workspace/big.bin; echo pre > /workspace/marker")
                path = "/v1/sandboxes/%s/rollback" % sid
                body = json.dumps({"snapshot_id": ok["id"]}).encode()
                staged = os.path.join(self.server.data_dir, "sandboxes", sid,
                                      "workspace.next.img")
                if action == "rollback":
                    under_way = lambda n: (n == ".rollback-%s.tar.zst" % sid or
                                           staged_rollback(self.server, sid))
                else:
                    under_way = lambda n: os.path.exists(staged)
            pre_state = self.state(sid)["stdout"]
            th = threading.Thread(target=lambda: self._quiet(path, body))
            th.start()
            deadline = time.time() + 30
            seen = False
            while time.time() < deadline and not seen and th.is_alive():
                seen = any(under_way(n) for n in os.listdir(snaps) + [""])
                time.sleep(0.002)
            if action == "rollback-after-staging" and not seen:
                th.join(30)  # the whole rollback ran between two polls: nothing to kill
                print("\n  (the staged image was never seen: rollback too fast)",
                      file=sys.stderr)
                continue
            self.assertTrue(seen, action)
            if action == "rollback":
                time.sleep(0.05)  # into the import of 150 MB
            self.server.kill9()
            th.join(30)
            self.server.start()
            lst = self.server.request("GET", "/v1/snapshots").json()["snapshots"]
            self.assertEqual([s["id"] for s in lst], [ok["id"]], action)
            self.assertEqual([n for n in os.listdir(snaps) if n != ok["id"] + ".tar.zst"], [],
                             action)
            for d in image_dirs(self.server):
                self.assertEqual([n for n in os.listdir(d) if n != ok["id"] + ".img"], [],
                                 action)
            self.assertFalse(staged_rollback(self.server, sid), action)
            self.assertEqual(self.server.run(sid, "echo alive")["stdout"], "alive\n", action)
            # Whole before or whole after, never half.
            now = self.state(sid)["stdout"]
            self.assertIn(now, (pre_state, snap_state), action)
            if action == "rollback-after-staging":
                # The staged image is complete and durable: the restart finishes the rollback.
                self.assertEqual(now, snap_state, action)
            log = self.server.log_tail(200)
            print("\n  killed mid-%s: workspace is the %s state%s" % (
                action, "earlier" if now == pre_state else "snapshot's",
                " (rolled forward from the staged image)" if "interrupted rollback finished"
                in log else " (restored from the saved copy)" if "interrupted rollback" in log
                else ""), file=sys.stderr)
        r = self.server.request("POST", "/v1/sandboxes/%s/rollback" % sid,
                                body=json.dumps({"snapshot_id": ok["id"]}).encode())
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.state(sid)["stdout"], snap_state)

    def _quiet(self, path, body):
        try:
            self.server.request("POST", path, body=body, timeout=60)
        except Exception:
            pass


if __name__ == "__main__":
    main()
