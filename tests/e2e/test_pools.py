#!/usr/bin/env python3
"""Warm pools (docs/adr/0027-warm-pools.md): ready sandboxes a matching create takes, against
the real server and real sandboxes.

A pooled sandbox is nobody's until claimed (no listing shows it), serves one claim and is never
reused, so a claim never sees a previous tenant's files, environment or processes; a pool
refills after claims, shrinks when resized, never makes a tenant's quota smaller and gives up
its capacity to a create that needs it; a server killed with a full pool leaves nothing after
its restart; sizing pools is the operator's (scope admin).
"""
import os
import time
import unittest

import harness

ADMIN_KEY = "asb_" + os.urandom(24).hex()


def bearer(key):
    return {"Authorization": "Bearer " + key}


class WarmPoolTest(harness.ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": ADMIN_KEY, "AGENT_SANDBOX_WARM_POOLS": "base=2",
                  "AGENT_SANDBOX_WARM_POOL_REFILL_PER_SECOND": "20",
                  "AGENT_SANDBOX_MAX_SANDBOXES": "4"}
    API_KEY = ADMIN_KEY

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.server.request("POST", "/v1/keys", {"name": "tenant", "scopes": ["exec"]})
        cls.tenant = r.json()["key"]

    def setUp(self):
        super().setUp()
        self.server.request("PUT", "/v1/pools/base", {"size": 2})  # whatever a test left

    def pool(self, template="base", network=False):
        for p in self.server.request("GET", "/v1/pools").json()["pools"]:
            if p["template"] == template and p["network"] == network:
                return p
        return None

    def wait_ready(self, n, template="base", timeout=30):
        deadline = time.time() + timeout
        while True:
            p = self.pool(template)
            if (p or {}).get("ready") == n or time.time() > deadline:
                self.assertEqual((p or {}).get("ready"), n, p)
                return p
            time.sleep(0.05)

    def tenant_create(self, **body):
        r = self.server.request("POST", "/v1/sandboxes", body, headers=bearer(self.tenant))
        self.assertEqual(r.status, 201, r)
        self._created.append(r.json()["id"])
        return r.json()

    def sandbox_dirs(self):
        return sorted(d for d in os.listdir(os.path.join(self.server.data_dir, "sandboxes"))
                      if d.startswith("sb_"))

    def test_a_claim_is_fresh_and_never_sees_an_earlier_one(self):
        self.wait_ready(2)
        # Ready sandboxes are nobody's: not even the admin's list shows them.
        self.assertEqual(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"], [])
        hits = self.pool()["hits"]
        t0 = time.time()
        a = self.tenant_create(timeout_seconds=120)
        took = time.time() - t0
        self.assertEqual(self.pool()["hits"], hits + 1)
        self.assertEqual((a["status"], a["template"], a["timeout_seconds"]),
                         ("running", "base", 120))
        # The tenant's own, with its TTL counted from the claim.
        listed = self.server.request("GET", "/v1/sandboxes", headers=bearer(self.tenant))
        self.assertEqual([s["id"] for s in listed.json()["sandboxes"]], [a["id"]])
        # Leave traces, then end it; the next claim is another sandbox with none of them.
        self.server.run(a["id"], "echo secret > /workspace/left.txt; echo x > /tmp/left; "
                                 "setsid sleep 600 >/dev/null 2>&1 &")
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + a["id"],
                                             headers=bearer(self.tenant)).status, 204)
        self.wait_ready(2)
        b = self.tenant_create()
        self.assertNotEqual(a["id"], b["id"])
        out = self.server.run(b["id"], "ls -A /workspace; ls /tmp; pgrep -c sleep || true")
        self.assertEqual(out["stdout"], "0\n", out)
        print("warm pool claim: create answered in %.1f ms" % (took * 1000))

    def test_shapes_that_differ_miss_and_still_create(self):
        self.wait_ready(2)
        misses = self.pool()["misses"]
        s = self.tenant_create(env={"ONLY_MINE": "1"}, pids_limit=200)
        self.assertEqual(self.pool()["misses"], misses + 1)
        out = self.server.run(s["id"], "echo $ONLY_MINE")
        self.assertEqual(out["stdout"], "1\n")
        self.assertEqual(self.pool()["ready"], 2)  # the pool's sandboxes were left alone

    def test_a_create_with_env_takes_one_and_the_next_sees_none_of_it(self):
        # The environment is the claim's to set (sandboxd's env.set): a create with its own
        # takes a pooled sandbox, every command sees it, and the next claim has none of it.
        self.wait_ready(2)
        hits = self.pool()["hits"]
        a = self.tenant_create(env={"ONLY_MINE": "a b=c", "LANG": "C"})
        self.assertEqual(self.pool()["hits"], hits + 1)
        out = self.server.run(a["id"], 'echo "[$ONLY_MINE] [$LANG] [$HOME]"')
        self.assertEqual(out["stdout"], "[a b=c] [C] [/workspace]\n", out)
        out = self.server.run(a["id"], "echo $ONLY_MINE", env={"ONLY_MINE": "request"})
        self.assertEqual(out["stdout"], "request\n", out)
        b = self.tenant_create()
        self.assertEqual(self.pool()["hits"], hits + 2)
        out = self.server.run(b["id"], 'echo "[$ONLY_MINE] [$LANG]"')
        self.assertEqual(out["stdout"], "[] [C.UTF-8]\n", out)

    def test_a_create_with_other_memory_and_cpus_takes_one_and_gets_them(self):
        # The ns backend changes a running sandbox's cgroups: memory and CPU are the claim's.
        self.wait_ready(2)
        hits = self.pool()["hits"]
        a = self.tenant_create(memory_mb=128, cpus=0.5)
        self.assertEqual(self.pool()["hits"], hits + 1)
        self.assertEqual((a["memory_mb"], a["cpus"]), (128, 0.5))
        hog = "dd if=/dev/zero of=/dev/null bs=200M count=1"
        out = self.server.run(a["id"], hog)
        self.assertNotEqual(out["exit_code"], 0, out)
        self.assertTrue(out.get("oom_killed"), out)
        b = self.tenant_create(memory_mb=512)
        self.assertEqual(self.pool()["hits"], hits + 2)
        out = self.server.run(b["id"], hog)
        self.assertEqual(out["exit_code"], 0, out)

    def test_capacity_goes_to_creates_and_the_pool_refills(self):
        self.wait_ready(2)
        # 4 slots, 2 of them ready sandboxes: 4 creates of another shape all succeed, each
        # ready sandbox giving up its slot when the server is full; a fifth is a clean 429.
        made = [self.tenant_create(memory_mb=128) for _ in range(4)]
        self.assertEqual(len({m["id"] for m in made}), 4)
        r = self.server.request("POST", "/v1/sandboxes", {}, headers=bearer(self.tenant),
                                check=False)
        self.assertError(r, 429, "limit_exceeded")
        for m in made:
            self.server.request("DELETE", "/v1/sandboxes/" + m["id"])
        self.wait_ready(2)

    def test_resize_and_who_may(self):
        self.wait_ready(2)
        r = self.server.request("PUT", "/v1/pools/base", {"size": 1})
        self.assertEqual((r.status, r.json()["size"], r.json()["ready"]), (200, 1, 1), r)
        # Operators only; bad input is a 400, an unknown template a 404.
        r = self.server.request("PUT", "/v1/pools/base", {"size": 3}, headers=bearer(self.tenant),
                                check=False)
        self.assertError(r, 403, "forbidden")
        for body in ({"size": -1}, {"size": 99}, {}, {"size": 1, "colour": "red"}):
            self.assertError(self.server.request("PUT", "/v1/pools/base", body, check=False),
                             400, "invalid_request")
        self.assertError(self.server.request("PUT", "/v1/pools/nope", {"size": 1}, check=False),
                         404, "not_found")
        metrics = self.server.request("GET", "/metrics").body.decode()
        self.assertIn('asb_pool_ready{template="base",network="false"} 1', metrics)
        self.server.request("PUT", "/v1/pools/base", {"size": 2})
        self.wait_ready(2)

    def test_z_a_killed_server_leaves_nothing_of_its_pool(self):
        self.wait_ready(2)
        self.assertEqual(len(self.sandbox_dirs()), 2)  # the pool's, and nothing else
        self.server.kill9()
        self.server.extra_env["AGENT_SANDBOX_WARM_POOLS"] = ""
        self.server.start()
        deadline = time.time() + 20
        while self.sandbox_dirs() and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.sandbox_dirs(), [])
        self.assertEqual(self.server.request("GET", "/v1/sandboxes").json()["sandboxes"], [])
        self.assertIsNone(self.pool())
        mounts = open("/proc/self/mountinfo").read()
        # (The backend's own .pool of formatted workspace images stays; it holds no sandbox.)
        self.assertNotIn(os.path.join(self.server.data_dir, "sandboxes", "sb_"), mounts)


if __name__ == "__main__":
    harness.main()
