"""Crash safety (issue 11 item 3), the CI portion: crash_harness.py with 5 SIGKILLs of the
server at random points of create, snapshot, rollback, fork and destroy (seed printed; set
ASB_CRASH_SEED to replay, ASB_CRASH_KILLS for more). The long run is
`python3 tests/e2e/crash_harness.py --kills 100` (bench/README.md)."""

import os
import unittest

import crash_harness
from harness import main, missing_prerequisite


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


if __name__ == "__main__":
    main()
