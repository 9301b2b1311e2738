"""Sandbox lifecycle against the real server (the restart is in test_restart.py)."""

import os
import time
import unittest
from urllib.parse import quote

from harness import ID_RE, Server, ServerTestCase, main, missing_prerequisite, parse_time, \
    sandbox_leftovers


class LifecycleTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_DEFAULT_TIMEOUT_SECONDS": "900"}
    # L5: a 1 s TTL sandbox is gone this soon after its created_at (the TTL, a reap interval,
    # the destroy, and slack for a loaded 2-core CI machine: 3.9 s was seen there).
    REAPED_WITHIN_S = 5.0

    def test_l1_create_with_defaults(self):
        before = time.time()
        r = self.server.request("POST", "/v1/sandboxes", {})
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self._created.append(s["id"])
        self.assertRegex(s["id"], ID_RE)
        self.assertEqual(s["status"], "running")
        self.assertIs(s["network"], False)
        self.assertIs(s["read_only_rootfs"], True)
        self.assertEqual(s["template"], "base")
        created = parse_time(s["created_at"])
        expires = parse_time(s["expires_at"])
        self.assertAlmostEqual(expires - created, 900, delta=1)
        self.assertAlmostEqual(expires, before + 900, delta=10)
        self.assertEqual(s["timeout_seconds"], 900)
        self.assertIsNone(s["source_snapshot_id"])
        for key in ("cpus", "memory_mb", "pids_limit", "workspace_mb"):
            self.assertIn(key, s)

    def test_l2_values_echoed_list_timeout_delete(self):
        s = self.create(cpus=0.5, memory_mb=256, timeout_seconds=60)
        sid = s["id"]
        g = self.server.request("GET", "/v1/sandboxes/" + sid)
        self.assertEqual(g.status, 200, g)
        got = g.json()
        self.assertEqual(got["cpus"], 0.5)
        self.assertEqual(got["memory_mb"], 256)
        self.assertEqual(got["timeout_seconds"], 60)
        ids = [x["id"] for x in self.server.request("GET", "/v1/sandboxes").json()["sandboxes"]]
        self.assertEqual(ids.count(sid), 1)
        self.assertEqual([i for i in ids if i in self._created], [sid])
        old_expiry = parse_time(got["expires_at"])
        t = self.server.request("POST", "/v1/sandboxes/%s/timeout" % sid, {"timeout_seconds": 600})
        self.assertEqual(t.status, 200, t)
        new_expiry = parse_time(t.json()["expires_at"])
        self.assertAlmostEqual(new_expiry, time.time() + 600, delta=10)
        self.assertGreater(new_expiry, old_expiry)
        d = self.server.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(d.status, 204, d)
        self.assertEqual(d.body, b"")
        self.assertError(self.server.request("GET", "/v1/sandboxes/" + sid), 404, "not_found")

    def test_l3_out_of_range_values_are_rejected_and_nothing_is_created(self):
        before = self.server.request("GET", "/v1/sandboxes").json()["sandboxes"]
        bad = [
            {"cpus": -1},
            {"cpus": 100000},
            {"memory_mb": 8},
            {"pids_limit": 2},
            {"timeout_seconds": 0},
            {"env": {"A=B": "x"}},
            {"env": {"A\u0000B": "x"}},
            {"unknown_field": 1},
            {"memory_mb": "256"},
            {"env": {"A": 1}},
        ]
        for spec in bad:
            with self.subTest(spec=spec):
                r = self.server.request("POST", "/v1/sandboxes", spec)
                self.assertError(r, 400, "invalid_request")
        after = self.server.request("GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual(len(after), len(before))

    def test_l3_wrong_type_names_the_field(self):
        r = self.server.request("POST", "/v1/sandboxes", {"memory_mb": "lots"})
        self.assertError(r, 400, "invalid_request")
        self.assertIn("memory_mb", r.json()["error"]["message"])
        r = self.server.request("POST", "/v1/sandboxes", {"bogus": True})
        self.assertIn("bogus", r.json()["error"]["message"])

    def test_l5_ttl_reaps_everything_and_an_extension_is_honoured(self):
        short = self.create(timeout_seconds=1)
        extended = self.create(timeout_seconds=2)
        t = self.server.request("POST", "/v1/sandboxes/%s/timeout" % extended["id"],
                                {"timeout_seconds": 120})
        self.assertEqual(t.status, 200, t)
        # Reaped within the TTL + one reap interval (1 s) + the destroy (REAPED_WITHIN_S).
        deadline = time.time() + self.REAPED_WITHIN_S + 1
        gone_at = None
        while time.time() < deadline:
            if self.server.request("GET", "/v1/sandboxes/" + short["id"]).status == 404:
                gone_at = time.time()
                break
            time.sleep(0.1)
        self.assertIsNotNone(gone_at, "TTL 1 s sandbox still there after %.0f s"
                             % (self.REAPED_WITHIN_S + 1))
        self.assertLess(gone_at - parse_time(short["created_at"]), self.REAPED_WITHIN_S)
        # Its processes, mounts, cgroups and files go with it.
        for _ in range(30):
            left = sandbox_leftovers(self.server, short["id"])
            if not left:
                break
            time.sleep(0.1)
        self.assertEqual(left, [])
        time.sleep(max(0, parse_time(extended["created_at"]) + 3 - time.time()))
        g = self.server.request("GET", "/v1/sandboxes/" + extended["id"])
        self.assertEqual(g.status, 200, "extended sandbox was reaped early")
        self.assertEqual(self.server.run(extended["id"], "echo alive")["stdout"], "alive\n")

    def test_list_order_and_filters(self):
        """GET /v1/sandboxes: oldest first unless order=desc; template, status and a window of
        start times filter; a bad value of any is a 400, never ignored."""
        first = self.create()
        time.sleep(0.01)
        second = self.create()
        self.server.request("POST", "/v1/sandboxes/%s/pause" % second["id"])
        mine = {first["id"], second["id"]}

        def ids(query=""):
            r = self.server.request("GET", "/v1/sandboxes" + query)
            return [s["id"] for s in r.json()["sandboxes"] if s["id"] in mine]
        self.assertEqual(ids(), [first["id"], second["id"]])
        self.assertEqual(ids("?order=asc"), [first["id"], second["id"]])
        self.assertEqual(ids("?order=desc"), [second["id"], first["id"]])
        self.assertEqual(ids("?template=base"), [first["id"], second["id"]])
        self.assertEqual(ids("?template=nope"), [])
        self.assertEqual(ids("?status=paused"), [second["id"]])
        self.assertEqual(ids("?status=running"), [first["id"]])
        after = quote(second["created_at"], safe="")
        self.assertEqual(ids("?started_after=" + after), [second["id"]])
        self.assertEqual(ids("?started_before=" + after), [first["id"]])
        ms = int(parse_time(second["created_at"]) * 1000)
        self.assertEqual(ids("?started_after=%d&order=desc" % ms), [second["id"]])
        for bad in ("order=sideways", "status=destroyed", "status=dead",
                    "started_after=yesterday", "started_after=%d&started_before=%d" % (ms, ms)):
            r = self.server.request("GET", "/v1/sandboxes?" + bad, check=False)
            self.assertError(r, 400, "invalid_request")

    def test_l7_delete_twice(self):
        s = self.create()
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + s["id"]).status, 204)
        self.assertError(self.server.request("DELETE", "/v1/sandboxes/" + s["id"]), 404,
                         "not_found")
        self.assertEqual(sandbox_leftovers(self.server, s["id"]), [])

    def test_malformed_ids_answer_404(self):
        for sid in ("sb_123", "sb_../../etc", "xx_0123456789abcdef", "SB_0123456789ABCDEF"):
            with self.subTest(sid=sid):
                self.assertError(self.server.request("GET", "/v1/sandboxes/" + sid), 404,
                                 "not_found")


class QuotaTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_SANDBOXES": "3"}

    def test_l4_quota_and_failed_creates_leak_no_slot(self):
        ids = [self.create()["id"] for _ in range(3)]
        r = self.server.request("POST", "/v1/sandboxes", {})
        self.assertError(r, 429, "limit_exceeded")
        # Five failed creates (over quota and invalid) ...
        for spec in ({}, {}, {"memory_mb": 8}, {"bogus": 1}, {}):
            self.assertIn(self.server.request("POST", "/v1/sandboxes", spec).status, (400, 429))
        # ... leave every slot free once the three are gone.
        for sid in ids:
            self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 204)
        again = [self.create()["id"] for _ in range(3)]
        self.assertEqual(len(set(again)), 3)
        self.assertError(self.server.request("POST", "/v1/sandboxes", {}), 429, "limit_exceeded")


class HalfCreatedTest(unittest.TestCase):
    """L7: DELETE works on a sandbox whose create failed halfway. A template whose rootfs is an
    empty directory gets through validation but fails inside the backend."""

    def setUp(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        self.server = Server()
        os.unlink(os.path.join(self.server.data_dir, "templates"))
        tdir = os.path.join(self.server.data_dir, "templates")
        os.makedirs(os.path.join(tdir, "broken", "rootfs"))
        from harness import TEMPLATES
        os.symlink(os.path.join(TEMPLATES, "base"), os.path.join(tdir, "base"))
        try:
            self.server.start()
        except Exception:
            self.server.close()  # tearDown does not run when setUp fails
            raise

    def tearDown(self):
        self.server.close()

    def test_l7_delete_after_a_failed_create(self):
        r = self.server.request("POST", "/v1/sandboxes", {"template": "broken"})
        self.assertGreaterEqual(r.status, 500, r)
        self.assertIn(r.error_code, ("backend_error", "internal"), r)
        listed = self.server.request("GET", "/v1/sandboxes").json()["sandboxes"]
        failed = [s for s in listed if s["template"] == "broken"]
        self.assertEqual(len(failed), 1, listed)
        self.assertEqual(failed[0]["status"], "error")
        sid = failed[0]["id"]
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 204)
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + sid).status, 404)
        self.assertEqual(sandbox_leftovers(self.server, sid), [])
        # And the failed create left its quota slot free: a good create still works.
        ok = self.server.create()
        self.assertEqual(ok["status"], "running")


class IdempotencyTest(unittest.TestCase):
    """Idempotency-Key on create, per tenant, durable across a restart."""

    ADMIN = "asb_" + os.urandom(24).hex()

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server({"AGENT_SANDBOX_API_KEYS": cls.ADMIN}, api_key=cls.ADMIN)
        try:
            cls.server.start()
            cls.alice = cls.new_key("alice")
            cls.bob = cls.new_key("bob")
        except Exception:
            cls.server.close()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.close()  # destroys every sandbox (the admin key sees them all)

    @classmethod
    def new_key(cls, name):
        r = cls.server.request("POST", "/admin/keys", {"name": name, "scopes": "exec"})
        assert r.status == 201, r
        return r.json()["key"]

    def create(self, key, idem, body=None):
        return self.server.request("POST", "/v1/sandboxes", body if body is not None else {},
                                   headers={"Authorization": "Bearer " + key,
                                            "Idempotency-Key": idem})

    def ids(self, key):
        r = self.server.request("GET", "/v1/sandboxes",
                                headers={"Authorization": "Bearer " + key})
        return sorted(s["id"] for s in r.json()["sandboxes"])

    def test_same_key_twice_makes_one_sandbox_and_a_different_body_is_409(self):
        before = self.ids(self.alice)
        first = self.create(self.alice, "retry-1", {"timeout_seconds": 600})
        self.assertEqual(first.status, 201, first)
        self.assertNotIn("idempotent-replayed", first.headers)
        again = self.create(self.alice, "retry-1", {"timeout_seconds": 600})
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.json(), first.json())
        self.assertEqual(again.headers.get("idempotent-replayed"), "true")
        self.assertEqual(self.ids(self.alice), sorted(before + [first.json()["id"]]))
        other = self.create(self.alice, "retry-1", {"timeout_seconds": 601})
        self.assertEqual(other.status, 409, other)
        self.assertEqual(other.error_code, "conflict")
        self.assertIn("different request body", other.json()["error"]["message"])
        self.assertEqual(len(self.ids(self.alice)), len(before) + 1)

    def test_a_key_of_another_tenant_is_its_own(self):
        a = self.create(self.alice, "shared-name")
        self.assertEqual(a.status, 201, a)
        b = self.create(self.bob, "shared-name")
        self.assertEqual(b.status, 201, b)
        self.assertNotEqual(a.json()["id"], b.json()["id"])
        self.assertNotIn(a.json()["id"], self.ids(self.bob))
        # A different body under bob's key is no conflict with alice's use of the name.
        c = self.create(self.bob, "shared-name-2", {"timeout_seconds": 300})
        self.assertEqual(c.status, 201, c)

    def test_key_length_at_the_limit_passes_and_one_over_is_400(self):
        ok = self.create(self.alice, "k" * 255)
        self.assertEqual(ok.status, 201, ok)
        self.assertEqual(self.create(self.alice, "k" * 255).json()["id"], ok.json()["id"])
        over = self.create(self.alice, "k" * 256)
        self.assertEqual(over.status, 400, over)
        self.assertEqual(over.error_code, "invalid_request")
        self.assertIn("Idempotency-Key", over.json()["error"]["message"])
        self.assertEqual(self.create(self.alice, "").status, 400)

    def test_the_key_survives_a_server_restart(self):
        first = self.create(self.alice, "across-restart")
        self.assertEqual(first.status, 201, first)
        self.server.kill9()  # a crash, as the client that retries would see it
        self.server.start()
        again = self.create(self.alice, "across-restart")
        self.assertEqual(again.status, 201, again)
        self.assertEqual(again.json()["id"], first.json()["id"])
        self.assertEqual(again.headers.get("idempotent-replayed"), "true")
        self.assertEqual(self.ids(self.alice).count(first.json()["id"]), 1)


if __name__ == "__main__":
    main()
