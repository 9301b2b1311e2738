"""Restart: the server is SIGKILLed while sandboxes run; the next start adopts the
running ones with their original expires_at, drops records whose sandbox is gone, destroys
resources it owns that no record names, and touches nothing else. Also: a graceful SIGTERM lets
an in-flight exec finish."""

import os
import threading
import time
import unittest

from harness import (Server, kill_sandbox, main, missing_prerequisite, sandbox_leftovers,
                     sandbox_pids)


def cgroup_of(pid, controller="pids"):
    """(mount, relative path) of `pid`'s cgroup for a v1 controller, or None."""
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if controller in ctrls.split(","):
                return "/sys/fs/cgroup/" + controller, path
    return None


class RestartTest(unittest.TestCase):
    def setUp(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        self.server = Server()
        self.cleanups = []
        try:
            self.server.start()
        except Exception:
            self.server.close()  # tearDown does not run when setUp fails
            raise

    def tearDown(self):
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:
                print("cleanup: %s" % e)
        self.server.close()

    def test_l6_sigkill_then_restart(self):
        s = self.server
        keep = s.create(timeout_seconds=600)
        lost = s.create(timeout_seconds=600)
        self.assertEqual(s.put_file(keep["id"], "notes.txt", b"survives").status, 200)
        s.run(keep["id"], "sleep 1000 >/dev/null 2>&1 &")

        # An orphan we own (state dir and cgroup with no record), and things we do not own.
        orphan = "sb_" + os.urandom(8).hex()
        os.makedirs(os.path.join(s.data_dir, "sandboxes", orphan))
        pid = sandbox_pids(keep["id"])[0]
        cg = cgroup_of(pid)
        orphan_cg = None
        if cg:
            mount, path = cg
            parent = os.path.dirname(path.rstrip("/"))
            if os.path.basename(path) != keep["id"]:
                parent = os.path.dirname(parent)
            orphan_cg = os.path.join(mount, parent.lstrip("/"), orphan)
            os.mkdir(orphan_cg)
            self.cleanups.append(lambda: os.path.isdir(orphan_cg) and os.rmdir(orphan_cg))
            foreign_cg = os.path.join(mount, "asb-e2e-foreign-" + os.urandom(4).hex())
            os.mkdir(foreign_cg)
            self.cleanups.append(lambda: os.rmdir(foreign_cg))
        foreign_file = os.path.join(s.data_dir, "sandboxes", "not-a-sandbox")
        with open(foreign_file, "w") as f:
            f.write("keep me")

        s.kill9()
        # The sandbox `lost` dies while the server is down.
        kill_sandbox(lost["id"])
        self.assertEqual(sandbox_pids(lost["id"]), [])
        self.assertTrue(sandbox_pids(keep["id"]), "sandbox died with the server")

        s.start()
        g = s.request("GET", "/v1/sandboxes/" + keep["id"])
        self.assertEqual(g.status, 200, g)
        self.assertEqual(g.json()["status"], "running")
        self.assertEqual(g.json()["expires_at"], keep["expires_at"])
        self.assertEqual(s.get_file(keep["id"], "notes.txt").body, b"survives")
        self.assertEqual(s.run(keep["id"], "echo adopted")["stdout"], "adopted\n")
        self.assertIn("sleep 1000", s.run(keep["id"], "ps -eo args")["stdout"])
        gone = s.request("GET", "/v1/sandboxes/" + lost["id"])
        self.assertEqual(gone.status, 404, gone)
        ids = [x["id"] for x in s.request("GET", "/v1/sandboxes").json()["sandboxes"]]
        self.assertEqual(ids, [keep["id"]])
        self.assertEqual(sandbox_leftovers(s, lost["id"]), [])
        # Owned leftovers are destroyed; what is not ours stays.
        self.assertFalse(os.path.exists(os.path.join(s.data_dir, "sandboxes", orphan)))
        if orphan_cg:
            self.assertFalse(os.path.exists(orphan_cg), orphan_cg)
            self.assertTrue(os.path.isdir(foreign_cg))
        with open(foreign_file) as f:
            self.assertEqual(f.read(), "keep me")

    def test_sigterm_lets_in_flight_requests_finish(self):
        s = self.server
        sid = s.create()["id"]
        result = {}

        def slow():
            result["r"] = s.exec(sid, {"command": "sleep 2; echo finished", "timeout": 30})

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.5)
        t0 = time.time()
        s.proc.send_signal(15)
        code = s.proc.wait(30)
        t.join(30)
        self.assertEqual(code, 0, s.log_tail())
        self.assertLess(time.time() - t0, 15)
        r = result["r"]
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["stdout"], "finished\n")
        with self.assertRaises(OSError):
            s.request("GET", "/healthz", timeout=2)
        # Sandboxes outlive a graceful stop too, and are adopted by the next start.
        self.assertTrue(sandbox_pids(sid))
        s.start()
        self.assertEqual(s.run(sid, "echo back")["stdout"], "back\n")


if __name__ == "__main__":
    main()
