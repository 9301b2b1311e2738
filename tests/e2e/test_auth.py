"""Over real HTTP (src/api/AUTH.md): API keys, tenancy, /metrics, health and readiness,
the audit trail, the `keys` CLI, and a log check: no key, env value or file content used in
this suite appears in any line the server wrote."""

import json
import os
import re
import sqlite3
import subprocess
import threading
import time
import unittest

from harness import BIN, Server, ServerTestCase, main, missing_prerequisite

ADMIN_KEY = "asb_" + os.urandom(24).hex()
SECRET_ENV = "envsecret-" + os.urandom(8).hex()
SECRET_EXEC_ENV = "execsecret-" + os.urandom(8).hex()
SECRET_FILE = "filesecret-" + os.urandom(8).hex()
SECRET_STDIN = "stdinsecret-" + os.urandom(8).hex()

# Every raw key any test here saw; the log test looks for each.
SEEN_KEYS = [ADMIN_KEY]


def bearer(key):
    return {"Authorization": "Bearer " + key}


class AuthTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": ADMIN_KEY, "AGENT_SANDBOX_LOG_FORMAT": "json",
                  "AGENT_SANDBOX_MAX_REQUESTS_PER_KEY": "4"}

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server(cls.SERVER_ENV, api_key=ADMIN_KEY)
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            raise

    # ---- helpers -------------------------------------------------------------------------

    def make_key(self, **spec):
        spec.setdefault("name", "test-%s" % os.urandom(3).hex())
        r = self.server.request("POST", "/v1/keys", spec)
        self.assertEqual(r.status, 201, r)
        k = r.json()
        SEEN_KEYS.append(k["key"])
        return k

    def as_key(self, key, method, path, body=None, headers=None, **kw):
        h = bearer(key)
        h.update(headers or {})
        return self.server.request(method, path, body, headers=h, **kw)

    def create_as(self, key, **spec):
        r = self.as_key(key, "POST", "/v1/sandboxes", spec)
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self._created.append(s["id"])
        return s

    # ---- K1 ------------------------------------------------------------------------------

    def test_k1_missing_and_bad_keys_answer_401_with_www_authenticate(self):
        s = self.server
        for headers in ({"Authorization": ""}, {"Authorization": "Bearer "},
                        {"Authorization": "Basic dXNlcjpwYXNz"}):
            r = s.request("GET", "/v1/sandboxes", headers=headers)
            self.assertError(r, 401, "unauthorized")
            self.assertEqual(r.headers.get("www-authenticate"), "Bearer")
        for key in ("asb_" + "0" * 48, ADMIN_KEY + "x", ADMIN_KEY[:-1], "nonsense"):
            r = s.request("GET", "/v1/sandboxes", headers=bearer(key))
            self.assertError(r, 401, "unauthorized")
            self.assertEqual(r.headers.get("www-authenticate"), "Bearer")
        r = s.request("GET", "/v1/sandboxes", headers={"X-API-Key": "asb_nope"})
        self.assertError(r, 401, "unauthorized")
        # Public probes need no key.
        for path in ("/healthz", "/health", "/readyz", "/ready"):
            r = s.request("GET", path, headers={"Authorization": ""})
            self.assertEqual(r.status, 200, (path, r))
        # The OpenAPI document too: it holds no secret, and clients fetch it before they have
        # a key (the README says it is served there).
        r = s.request("GET", "/openapi.json", headers={"Authorization": ""})
        self.assertEqual(r.status, 200, r)
        self.assertIn("/v1/sandboxes", r.json()["paths"])
        ready = s.request("GET", "/readyz").json()
        self.assertEqual(ready["status"], "ready")
        self.assertEqual(set(ready["checks"]), {"database", "backend", "disk", "memory"})

    def test_k1_created_key_is_shown_once_and_stored_hashed(self):
        k = self.make_key(scopes=["exec"], rate_limit=0)
        self.assertRegex(k["key"], r"^asb_[0-9a-f]{48}$")
        self.assertRegex(k["id"], r"^key_[0-9a-f]{16}$")
        self.assertEqual(k["prefix"], k["key"][:12])
        self.assertEqual(k["scopes"], ["exec"])
        self.assertEqual(k["status"], "active")
        got = self.server.request("GET", "/v1/keys/" + k["id"])
        self.assertEqual(got.status, 200)
        self.assertNotIn("key", got.json())
        self.assertNotIn(k["key"][12:].encode(), got.body)
        listed = self.server.request("GET", "/v1/keys")
        self.assertIn(k["id"], [x["id"] for x in listed.json()["keys"]])
        self.assertNotIn(k["key"][12:].encode(), listed.body)
        # The database holds no trace of the raw key, only its SHA-256.
        import hashlib
        db = sqlite3.connect(os.path.join(self.server.data_dir, "agent-sandbox.db"))
        try:
            rows = db.execute("SELECT * FROM api_keys").fetchall()
        finally:
            db.close()
        dump = repr(rows)
        self.assertNotIn(k["key"][12:], dump)
        self.assertIn(hashlib.sha256(k["key"].encode()).hexdigest(), dump)

    def test_k1_bearer_and_x_api_key_both_work(self):
        k = self.make_key(scopes=["exec"])
        r = self.server.request("GET", "/v1/sandboxes", headers={"X-API-Key": k["key"]})
        self.assertEqual(r.status, 200, r)
        r = self.server.request("GET", "/v1/sandboxes", headers=bearer(k["key"]))
        self.assertEqual(r.status, 200, r)
        r = self.server.request("GET", "/v1/sandboxes",
                                headers={"Authorization": "bearer " + k["key"]})
        self.assertEqual(r.status, 200, r)

    def test_k1_scopes_answer_403(self):
        ex = self.make_key(scopes=["exec"])
        me = self.make_key(scopes=["metrics"])
        self.assertError(self.as_key(ex["key"], "GET", "/metrics"), 403, "forbidden")
        self.assertError(self.as_key(ex["key"], "GET", "/v1/keys"), 403, "forbidden")
        self.assertError(self.as_key(ex["key"], "POST", "/v1/keys", {"name": "x"}), 403,
                         "forbidden")
        self.assertError(self.as_key(ex["key"], "GET", "/admin/keys"), 403, "forbidden")
        self.assertEqual(self.as_key(me["key"], "GET", "/metrics").status, 200)
        self.assertError(self.as_key(me["key"], "GET", "/v1/sandboxes"), 403, "forbidden")
        self.assertError(self.as_key(me["key"], "POST", "/v1/sandboxes", {}), 403, "forbidden")
        # Bad scopes are refused at creation.
        r = self.server.request("POST", "/v1/keys", {"name": "bad", "scopes": ["root"]})
        self.assertError(r, 400, "invalid_request")

    def test_k1_revoked_rotated_expired_keys_answer_401(self):
        s = self.server
        k = self.make_key(scopes=["exec"])
        self.assertEqual(self.as_key(k["key"], "GET", "/v1/sandboxes").status, 200)
        r = s.request("POST", "/v1/keys/%s/revoke" % k["id"])
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["status"], "revoked")
        self.assertError(self.as_key(k["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")
        self.assertEqual(s.request("POST", "/v1/keys/%s/enable" % k["id"]).status, 200)
        self.assertEqual(self.as_key(k["key"], "GET", "/v1/sandboxes").status, 200)

        # Rotation: the old key answers 401, the new one sees the lineage's sandboxes.
        sb = self.create_as(k["key"])
        r = s.request("POST", "/v1/keys/%s/rotate" % k["id"])
        self.assertEqual(r.status, 201, r)
        new = r.json()
        SEEN_KEYS.append(new["key"])
        self.assertNotEqual(new["key"], k["key"])
        self.assertEqual(new["lineage"], k["id"])
        self.assertError(self.as_key(k["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")
        self.assertEqual(s.request("GET", "/v1/keys/" + k["id"]).json()["status"], "rotated")
        r = self.as_key(new["key"], "GET", "/v1/sandboxes/" + sb["id"])
        self.assertEqual(r.status, 200, r)
        self.assertIn(sb["id"], [x["id"] for x in
                                 self.as_key(new["key"], "GET", "/v1/sandboxes").json()["sandboxes"]])
        self.assertError(s.request("POST", "/v1/keys/%s/rotate" % k["id"]), 409, "conflict")

        # Expiry.
        e = self.make_key(scopes=["exec"], expires_in="1s")
        self.assertIsNotNone(e["expires_at"])
        time.sleep(1.2)
        self.assertError(self.as_key(e["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")

        # Delete; the seed-A alias answers too.
        d = self.make_key(scopes=["exec"])
        self.assertEqual(s.request("DELETE", "/admin/keys/" + d["id"]).status, 204)
        self.assertError(self.as_key(d["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")
        self.assertError(s.request("GET", "/v1/keys/" + d["id"]), 404, "not_found")
        r = s.request("POST", "/admin/keys", {"name": "alias", "scopes": "exec,metrics"})
        self.assertEqual(r.status, 201, r)
        SEEN_KEYS.append(r.json()["key"])
        self.assertEqual(r.json()["scopes"], ["exec", "metrics"])

    def test_k1_rate_limit_is_exact_at_the_boundary(self):
        n = 7
        k = self.make_key(scopes=["exec"], rate_limit=n)
        t0 = time.time()
        for i in range(n):
            r = self.as_key(k["key"], "GET", "/v1/sandboxes")
            self.assertEqual(r.status, 200, "request %d of %d: %r" % (i + 1, n, r))
        r = self.as_key(k["key"], "GET", "/v1/sandboxes")
        self.assertLess(time.time() - t0, 50, "the requests must fall into one minute")
        self.assertError(r, 429, "limit_exceeded")
        retry = int(r.headers["retry-after"])
        self.assertGreaterEqual(retry, 1)
        self.assertLessEqual(retry, 60)
        # Refused requests do not count; another key is unaffected.
        self.assertError(self.as_key(k["key"], "GET", "/v1/sandboxes"), 429, "limit_exceeded")
        other = self.make_key(scopes=["exec"], rate_limit=n)
        self.assertEqual(self.as_key(other["key"], "GET", "/v1/sandboxes").status, 200)

    def test_k1_sandbox_quota_per_key(self):
        k = self.make_key(scopes=["exec"], max_sandboxes=1)
        first = self.create_as(k["key"])
        r = self.as_key(k["key"], "POST", "/v1/sandboxes", {})
        self.assertError(r, 429, "limit_exceeded")
        self.assertEqual(self.as_key(k["key"], "DELETE", "/v1/sandboxes/" + first["id"]).status,
                         204)
        self.create_as(k["key"])

    # ---- K2 ------------------------------------------------------------------------------

    def process_routes(self, key, base):
        """Starts a background process as `key`; returns its pid and its routes."""
        r = self.as_key(key, "POST", base + "/processes", {"command": "sleep 300"})
        self.assertEqual(r.status, 201, r)
        pid = r.json()["pid"]
        p = base + "/processes/%d" % pid
        return pid, [("GET", base + "/processes", None),
                     ("POST", base + "/processes", {"command": "true"}),
                     ("GET", p, None), ("DELETE", p, None),
                     ("POST", p + "/signal", {"signal": "KILL"}),
                     ("POST", p + "/stdin", {"data": "x"}),
                     ("POST", p + "/close-stdin", {}),
                     ("POST", p + "/resize", {"cols": 80, "rows": 24}),
                     ("GET", p + "/stream", None)]

    def test_k2_a_key_never_sees_another_keys_sandbox(self):
        a = self.make_key(scopes=["exec"])
        b = self.make_key(scopes=["exec"])
        sa = self.create_as(a["key"])
        sid = sa["id"]
        base = "/v1/sandboxes/" + sid
        q = "?path=%2Fworkspace%2Fx.txt"
        pid, proc_routes = self.process_routes(a["key"], base)
        for method, path, body in [
                ("GET", base, None),
                ("DELETE", base, None),
                ("POST", base + "/timeout", {"timeout_seconds": 60}),
                ("POST", base + "/exec", {"command": "true"}),
                ("POST", base + "/exec/stream", {"command": "true"}),
                ("GET", base + "/files" + q, None),
                ("PUT", base + "/files" + q, b"data"),
                ("DELETE", base + "/files" + q, None),
                ("GET", base + "/files/list?path=%2Fworkspace", None),
                ("GET", base + "/files/watch?path=%2Fworkspace", None),
                ("GET", base + "/files/stat" + q, None),
                ("POST", base + "/files/mkdir", {"path": "/workspace/d"}),
                ("POST", base + "/files/move", {"from": "/workspace/a", "to": "/workspace/b"}),
                ("GET", base + "/events", None)] + proc_routes + [
                # (the breaker's additions: every other per-sandbox route)
                ("GET", base + "/network", None),
                ("PUT", base + "/network", {"allow_out": []}),
                ("GET", base + "/archive", None),
                ("PUT", base + "/archive", b"x" * 1024),
                ("POST", base + "/snapshots", {}),
                ("POST", base + "/rollback", {"snapshot_id": "snap_0123456789abcdef"}),
                ("GET", base + "/ports/8080/x", None)]:
            r = self.as_key(b["key"], method, path, body)
            self.assertError(r, 404, "not_found")
        # A's background process was neither signalled nor killed by B's attempts.
        r = self.as_key(a["key"], "GET", base + "/processes/%d" % pid)
        self.assertEqual(r.json()["state"], "running", r)
        listed = self.as_key(b["key"], "GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertNotIn(sid, [x["id"] for x in listed])
        # B's trail holds only B's own refused attempts, nothing A did.
        r = self.as_key(b["key"], "GET", "/v1/events?sandbox_id=" + sid)
        self.assertTrue(r.json()["events"])
        for e in r.json()["events"]:
            self.assertEqual(e["key_id"], b["id"], e)
            self.assertEqual(e["status"], 404, e)
        # The owner and the admin see it; it still runs. The admin's list says whose it is (the
        # console's owner column); a tenant's own list names no owner.
        self.assertEqual(self.as_key(a["key"], "GET", base).status, 200)
        admin_view = {x["id"]: x for x in self.server.request("GET", "/v1/sandboxes")
                      .json()["sandboxes"]}
        self.assertEqual(admin_view[sid]["owner"], a["id"])
        own = self.as_key(a["key"], "GET", "/v1/sandboxes").json()["sandboxes"]
        self.assertEqual([x.get("owner") for x in own if x["id"] == sid], [None])
        r = self.as_key(a["key"], "POST", base + "/exec", {"command": "echo alive"})
        self.assertEqual(r.json()["stdout"], "alive\n")

    def test_k2_snapshots_follow_their_owner(self):
        a = self.make_key(scopes=["exec"])
        b = self.make_key(scopes=["exec"])
        sa = self.create_as(a["key"])
        r = self.as_key(a["key"], "POST", "/v1/sandboxes/%s/snapshots" % sa["id"], {"name": "s1"})
        if r.status in (404, 405) and r.error_code in ("not_found", "method_not_allowed") and \
                "sandbox" not in r.json()["error"]["message"]:
            self.skipTest("snapshot routes are not in this build")
        self.assertEqual(r.status, 201, r)
        snap = r.json()["id"]
        for method, path, body in [
                ("GET", "/v1/snapshots/" + snap, None),
                ("DELETE", "/v1/snapshots/" + snap, None),
                ("POST", "/v1/snapshots/%s/fork" % snap, {}),
                ("GET", "/v1/snapshots/%s/archive" % snap, None),
                ("POST", "/v1/sandboxes/%s/rollback" % sa["id"], {"snapshot_id": snap}),
                ("POST", "/v1/sandboxes/%s/snapshots" % sa["id"], {})]:
            self.assertError(self.as_key(b["key"], method, path, body), 404, "not_found")
        listed = self.as_key(b["key"], "GET", "/v1/snapshots").json()["snapshots"]
        self.assertNotIn(snap, [x["id"] for x in listed])
        listed = self.as_key(a["key"], "GET", "/v1/snapshots").json()["snapshots"]
        self.assertIn(snap, [x["id"] for x in listed])
        # A's fork is A's sandbox; B cannot see it.
        r = self.as_key(a["key"], "POST", "/v1/snapshots/%s/fork" % snap, {})
        self.assertEqual(r.status, 201, r)
        self._created.append(r.json()["id"])
        self.assertError(self.as_key(b["key"], "GET", "/v1/sandboxes/" + r.json()["id"]), 404,
                         "not_found")
        actions = [e["action"] for e in
                   self.as_key(a["key"], "GET", "/v1/events?key_id=" + a["id"]).json()["events"]]
        self.assertIn("snapshot.create", actions)
        self.assertIn("snapshot.fork", actions)

    # ---- audit trail -----------------------------------------------------------------------

    def test_audit_trail_records_calls_and_execs_without_contents(self):
        s = self.server
        k = self.make_key(scopes=["exec"])
        sb = self.create_as(k["key"], env={"SECRET_ENV": SECRET_ENV})
        sid = sb["id"]
        base = "/v1/sandboxes/" + sid
        r = self.as_key(k["key"], "POST", base + "/exec",
                        {"command": "echo out-$SECRET_ENV; exit 3",
                         "env": {"EXEC_SECRET": SECRET_EXEC_ENV}, "stdin": SECRET_STDIN})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["exit_code"], 3)
        c = s.conn()
        c.request("POST", base + "/exec/stream", body=json.dumps({"argv": ["sh", "-c", "exit 4"]}),
                  headers=bearer(k["key"]))
        resp = c.getresponse()
        lines = [json.loads(l) for l in resp.read().splitlines()]
        c.close()
        self.assertEqual(lines[-1]["exit_code"], 4)
        r = self.as_key(k["key"], "PUT", base + "/files?path=%2Fworkspace%2Fs.txt",
                        SECRET_FILE.encode())
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.as_key(k["key"], "GET", base + "/files?path=%2Fworkspace%2Fs.txt")
                         .body, SECRET_FILE.encode())
        time.sleep(0.2)  # the stream's event is written when the stream ends
        ev = self.as_key(k["key"], "GET", base + "/events?order=asc").json()
        actions = [e["action"] for e in ev["events"]]
        self.assertEqual(actions[:4], ["sandbox.create", "exec", "exec.stream", "file.write"],
                         ev)
        create, ex, st, fw = ev["events"][:4]
        self.assertEqual(create["key_id"], k["id"])
        self.assertEqual(create["status"], 201)
        self.assertEqual(ex["target"], "echo out-$SECRET_ENV; exit 3")
        self.assertEqual(ex["exit_code"], 3)
        self.assertEqual(ex["result"], "ok")
        self.assertGreaterEqual(ex["duration_ms"], 0)
        self.assertEqual(st["target"], "sh -c 'exit 4'")
        self.assertEqual(st["exit_code"], 4)
        self.assertEqual(fw["target"], "/workspace/s.txt")
        self.assertIsNone(fw["exit_code"])
        raw = json.dumps(ev)
        for secret in (SECRET_ENV, SECRET_EXEC_ENV, SECRET_FILE, SECRET_STDIN):
            self.assertNotIn(secret, raw)
        # Reads are not audited.
        self.assertNotIn("GET", " ".join(actions))
        # /v1/events: filters and paging with a cursor, newest first by default (a console's
        # "recent events" showed the oldest 200), oldest first with order=asc; both orders
        # page through the same events.
        pages = {}
        for order in ("", "&order=desc", "&order=asc"):
            seen = []
            cursor = None
            for _ in range(20):
                q = ("/v1/events?key_id=%s&limit=2" % k["id"] + order +
                     ("&cursor=" + cursor if cursor else ""))
                page = self.as_key(k["key"], "GET", q).json()
                seen += [e["seq"] for e in page["events"]]
                cursor = page["next_cursor"]
                if not cursor:
                    break
            self.assertGreaterEqual(len(seen), 4)
            self.assertEqual(len(seen), len(set(seen)))
            pages[order] = seen
        self.assertEqual(pages[""], sorted(pages[""], reverse=True))
        self.assertEqual(pages["&order=desc"], pages[""])
        self.assertEqual(pages["&order=asc"], sorted(pages[""]))
        self.assertEqual(ev["events"][0]["action"], "sandbox.create")
        newest = self.as_key(k["key"], "GET", base + "/events?limit=1").json()["events"]
        self.assertEqual(newest[0]["seq"], max(pages[""]))
        self.assertError(self.server.request("GET", "/v1/events?order=up"), 400,
                         "invalid_request")
        r = self.server.request("GET", "/v1/events?since=2999-01-01T00:00:00Z")
        self.assertEqual(r.json()["events"], [])
        self.assertError(self.server.request("GET", "/v1/events?limit=0"), 400, "invalid_request")
        # The admin's own key calls are audited too (key.create).
        all_ev = self.server.request("GET", "/v1/events?limit=1000").json()["events"]
        self.assertIn("key.create", [e["action"] for e in all_ev])

    # ---- M1 ------------------------------------------------------------------------------

    def test_m1_metrics_are_valid_prometheus_text_without_unbounded_labels(self):
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:  # Debian's python3-prometheus-client under another interpreter
            import sys
            sys.path.append("/usr/lib/python3/dist-packages")
            from prometheus_client.parser import text_string_to_metric_families
        k = self.make_key(scopes=["exec"])
        sb = self.create_as(k["key"])
        self.as_key(k["key"], "POST", "/v1/sandboxes/%s/exec" % sb["id"],
                    {"command": "echo metrics-cmd-marker"})
        self.as_key(k["key"], "GET", "/v1/sandboxes/sb_0123456789abcdef")
        short = self.create_as(k["key"], timeout_seconds=1)
        deadline = time.time() + 20
        while time.time() < deadline:  # the reaper runs every second here
            if self.as_key(k["key"], "GET", "/v1/sandboxes/" + short["id"]).status == 404:
                break
            time.sleep(0.2)
        r = self.server.request("GET", "/metrics")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.headers["content-type"].startswith("text/plain"), r.headers)
        text = r.body.decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        for name in ("asb_sandboxes", "asb_http_requests", "asb_http_request_duration_seconds",
                     "asb_sandbox_creates", "asb_sandbox_create_duration_seconds", "asb_execs",
                     "asb_exec_duration_seconds", "asb_auth_results", "asb_stream_bytes"):
            self.assertIn(name, families, sorted(families))
        # Every sample line parses on its own too, and no label value is an id, a key, a
        # path or a command.
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            list(text_string_to_metric_families(line + "\n"))
        for f in families.values():
            for sample in f.samples:
                for v in sample.labels.values():
                    self.assertNotRegex(v, r"sb_[0-9a-f]{16}|key_[0-9a-f]{16}|asb_[0-9a-f]")
                    self.assertNotIn("marker", v)
                    self.assertFalse(v.startswith("/workspace"), v)
                    if v.startswith("/"):
                        self.assertNotRegex(v, r"/sb_")
        running = [s.value for s in families["asb_sandboxes"].samples
                   if s.labels.get("state") == "running"]
        self.assertGreaterEqual(running[0], 1)
        execs = sum(s.value for s in families["asb_execs"].samples if s.name == "asb_execs_total")
        self.assertGreaterEqual(execs, 1)
        reaped = families["asb_sandboxes_reaped"].samples[0].value
        self.assertGreaterEqual(reaped, 1)
        outcomes = {s.labels["outcome"] for s in families["asb_recovery_sandboxes"].samples}
        self.assertEqual(outcomes, {"adopted", "dropped", "orphan_destroyed"})
        creates = [s for s in families["asb_sandbox_create_duration_seconds"].samples
                   if s.name.endswith("_count")]
        self.assertEqual(creates[0].labels["backend"], "ns")
        self.assertGreaterEqual(sum(s.value for s in creates), 2)
        routes = {s.labels.get("route") for s in families["asb_http_requests"].samples}
        self.assertIn("/v1/sandboxes/{id}", routes)
        self.assertIn("/v1/sandboxes/{id}/exec", routes)

    # ---- the CLI -------------------------------------------------------------------------

    def cli(self, *args):
        p = subprocess.run([BIN, "keys", "--data-dir", self.server.data_dir, "--json"] +
                           list(args), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return [json.loads(l) for l in p.stdout.splitlines() if l.strip()]

    def test_cli_keys_work_on_the_database_of_a_running_server(self):
        created = self.cli("create", "cli-key", "--scopes", "exec", "--rate-limit", "100",
                           "--max-sandboxes", "3", "--expires", "30d")[0]
        SEEN_KEYS.append(created["key"])
        self.assertEqual(created["rate_limit"], 100)
        self.assertEqual(created["max_sandboxes"], 3)
        self.assertEqual(self.as_key(created["key"], "GET", "/v1/sandboxes").status, 200)
        listed = self.cli("list")
        self.assertIn(created["id"], [k["id"] for k in listed])
        self.assertNotIn(created["key"], json.dumps(listed))
        rotated = self.cli("rotate", created["id"])[0]
        SEEN_KEYS.append(rotated["key"])
        self.assertError(self.as_key(created["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")
        self.assertEqual(self.as_key(rotated["key"], "GET", "/v1/sandboxes").status, 200)
        self.cli("revoke", rotated["id"])
        self.assertError(self.as_key(rotated["key"], "GET", "/v1/sandboxes"), 401, "unauthorized")
        p = subprocess.run([BIN, "keys", "--data-dir", self.server.data_dir, "revoke",
                            "key_0000000000000000"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        p = subprocess.run([BIN, "keys", "--data-dir", self.server.data_dir, "create", "x",
                            "--scopes", "root"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("scope", p.stderr)

    # ---- last: the logs --------------------------------------------------------------------

    def test_zz_logs_hold_no_keys_env_values_or_contents(self):
        time.sleep(0.3)
        with open(self.server.log_path, "rb") as f:
            text = f.read().decode(errors="replace")
        self.assertIn("http out", text)
        for secret in SEEN_KEYS + [SECRET_ENV, SECRET_EXEC_ENV, SECRET_FILE, SECRET_STDIN]:
            self.assertNotIn(secret, text)
            self.assertNotIn(secret[4:] if secret.startswith("asb_") else secret, text)
        # JSON lines with request, key and sandbox ids as fields.
        outs = []
        for line in text.splitlines():
            if line.startswith("{"):
                obj = json.loads(line)
                self.assertIn("ts", obj)
                self.assertIn("level", obj)
                if obj["msg"].startswith("http out"):
                    outs.append(obj)
        self.assertTrue(outs)
        self.assertTrue(any("key_id" in o and "sandbox_id" in o and "request_id" in o
                            for o in outs))

    def test_one_key_cannot_take_every_mcp_session(self):
        # The endpoint holds at most 1000 sessions for all keys, each kept for an hour of
        # idleness; one tenant opened all of them in 0.7 s and every other tenant's initialize
        # answered 429 (found by the breaker). A key now has at most 100.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        hdrs = {"Accept": "application/json, text/event-stream"}
        a, b = self.make_key()["key"], self.make_key()["key"]
        opened = []
        try:
            for i in range(100):  # exactly the per-key limit passes
                r = self.as_key(a, "POST", "/mcp", init, headers=hdrs)
                self.assertEqual(r.status, 200, (i, r))
                opened.append((a, r.headers["mcp-session-id"]))
            r = self.as_key(a, "POST", "/mcp", init, headers=hdrs)  # one over fails
            self.assertError(r, 429, "limit_exceeded")
            self.assertIn("this API key", r.json()["error"]["message"])
            r = self.as_key(b, "POST", "/mcp", init, headers=hdrs)  # another tenant is served
            self.assertEqual(r.status, 200, r)
            opened.append((b, r.headers["mcp-session-id"]))
            key, sid = opened.pop(0)  # an ended session frees its place
            h = dict(hdrs, **{"Mcp-Session-Id": sid})
            self.assertLess(self.as_key(key, "DELETE", "/mcp", headers=h).status, 300)
            r = self.as_key(a, "POST", "/mcp", init, headers=hdrs)
            self.assertEqual(r.status, 200, r)
            opened.append((a, r.headers["mcp-session-id"]))
        finally:
            for key, sid in opened:
                self.as_key(key, "DELETE", "/mcp", headers=dict(hdrs, **{"Mcp-Session-Id": sid}),
                            check=False)

    def test_one_key_cannot_hold_every_request_thread(self):
        # Sync execs hold a thread of the server's blocking pool for their whole run; one key
        # held all 512 and another tenant's list waited 20.8 s (found by the breaker). A key
        # now has at most AGENT_SANDBOX_MAX_REQUESTS_PER_KEY (4 here; 128 by default) at once.
        a, b = self.make_key(), self.make_key()
        sid = self.create_as(a["key"])["id"]
        results = [None] * 4

        def hold(i):
            r = self.as_key(a["key"], "POST", "/v1/sandboxes/%s/exec" % sid,
                            {"command": "sleep 3", "timeout": 30}, timeout=60)
            results[i] = r.status

        threads = [threading.Thread(target=hold, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # the four are running (exactly at the limit)
        t0 = time.monotonic()
        r = self.as_key(a["key"], "GET", "/v1/sandboxes")  # one over: refused at once
        self.assertError(r, 429, "limit_exceeded")
        self.assertIn("4 requests in progress", r.json()["error"]["message"])
        self.assertEqual(r.headers.get("retry-after"), "1")
        r = self.as_key(b["key"], "GET", "/v1/sandboxes")  # another tenant is served at once
        self.assertEqual(r.status, 200, r)
        self.assertLess(time.monotonic() - t0, 1.0)
        r = self.server.request("GET", "/v1/sandboxes")  # admin keys are not limited
        self.assertEqual(r.status, 200, r)
        for t in threads:
            t.join(60)
        self.assertEqual(results, [200] * 4)
        r = self.as_key(a["key"], "GET", "/v1/sandboxes")  # places are given back
        self.assertEqual(r.status, 200, r)


class KeyFromDatabaseTest(unittest.TestCase):
    """A server with no AGENT_SANDBOX_API_KEYS starts when the data dir's database holds a key
    (made by the CLI before the first start), and events survive a restart."""

    def test_cli_key_then_serve_then_restart(self):
        reason = missing_prerequisite()
        if reason:
            self.skipTest(reason)
        srv = Server({})
        try:
            p = subprocess.run([BIN, "keys", "--data-dir", srv.data_dir, "--json", "create",
                                "first-admin", "--scopes", "admin"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            key = json.loads(p.stdout)["key"]
            SEEN_KEYS.append(key)
            srv.api_key = key
            srv.start()
            r = srv.request("POST", "/v1/sandboxes", {})
            self.assertEqual(r.status, 201, r)
            sid = r.json()["id"]
            before = srv.request("GET", "/v1/sandboxes/%s/events" % sid).json()["events"]
            self.assertEqual([e["action"] for e in before], ["sandbox.create"])
            self.assertEqual(srv.stop(), 0)
            srv.start()
            after = srv.request("GET", "/v1/sandboxes/%s/events" % sid).json()["events"]
            self.assertEqual(after, before)
            r = srv.request("GET", "/v1/sandboxes", headers={"X-API-Key": ""})
            self.assertEqual(r.status, 401, r)
        finally:
            srv.close()


class StartWithoutUsableKeyTest(unittest.TestCase):
    """serve exits 2 when neither AGENT_SANDBOX_API_KEYS nor the database holds a usable key
    (here: the only key is revoked), and on a bad --log-format. Needs only the binary."""

    def serve(self, data, env, args=()):
        e = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_SANDBOX_")}
        e.update({"AGENT_SANDBOX_DATA_DIR": data, "AGENT_SANDBOX_PORT": "1"})
        e.update(env)
        return subprocess.run([BIN, "serve"] + list(args), env=e, capture_output=True,
                              text=True, timeout=30)

    def test_revoked_only_key_and_bad_log_format_exit_2(self):
        import shutil
        import tempfile
        data = tempfile.mkdtemp(prefix="asb-e2e-auth-", dir="/var/tmp")
        try:
            p = subprocess.run([BIN, "keys", "--data-dir", data, "--json", "create", "k"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            created = json.loads(p.stdout)
            SEEN_KEYS.append(created["key"])
            p = subprocess.run([BIN, "keys", "--data-dir", data, "revoke", created["id"]],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = self.serve(data, {})
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("no API keys", p.stderr)
            self.assertIn("insecure-no-auth", p.stderr)
            p = self.serve(data, {"AGENT_SANDBOX_API_KEYS": "asb_" + "1" * 48},
                           ("--log-format", "xml"))
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--log-format", p.stderr)
            p = self.serve(data, {"AGENT_SANDBOX_INSECURE_NO_AUTH": "true",
                                  "AGENT_SANDBOX_EVENT_RETENTION_DAYS": "-1"})
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("AGENT_SANDBOX_EVENT_RETENTION_DAYS", p.stderr)
        finally:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
