#!/usr/bin/env python3
"""Fork of a running sandbox: POST /v1/sandboxes/{id}/fork {count, timeout_seconds} through the
real server (core/snapshot_service.h ForkSandbox). The children get the parent's template,
limits, env and command defaults and its workspace as it was at the fork, each its
own copy; the parent runs on; processes start fresh (`memory: false`). Children past a quota
answer 429 each and leave nothing; the fork's snapshot is never seen and never left behind;
one tenant cannot fork another's sandbox.
"""
import os
import time

from harness import ServerTestCase, main

ADMIN_KEY = "asb_" + os.urandom(24).hex()


def bearer(key):
    return {"Authorization": "Bearer " + key}


class ForkTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_SANDBOXES": "6", "AGENT_SANDBOX_MAX_FORK_COUNT": "8"}

    def fork(self, sid, body=None, headers=None):
        r = self.server.request("POST", "/v1/sandboxes/%s/fork" % sid, body, headers=headers)
        if r.status == 201:
            for f in r.json()["forks"]:
                if "sandbox" in f:
                    self._created.append(f["sandbox"]["id"])
        return r

    def snapshot_files(self):
        d = os.path.join(self.server.data_dir, "snapshots")
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def test_children_get_the_parents_state_at_the_fork_and_each_its_own(self):
        s = self.server
        parent = self.create(env={"ROLE": "parent-env"}, memory_mb=256, timeout_seconds=600)
        pid = parent["id"]
        self.assertEqual(s.run(pid, "mkdir -p app && echo v1 > app/state; echo in-tmp > /tmp/t; "
                                    "echo p > pre")["exit_code"], 0)
        # A process runs in the parent across the fork, and goes on after it.
        r = s.request("POST", "/v1/sandboxes/%s/processes" % pid,
                      {"command": "while :; do date +%s%N >> /workspace/ticks; sleep 0.2; done"})
        self.assertEqual(r.status, 201, r)
        snaps_before = s.request("GET", "/v1/snapshots").json()["snapshots"]
        r = self.fork(pid, {"count": 3, "timeout_seconds": 120})
        self.assertEqual(r.status, 201, r)
        forks = r.json()["forks"]
        self.assertEqual(len(forks), 3, forks)
        kids = [f["sandbox"] for f in forks]
        self.assertEqual([f["memory"] for f in forks], [False] * 3)
        self.assertEqual(len({k["id"] for k in kids} | {pid}), 4)
        for k in kids:
            self.assertEqual(k["status"], "running", k)
            self.assertEqual((k["template"], k["memory_mb"], k["backend"]),
                             (parent["template"], 256, parent["backend"]), k)
            self.assertEqual(k["env_keys"], ["ROLE"], k)
            self.assertEqual(k["timeout_seconds"], 120, k)
            self.assertEqual((k["default_workdir"], k["default_user"]),
                             (parent["default_workdir"], parent["default_user"]))
            out = s.run(k["id"], "cat app/state pre; echo $ROLE; test -e /tmp/t || echo no-tmp; "
                                 "pgrep -f 'date +%s' >/dev/null || echo no-loop")
            # The workspace as it was; /tmp and processes are the parent's own (no memory).
            self.assertEqual(out["stdout"], "v1\np\nparent-env\nno-tmp\nno-loop\n", out)
        # Each child's workspace is its own; the parent's later writes reach none of them.
        self.assertEqual(s.run(kids[0]["id"], "echo k0 > app/state")["exit_code"], 0)
        self.assertEqual(s.run(pid, "echo v2 > app/state")["exit_code"], 0)
        self.assertEqual(s.run(kids[1]["id"], "cat app/state")["stdout"], "v1\n")
        self.assertEqual(s.run(kids[0]["id"], "cat app/state")["stdout"], "k0\n")
        self.assertEqual(s.run(pid, "cat app/state")["stdout"], "v2\n")
        # The parent ran on: its loop still ticks after the fork.
        n = int(s.run(pid, "wc -l < ticks")["stdout"])
        time.sleep(1)
        self.assertGreater(int(s.run(pid, "wc -l < ticks")["stdout"]), n)
        got = s.request("GET", "/v1/sandboxes/" + pid).json()
        self.assertEqual(got["status"], "running")
        # The fork's snapshot is nobody's: not listed, and no file of it is left.
        self.assertEqual(s.request("GET", "/v1/snapshots").json()["snapshots"], snaps_before)
        self.assertEqual(self.snapshot_files(), [])
        # A child without a timeout takes the parent's.
        r = self.fork(pid, {})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["forks"][0]["sandbox"]["timeout_seconds"], 600)

    def test_bad_counts_and_unknown_sandboxes_are_refused_before_any_work(self):
        s = self.server
        sid = self.create()["id"]
        for body, field in (({"count": 0}, "count"), ({"count": 9}, "count"),
                            ({"count": -1}, "count"), ({"count": "2"}, "count"),
                            ({"count": 1, "cpus": 2}, "cpus"),
                            ({"timeout_seconds": 0}, "timeout_seconds")):
            r = self.fork(sid, body)
            self.assertEqual(r.status, 400, (body, r))
            self.assertEqual(r.json()["error"]["code"], "invalid_request", r)
            self.assertIn(field, r.json()["error"]["message"], (body, r))
        self.assertIn("between 1 and 8", self.fork(sid, {"count": 9}).json()["error"]["message"])
        r = self.fork(sid, b"{not json")
        self.assertEqual(r.status, 400, r)
        for bad in ("sb_0123456789abcdef", "nope", "sb_../../x"):
            r = s.request("POST", "/v1/sandboxes/%s/fork" % bad, {"count": 1})
            self.assertEqual(r.status, 404, (bad, r))
        # Nothing was made by any of them.
        listed = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual([x["id"] for x in listed], [sid])
        self.assertEqual(self.snapshot_files(), [])

    def test_children_past_the_quota_answer_429_each_and_leave_nothing(self):
        s = self.server
        sid = self.create()["id"]
        s.run(sid, "echo kept > f")
        # max_sandboxes is 6: the parent and 5 children fit; 2 of the 7 asked for do not.
        r = self.fork(sid, {"count": 7})
        self.assertEqual(r.status, 201, r)
        forks = r.json()["forks"]
        made = [f for f in forks if "sandbox" in f]
        refused = [f for f in forks if "error" in f]
        self.assertEqual((len(made), len(refused)), (5, 2), forks)
        for f in refused:
            self.assertEqual((f["status"], f["error"]["code"]), (429, "limit_exceeded"), f)
        listed = s.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual(len(listed), 6, listed)
        self.assertTrue(all(x["status"] == "running" for x in listed), listed)
        self.assertEqual(s.run(made[-1]["sandbox"]["id"], "cat f")["stdout"], "kept\n")
        # At the quota, a fork makes none: its answer is the children's error.
        r = self.fork(sid, {"count": 2})
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.json()["error"]["code"], "limit_exceeded")
        self.assertEqual(self.snapshot_files(), [])
        ws = os.path.join(s.data_dir, "sandboxes")
        on_disk = [n for n in os.listdir(ws) if n.startswith("sb_")]
        self.assertEqual(sorted(on_disk), sorted(x["id"] for x in listed))


class ForkTenancyTest(ServerTestCase):
    """With keys: a tenant forks only its own sandboxes, its children are its own, and a key's
    own sandbox quota bounds a fork's children as it bounds creates."""
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": ADMIN_KEY}
    API_KEY = ADMIN_KEY

    @classmethod
    def tearDownClass(cls):
        # The tenants' sandboxes (made with their keys, so not registered by create()).
        if cls.server:
            for x in cls.server.request("GET", "/v1/sandboxes", check=False).json()["sandboxes"]:
                cls.server.request("DELETE", "/v1/sandboxes/" + x["id"], check=False)
        super().tearDownClass()

    def key(self, **spec):
        spec.setdefault("name", "fork-%s" % os.urandom(3).hex())
        spec.setdefault("scopes", ["exec"])
        r = self.server.request("POST", "/v1/keys", spec)
        self.assertEqual(r.status, 201, r)
        return r.json()["key"]

    def test_a_tenant_forks_only_its_own_and_within_its_quota(self):
        s = self.server
        a, b = self.key(max_sandboxes=3), self.key()
        r = s.request("POST", "/v1/sandboxes", {}, headers=bearer(a))
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        # Another tenant's fork of it is a 404, as if it did not exist; nothing is made.
        r = s.request("POST", "/v1/sandboxes/%s/fork" % sid, {"count": 1}, headers=bearer(b))
        self.assertEqual(r.status, 404, r)
        self.assertEqual(s.request("GET", "/v1/sandboxes", headers=bearer(b)).json()["sandboxes"],
                         [])
        # The key may have 3: two children fit, the third is refused as past its quota.
        r = s.request("POST", "/v1/sandboxes/%s/fork" % sid, {"count": 3}, headers=bearer(a))
        self.assertEqual(r.status, 201, r)
        forks = r.json()["forks"]
        self.assertEqual([("sandbox" in f, f.get("status")) for f in forks],
                         [(True, None), (True, None), (False, 429)], forks)
        mine = s.request("GET", "/v1/sandboxes", headers=bearer(a)).json()["sandboxes"]
        self.assertEqual(len(mine), 3, mine)
        self.assertEqual(s.request("GET", "/v1/sandboxes", headers=bearer(b)).json()["sandboxes"],
                         [])
        # The audit trail names the fork.
        events = s.request("GET", "/v1/events?sandbox_id=" + sid).json()["events"]
        self.assertIn("sandbox.fork", [e["action"] for e in events])


if __name__ == "__main__":
    main()
