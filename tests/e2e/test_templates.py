"""Templates (ADR 0012) against the real server: GET /v1/templates[/{name}],
create with an unknown template (400 naming the available ones), a template's default resources
and environment (the request's own values win, within the server's limits), and
DELETE /admin/templates/{name} (409 while in use or the default).

The data directory's templates/ is a real directory here: `base` links to the real base
template, and `res` and `huge` are made by this test from the base rootfs (bind-mounted) plus
a manifest of their own (the catalog reads templates/<name>/manifest.json, ADR 0012)."""

import json
import os
import subprocess
import unittest

from harness import TEMPLATES, Server, main, missing_prerequisite


def make_template(templates_dir, name, manifest):
    """templates/<name>/rootfs: a read-only bind mount of the base rootfs (a real directory,
    as the backend wants; the harness unmounts everything below the data dir at the end)."""
    d = os.path.join(templates_dir, name)
    os.makedirs(os.path.join(d, "rootfs"))
    subprocess.run(["mount", "--bind", os.path.realpath(os.path.join(TEMPLATES, "base", "rootfs")),
                    os.path.join(d, "rootfs")], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", os.path.join(d, "rootfs")], check=True)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(dict(manifest, name=name), f)


class TemplatesTest(unittest.TestCase):
    server = None

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        import tempfile
        data = tempfile.mkdtemp(prefix="asb-e2e-tmpl-", dir="/var/tmp")
        tdir = os.path.join(data, "templates")
        os.makedirs(tdir)
        os.symlink(os.path.realpath(os.path.join(TEMPLATES, "base")), os.path.join(tdir, "base"))
        make_template(tdir, "res", {
            "display_name": "Resources", "description": "defaults", "version": "7",
            "base": "base", "source": "toml", "tools": ["python3"],
            "env": {"TMPL_VAR": "from-template", "TMPL_OTHER": "kept"},
            "resources": {"cpus": 0.5, "memory_mb": 300, "workspace_mb": 64},
            "created_at": "2026-11-29T12:00:00Z", "size_bytes": 5})
        # Defaults beyond the server's limits are brought within them.
        make_template(tdir, "huge", {"resources": {"cpus": 4096, "memory_mb": 10 ** 9,
                                                   "workspace_mb": 10 ** 9}})
        cls.tdir = tdir
        cls.server = Server({"AGENT_SANDBOX_MAX_MEMORY_MB": "2048"}, data_dir=data)
        cls.server.own_dir = True  # ours: removed at the end (symlinks are unlinked, not followed)
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.server:
            cls.server.close()

    def setUp(self):
        self.created = []

    def tearDown(self):
        for sid in self.created:
            self.server.request("DELETE", "/v1/sandboxes/" + sid, check=False, timeout=60)

    def create(self, **spec):
        r = self.server.request("POST", "/v1/sandboxes", spec)
        self.assertEqual(r.status, 201, r)
        self.created.append(r.json()["id"])
        return r.json()

    def env_of(self, sid):
        out = self.server.run(sid, "env")["stdout"]
        return dict(l.split("=", 1) for l in out.splitlines() if "=" in l)

    def test_t1_list_has_the_manifest_fields(self):
        r = self.server.request("GET", "/v1/templates")
        self.assertEqual(r.status, 200, r)
        ts = {t["name"]: t for t in r.json()["templates"]}
        self.assertEqual(sorted(ts), ["base", "huge", "res"])
        base = ts["base"]
        for key in ("name", "display_name", "version", "description", "tools", "base",
                    "resources", "created_at"):
            self.assertIn(key, base)
        self.assertTrue(base["display_name"])
        self.assertTrue(base["description"])
        self.assertIn("python3", base["tools"])
        res = ts["res"]
        self.assertEqual(res["display_name"], "Resources")
        self.assertEqual(res["version"], "7")
        self.assertEqual(res["base"], "base")
        self.assertEqual(res["created_at"], "2026-11-29T12:00:00Z")
        self.assertEqual(res["resources"], {"cpus": 0.5, "memory_mb": 300, "workspace_mb": 64})
        self.assertEqual(res["env"]["TMPL_VAR"], "from-template")
        huge = ts["huge"]
        self.assertEqual(huge["resources"]["memory_mb"], 2048)
        self.assertEqual(huge["resources"]["workspace_mb"], 10240)
        self.assertIsNone(huge["created_at"])
        self.assertEqual(huge["display_name"], "huge")

    def test_get_one(self):
        r = self.server.request("GET", "/v1/templates/res")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["name"], "res")
        for bad in ("nope", "..", "Base", "a%2Fb", "x" * 300):
            r = self.server.request("GET", "/v1/templates/" + bad)
            self.assertEqual(r.status, 404, (bad, r))
            self.assertEqual(r.json()["error"]["code"], "not_found")

    def test_t1_unknown_template_is_400_naming_the_available(self):
        r = self.server.request("POST", "/v1/sandboxes", {"template": "nope"})
        self.assertEqual(r.status, 400, r)
        err = r.json()["error"]
        self.assertEqual(err["code"], "invalid_request")
        self.assertIn("nope", err["message"])
        self.assertIn("available: base, huge, res", err["message"])

    def test_template_defaults_apply_and_the_request_wins(self):
        s = self.create(template="res")
        self.assertEqual((s["cpus"], s["memory_mb"], s["workspace_mb"]), (0.5, 300, 64))
        env = self.env_of(s["id"])
        self.assertEqual(env.get("TMPL_VAR"), "from-template")
        s2 = self.create(template="res", cpus=1, memory_mb=256, workspace_mb=128,
                         env={"TMPL_VAR": "mine"})
        self.assertEqual((s2["cpus"], s2["memory_mb"], s2["workspace_mb"]), (1, 256, 128))
        env = self.env_of(s2["id"])
        self.assertEqual(env.get("TMPL_VAR"), "mine")
        self.assertEqual(env.get("TMPL_OTHER"), "kept")
        # The request is still checked against the server's limits (max memory 2048 here).
        r = self.server.request("POST", "/v1/sandboxes", {"template": "res", "memory_mb": 2049})
        self.assertEqual(r.status, 400, r)
        s3 = self.create(template="huge")
        self.assertEqual(s3["memory_mb"], 2048)
        # The base template has no defaults of its own: the server's.
        s4 = self.create(template="base")
        self.assertEqual(s4["memory_mb"], 512)

    def test_remove(self):
        make_template(self.tdir, "gone", {})
        s = self.create(template="gone")
        r = self.server.request("DELETE", "/admin/templates/gone")
        self.assertEqual(r.status, 409, r)
        self.assertIn(s["id"], r.json()["error"]["message"])
        self.assertEqual(self.server.request("DELETE", "/v1/sandboxes/" + s["id"]).status, 204)
        self.created.remove(s["id"])
        r = self.server.request("DELETE", "/admin/templates/gone")
        self.assertEqual(r.status, 204, r)
        self.assertEqual(self.server.request("GET", "/v1/templates/gone").status, 404)
        self.assertTrue(os.path.isdir(os.path.join(TEMPLATES, "base", "rootfs", "usr")))
        self.assertEqual(self.server.request("DELETE", "/admin/templates/gone").status, 404)
        r = self.server.request("DELETE", "/admin/templates/base")
        self.assertEqual(r.status, 409, r)
        self.assertIn("default", r.json()["error"]["message"])


if __name__ == "__main__":
    main()
