"""Crash safety (ADR 0014), the CI portion: crash_harness.py with 5 SIGKILLs of the
server at random points of create, snapshot, rollback, fork, a files-only pause and its resume,
and destroy (seed printed; set
ASB_CRASH_SEED to replay, ASB_CRASH_KILLS for more). The long run is
`python3 tests/e2e/crash_harness.py --kills 100` (bench/README.md)."""

import os
import subprocess
import unittest

import crash_harness
from harness import Server, main, missing_prerequisite


class CrashTest(unittest.TestCase):
    def test_sigkill_at_random_points_loses_and_leaks_nothing(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        seed = int(os.environ.get("ASB_CRASH_SEED") or int.from_bytes(os.urandom(4), "little"))
        kills = int(os.environ.get("ASB_CRASH_KILLS", "5"))
        h = crash_harness.run(kills, seed)
        self.assertEqual(h.kills, kills)
        self.assertEqual(h.failures, [], "seed %d" % seed)


class RollbackFileApiTest(unittest.TestCase):
    """Found by the harness's leak check: after a rollback (which replaces the mount at
    /workspace) sandboxd's file API kept its fd of the old workspace, so it read and wrote the
    old, deleted image (a file uploaded was invisible to commands) and kept its loop device
    attached."""

    def test_file_api_follows_a_rollback_and_the_old_image_is_released(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        s = Server().start()
        try:
            sid = s.create(memory_mb=128, pids_limit=64, workspace_mb=32)["id"]
            s.run(sid, "echo before > /workspace/a")
            r = s.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {})
            self.assertEqual(r.status, 201, r)
            snap = r.json()["id"]
            s.run(sid, "echo after > /workspace/a")
            r = s.request("POST", "/v1/sandboxes/%s/rollback" % sid, {"snapshot_id": snap})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(s.run(sid, "cat /workspace/a")["stdout"], "before\n")
            self.assertEqual(s.get_file(sid, "a").body, b"before\n")
            self.assertEqual(s.put_file(sid, "b", b"via api").status, 200)
            self.assertEqual(s.run(sid, "cat /workspace/b")["stdout"], "via api")
            loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
            stale = [l for l in loops.splitlines() if s.data_dir in l and "(deleted)" in l]
            self.assertEqual(stale, [])
        finally:
            s.close()


if __name__ == "__main__":
    main()
