"""Issue 7 item 4 over real HTTP: seed A's /exec/* session routes. The curl examples of seed A's
README (its "REST API" and "Verify" sections) run VERBATIM through the shell, only the port
changed from 3000, against the real server and their answers are checked; then the defects of
seed A that we fix: binary content, empty files, guest errors as errors, ownership.

The seed asks for template "python"; the server here gets a templates directory where "python"
is the base template (which has python3) under that name."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import harness
from harness import Server, ServerTestCase, main, missing_prerequisite

SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                    "seeds", "004_9b8cc0ac6f240e97.txt")

# Copied character for character from the seed's README (test_commands_are_verbatim checks it
# against the seed file when that is present).
README_REST = [
    "curl http://localhost:3000/exec/templates",
    """curl -X POST http://localhost:3000/exec/session1/execute \\
  -H "Content-Type: application/json" \\
  -d '{"template":"python","command":"python3","args":["-c","print(\\"hello from python template\\")"]}'""",
    """curl -X POST http://localhost:3000/exec/session1/write \\
  -H "Content-Type: application/json" \\
  -d '{"path":"main.py","content":"print(\\"hello\\")"}'""",
    "curl http://localhost:3000/exec/session1/read?path=main.py",
    "curl http://localhost:3000/exec/session1/files?recursive=true",
    "curl -X DELETE http://localhost:3000/exec/session1",
    "curl http://localhost:3000/exec/",
]
README_VERIFY = [
    "curl http://localhost:3000/health",
    "curl http://localhost:3000/exec/templates",
    """curl -X POST http://localhost:3000/exec/test-session/execute \\
  -H "Content-Type: application/json" \\
  -d '{ "template": "python", "command": "python3", "args": ["--version"] }'""",
]


def b64(data):
    return base64.b64encode(data).decode()


class SeedATest(ServerTestCase):
    SERVER_ENV = {}

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        # A templates directory offering the base rootfs as "base" and as "python".
        cls.tmpl_dir = tempfile.mkdtemp(prefix="asb-seeda-tmpl-", dir="/var/tmp")
        real = os.path.join(harness.TEMPLATES, "base")
        os.symlink(real, os.path.join(cls.tmpl_dir, "base"))
        os.symlink(real, os.path.join(cls.tmpl_dir, "python"))
        saved = harness.TEMPLATES
        harness.TEMPLATES = cls.tmpl_dir
        try:
            cls.server = Server(cls.SERVER_ENV)
        finally:
            harness.TEMPLATES = saved
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            shutil.rmtree(cls.tmpl_dir, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmpl_dir, ignore_errors=True)

    def tearDown(self):
        for name in getattr(self, "_sessions", []):
            self.server.request("DELETE", "/exec/" + name, timeout=60)
        super().tearDown()

    def session(self, name):
        self.__dict__.setdefault("_sessions", []).append(name)
        return name

    def curl(self, command):
        cmd = command.replace("localhost:3000", "localhost:%d" % self.server.port)
        p = subprocess.run(["sh", "-c", cmd + " -sS"], capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, (cmd, p.stderr))
        return json.loads(p.stdout)

    def execute(self, name, body, query="", headers=None):
        return self.server.request("POST", "/exec/%s/execute%s" % (name, query), body,
                                   headers=headers)

    # ---- the README, verbatim --------------------------------------------------------------

    def test_commands_are_verbatim(self):
        if not os.path.exists(SEED):
            self.skipTest("seed file not found at " + SEED)
        with open(SEED, encoding="utf-8") as f:
            text = f.read()
        for cmd in README_REST + README_VERIFY:
            self.assertIn(cmd, text)

    def test_readme_rest_api_examples(self):
        self.session("session1")
        t = self.curl(README_REST[0])
        names = [x["name"] for x in t["templates"]]
        self.assertIn("python", names)
        self.assertTrue(all("displayName" in x for x in t["templates"]))

        r = self.curl(README_REST[1])
        self.assertEqual(r["exitCode"], 0, r)
        self.assertEqual(r["output"][0], {"type": "stream", "name": "stdout",
                                          "data": "hello from python template\n"})
        self.assertEqual(r["sessionId"], "session1")
        sid = r["sandboxId"]
        info = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(info["template"], "python")

        w = self.curl(README_REST[2])
        self.assertEqual(w["path"], "/workspace/main.py")
        self.assertEqual(w["size"], len('print("hello")'))

        rd = self.curl(README_REST[3])
        self.assertEqual(rd["content"], 'print("hello")')

        # The same session: the file is there for the next command.
        r = self.execute("session1", {"command": "python3", "args": ["main.py"]}).json()
        self.assertEqual(r["output"][0]["data"], "hello\n")

        ls = self.curl(README_REST[4])
        self.assertIn("/workspace/main.py", [f["path"] for f in ls["files"]])

        lst = self.curl(README_REST[6])
        self.assertIn("session1", [s["sessionId"] for s in lst["sessions"]])

        d = self.curl(README_REST[5])
        self.assertEqual(d, {"sessionId": "session1", "destroyed": True})
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid).status, 404)

        lst = self.curl(README_REST[6])
        self.assertNotIn("session1", [s["sessionId"] for s in lst["sessions"]])
        self.assertError(self.server.request("GET", "/exec/session1/read?path=main.py"), 404,
                         "not_found")

    def test_readme_verify_examples(self):
        self.session("test-session")
        h = self.curl(README_VERIFY[0])
        self.assertEqual(h.get("status"), "ok", h)
        self.assertIn("python", [x["name"] for x in self.curl(README_VERIFY[1])["templates"]])
        r = self.curl(README_VERIFY[2])
        self.assertEqual(r["exitCode"], 0, r)
        out = "".join(e["data"] for e in r["output"])
        self.assertRegex(out, r"^Python 3\.\d+")

    # ---- execute options -------------------------------------------------------------------

    def test_cwd_env_timeout_exit_code_and_stderr(self):
        name = self.session("opts")
        r = self.execute(name, {"command": "mkdir", "args": ["-p", "sub"]})
        self.assertEqual(r.status, 200, r)
        r = self.execute(name, {"command": "sh", "args": ["-c", "pwd; echo $FOO; echo e >&2; exit 3"],
                                "cwd": "sub", "env": {"FOO": "bar"}}).json()
        self.assertEqual(r["exitCode"], 3)
        self.assertEqual(r["output"], [
            {"type": "stream", "name": "stdout", "data": "/workspace/sub\nbar\n"},
            {"type": "stream", "name": "stderr", "data": "e\n"}])
        r = self.execute(name, {"command": "sleep", "args": ["30"], "timeout": 500}).json()
        self.assertTrue(r["timedOut"], r)
        self.assertLess(r["durationMs"], 10000)

    def test_ndjson_by_accept_header_and_query(self):
        name = self.session("nd")
        for query, headers in (("", {"Accept": "application/x-ndjson"}), ("?format=ndjson", {})):
            r = self.execute(name, {"command": "sh", "args": ["-c", "echo out; echo err >&2"]},
                             query=query, headers=headers)
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.headers["content-type"].startswith("application/x-ndjson"), r)
            lines = [json.loads(x) for x in r.body.decode().splitlines()]
            self.assertEqual(lines[0], {"type": "stream", "name": "stdout", "data": "out\n"})
            self.assertEqual(lines[1], {"type": "stream", "name": "stderr", "data": "err\n"})
            self.assertEqual(lines[-1]["type"], "exit")
            self.assertEqual(lines[-1]["exitCode"], 0)

    # ---- seed A's defects, fixed -----------------------------------------------------------

    def test_binary_round_trip_and_binary_output(self):
        name = self.session("bin")
        data = bytes(range(256)) * 4
        r = self.server.request("POST", "/exec/%s/write" % name,
                                {"path": "blob.bin", "contentBase64": b64(data)})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["size"], len(data))
        rd = self.server.request("GET", "/exec/%s/read?path=blob.bin" % name).json()
        self.assertNotIn("content", rd)
        self.assertEqual(base64.b64decode(rd["contentBase64"]), data)
        sha = self.execute(name, {"command": "sha256sum", "args": ["blob.bin"]}).json()
        import hashlib
        self.assertTrue(sha["output"][0]["data"].startswith(hashlib.sha256(data).hexdigest()))
        out = self.execute(name, {"command": "cat", "args": ["blob.bin"]}).json()
        self.assertEqual(out["output"][0]["encoding"], "base64")
        self.assertEqual(base64.b64decode(out["output"][0]["data"]), data)

    def test_empty_file(self):
        name = self.session("empty")
        r = self.server.request("POST", "/exec/%s/write" % name, {"path": "e.txt", "content": ""})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["size"], 0)
        rd = self.server.request("GET", "/exec/%s/read?path=e.txt" % name).json()
        self.assertEqual(rd, {"path": "/workspace/e.txt", "size": 0, "content": ""})

    def test_a_listing_over_the_byte_budget_is_413(self):
        # Security review W5: seed A's listing shares the 16 MiB listing budget of
        # /v1/.../files/list (4,200 paths of 4,034 bytes are 17.2 MB of listing data).
        name = self.session("w5")
        tree = ("mkdir W5 && cd W5 && N=$(printf '%0250d' 0) && "
                "for i in $(seq 15); do mkdir $N && cd $N || exit 1; done && "
                "seq -f '%0255.0f' 1 4200 | xargs touch")
        r = self.execute(name, {"command": "sh", "args": ["-c", tree]})
        self.assertEqual(r.json()["exitCode"], 0, r)
        r = self.server.request("GET", "/exec/%s/files?path=W5&recursive=true" % name)
        self.assertError(r, 413, "payload_too_large")
        self.assertIn("listing exceeds 16777216 bytes", r.json()["error"]["message"])
        self.assertEqual(self.server.request("GET", "/exec/%s/files?path=W5" % name).status, 200)

    def test_guest_errors_are_errors(self):
        name = self.session("errs")
        self.assertEqual(self.execute(name, {"command": "true"}).status, 200)
        self.assertError(self.server.request("GET", "/exec/%s/read?path=nope.txt" % name),
                         404, "not_found")
        self.assertError(self.server.request("GET", "/exec/%s/read?path=../../etc/shadow" % name),
                         400, "invalid_request")
        self.assertError(self.server.request("GET", "/exec/%s/files?path=nope" % name),
                         404, "not_found")
        # A command that cannot start is a result (exit 127, as a shell says), not a 200
        # with an empty answer.
        r = self.execute(name, {"command": "/no/such/binary"}).json()
        self.assertEqual(r["exitCode"], 127, r)
        self.assertIn("not found", r["output"][0]["data"])
        self.assertError(self.execute(name, {"command": "true", "cwd": "nodir"}), 404,
                         "not_found")
        self.assertError(self.execute(name, {"args": ["x"]}), 400, "invalid_request")
        self.assertError(self.execute(name, {"command": "true", "bogus": 1}), 400,
                         "invalid_request")
        self.assertError(self.execute("new1", {"command": "true", "template": "nope"}), 400,
                         "invalid_request")
        self.assertError(self.server.request("GET", "/exec/never/read?path=x"), 404,
                         "not_found")
        self.assertError(self.server.request("DELETE", "/exec/never"), 404, "not_found")

    def test_session_names_are_validated(self):
        for bad in ("a" * 65, "a%20b", "a$b", "..%20", "%00"):
            self.assertError(self.execute(bad, {"command": "true"}), 400, "invalid_request")
        # A decoded '/' splits the path: no route matches at all.
        for bad in ("a%2Fb", "%2E%2E%2Fx"):
            self.assertError(self.execute(bad, {"command": "true"}), 404, "not_found")
        self.assertEqual(self.server.request("GET", "/exec/").json()["sessions"], [])
        ok = self.session("A-z_0.9")
        self.assertEqual(self.execute(ok, {"command": "true"}).status, 200)


class SeedAOwnershipTest(ServerTestCase):
    """Two keys using the same session name get two sandboxes; neither sees the other's."""

    ADMIN_KEY = "asb_" + os.urandom(24).hex()
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": ADMIN_KEY}

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server(cls.SERVER_ENV, api_key=cls.ADMIN_KEY)
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            raise

    def key(self):
        r = self.server.request("POST", "/v1/keys", {"name": "seeda-" + os.urandom(3).hex()})
        self.assertEqual(r.status, 201, r)
        return {"Authorization": "Bearer " + r.json()["key"]}

    def test_ownership(self):
        a, b = self.key(), self.key()
        s = self.server
        try:
            r = s.request("POST", "/exec/shared/write", {"path": "secret.txt", "content": "A"},
                          headers=a)
            self.assertEqual(r.status, 200, r)
            # B's session "shared" is another sandbox: A's file is not there.
            self.assertError(s.request("GET", "/exec/shared/read?path=secret.txt", headers=b),
                             404, "not_found")
            self.assertError(s.request("DELETE", "/exec/shared", headers=b), 404, "not_found")
            r = s.request("POST", "/exec/shared/execute", {"command": "ls"}, headers=b)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["output"], [])
            sa = s.request("GET", "/exec/", headers=a).json()["sessions"]
            sb = s.request("GET", "/exec/", headers=b).json()["sessions"]
            self.assertEqual(len(sa), 1)
            self.assertEqual(len(sb), 1)
            self.assertNotEqual(sa[0]["sandboxId"], sb[0]["sandboxId"])
            rd = s.request("GET", "/exec/shared/read?path=secret.txt", headers=a).json()
            self.assertEqual(rd["content"], "A")
            # Unauthenticated: 401.
            self.assertEqual(s.request("GET", "/exec/", headers={"X-API-Key": "nope"}).status,
                             401)
        finally:
            s.request("DELETE", "/exec/shared", headers=a)
            s.request("DELETE", "/exec/shared", headers=b)


if __name__ == "__main__":
    main()
