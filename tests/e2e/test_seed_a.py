"""Seed A's /exec/* session routes over real HTTP (ADR 0007).

1. The curl examples of seed A's README (its "REST API" and "Verify" sections) run VERBATIM
   through the shell, only the port changed from 3000.
2. Every example of seed A's SDK READMEs (sdk/typescript/README.md and the README's "Client
   SDKs" block), as the exact requests seed A's TypeScript SDK sends for it and the fields it
   reads from the answers. CI cannot download seed A's SDK, so SdkWire below sends what its
   sdk/typescript/src/session.ts and client.ts send; each expectation names the seed A file it
   comes from (vivek1504/agent-sandbox: src/routes/exec.ts, the guest's
   minimal-rootfs/runtime/runtime.js, src/session/session.ts, src/vm/templates.ts).
3. Seed A's defects that we fix (binary content, empty files, guest errors as 4xx, tenancy),
   and sessions kept in the database: the same name reaches the same sandbox after a restart
   (SIGTERM and SIGKILL), and a session ends with its sandbox (deleted, reaped, lost).

The seed asks for templates "python" and "node"; the server here gets a templates directory
where "python" is the base template (which has python3) and "node" is the real node template
when one is built, else base too (then the assertions that need node itself are skipped)."""

import base64
import hashlib
import http.client
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
import uuid
from urllib.parse import quote, urlencode

import harness
from harness import Server, ServerTestCase, kill_sandbox, main, missing_prerequisite

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


def seed_templates():
    """A templates directory with base, python (= base) and node; and whether node is real."""
    d = tempfile.mkdtemp(prefix="asb-seeda-tmpl-", dir="/var/tmp")
    real = os.path.join(harness.TEMPLATES, "base")
    node = os.path.join(harness.TEMPLATES, "node")
    has_node = os.path.isdir(os.path.join(node, "rootfs"))
    os.symlink(real, os.path.join(d, "base"))
    os.symlink(real, os.path.join(d, "python"))
    os.symlink(node if has_node else real, os.path.join(d, "node"))
    return d, has_node


def seed_server(env, api_key=None):
    d, has_node = seed_templates()
    saved = harness.TEMPLATES
    harness.TEMPLATES = d
    try:
        server = Server(env, api_key=api_key)
    finally:
        harness.TEMPLATES = saved
    try:
        server.start()
    except Exception:
        server.close()
        shutil.rmtree(d, ignore_errors=True)
        raise
    return server, d, has_node


class SdkWire:
    """What seed A's TypeScript SDK sends, request for request (sdk/typescript/src/session.ts
    and client.ts), and its answers decoded as the SDK decodes them."""

    DEFAULT_TIMEOUT = 30_000  # client.ts: opts.defaultTimeout ?? 30_000
    DEFAULT_TEMPLATE = "node"  # client.ts: opts.defaultTemplate ?? "node"

    def __init__(self, server, headers=None):
        self.server = server
        self.headers = dict(headers or {})  # client.ts: apiKey -> Authorization: Bearer

    def raw(self, method, path, body=None, extra=None):
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        try:
            h = dict(self.headers)
            h.update(extra or {})
            c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def request(self, method, path, body=None):
        """session.ts _request(): `${baseUrl}/exec${path}`, headers {...headers,
        "Content-Type": "application/json"}, a JSON body unless GET; the answer is parsed as
        JSON; !res.ok throws SandboxError(json.error ?? status text, status, json)."""
        status, headers, data = self.raw(method, "/exec" + path,
                                         None if method == "GET" else body,
                                         {"Content-Type": "application/json"})
        parsed = json.loads(data) if data else None
        return status, parsed

    @staticmethod
    def exec_body(command, args=None, cwd=None, env=None, timeout=None, template=DEFAULT_TEMPLATE):
        # session.ts exec()/execStream(): JSON.stringify drops the undefined members.
        body = {"command": command, "args": args, "cwd": cwd, "env": env,
                "timeout": timeout if timeout is not None else SdkWire.DEFAULT_TIMEOUT,
                "template": template}
        return {k: v for k, v in body.items() if v is not None}

    def exec(self, sid, command, **kw):
        return self.request("POST", "/%s/execute" % sid, self.exec_body(command, **kw))

    def run_code(self, sid, template, code):
        # session.ts runCode(): python -> python3 -c, node -> node -e, default sh -c.
        argv = {"python": ("python3", "-c"), "node": ("node", "-e")}.get(template, ("sh", "-c"))
        return self.exec(sid, argv[0], args=[argv[1], code], template=template)

    def exec_stream(self, sid, command, **kw):
        """session.ts execStream(): POST .../execute?format=ndjson with Accept:
        application/x-ndjson; !res.ok throws; else every non-blank line is JSON.parse()d and
        yielded. Returns (status, content-type, [(seconds since the request, chunk)])."""
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
        try:
            h = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
            h.update(self.headers)
            t0 = time.monotonic()
            c.request("POST", "/exec/%s/execute?format=ndjson" % sid,
                      body=json.dumps(self.exec_body(command, **kw)), headers=h)
            r = c.getresponse()
            if r.status != 200:
                return r.status, r.getheader("content-type"), json.loads(r.read())
            chunks = []
            while True:
                line = r.readline()
                if not line:
                    break
                if line.strip():
                    chunks.append((time.monotonic() - t0, json.loads(line)))
            return r.status, r.getheader("content-type"), chunks
        finally:
            c.close()

    def write_file(self, sid, path, content):
        return self.request("POST", "/%s/write" % sid, {"path": path, "content": content})

    def read_file(self, sid, path):
        return self.request("GET", "/%s/read?path=%s" % (sid, quote(path, safe="")))

    def list_files(self, sid, path=".", recursive=False):
        params = {"path": path}  # session.ts: new URLSearchParams({ path }), recursive=true
        if recursive:
            params["recursive"] = "true"
        return self.request("GET", "/%s/files?%s" % (sid, urlencode(params)))

    def destroy(self, sid):
        return self.request("DELETE", "/%s" % sid)

    def templates(self):  # client.ts: GET /exec/templates, reads data.templates
        status, _, data = self.raw("GET", "/exec/templates")
        return status, json.loads(data)

    def sessions(self):  # client.ts: GET /exec/, reads data.sessions
        status, _, data = self.raw("GET", "/exec/")
        return status, json.loads(data)

    def healthy(self):  # client.ts: GET /health, res.ok
        return self.raw("GET", "/health")[0]


class SeedACase(ServerTestCase):
    """A server with seed A's templates; sessions named through session() are deleted."""

    SERVER_ENV = {}

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server, cls.tmpl_dir, cls.has_node = seed_server(cls.SERVER_ENV)
        cls.sdk = SdkWire(cls.server)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.tmpl_dir, ignore_errors=True)

    def tearDown(self):
        for name in getattr(self, "_sessions", []):
            self.server.request("DELETE", "/exec/" + name, timeout=60)
        super().tearDown()

    def session(self, name=None):
        # client.ts create(): crypto.randomUUID() names the session.
        name = name or str(uuid.uuid4())
        self.__dict__.setdefault("_sessions", []).append(name)
        return name

    def assertSeedAError(self, status_body, status, code):
        # exec.ts answers {error: string}; session.ts takes it as the SandboxError's message.
        got_status, body = status_body
        self.assertEqual(got_status, status, body)
        self.assertEqual(set(body), {"error", "code"}, body)
        self.assertIsInstance(body["error"], str)
        self.assertTrue(body["error"])
        self.assertEqual(body["code"], code, body)

    def assertResult(self, r):
        """The fields of exec.ts's answer (and runtime.js's response data) that the SDK's
        ExecResult names (types.ts): exitCode, signal?, duration, output[{stream, data, ts}]."""
        self.assertIsInstance(r["exitCode"], int, r)
        self.assertIsInstance(r["duration"], int, r)
        self.assertIsInstance(r["output"], list, r)
        for o in r["output"]:
            self.assertIn(o["stream"], ("stdout", "stderr"), o)
            self.assertIsInstance(o["data"], str, o)
            self.assertIsInstance(o["ts"], int, o)
            self.assertLessEqual(set(o), {"stream", "data", "ts", "dataBase64"}, o)

    def curl(self, command):
        cmd = command.replace("localhost:3000", "localhost:%d" % self.server.port)
        p = subprocess.run(["sh", "-c", cmd + " -sS"], capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, (cmd, p.stderr))
        return json.loads(p.stdout)

    def execute(self, name, body, query="", headers=None):
        return self.server.request("POST", "/exec/%s/execute%s" % (name, query), body,
                                   headers=headers)


class SeedAReadmeTest(SeedACase):
    """Seed A's README curl examples, verbatim, and its defects that we fix."""

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
        self.assertEqual(r["output"][0]["stream"], "stdout")
        self.assertEqual(r["output"][0]["data"], "hello from python template\n")
        self.assertEqual(r["sessionId"], "session1")
        sid = r["sandboxId"]
        info = self.server.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(info["template"], "python")

        w = self.curl(README_REST[2])
        self.assertEqual(w, {"bytesWritten": len('print("hello")')})  # runtime.js write_file

        rd = self.curl(README_REST[3])
        self.assertEqual(rd, {"content": 'print("hello")', "size": 14})  # exec.ts /read

        # The same session: the file is there for the next command.
        r = self.execute("session1", {"command": "python3", "args": ["main.py"]}).json()
        self.assertEqual(r["output"][0]["data"], "hello\n")

        ls = self.curl(README_REST[4])
        self.assertIn({"path": "main.py", "type": "file", "size": 14}, ls["files"])

        lst = self.curl(README_REST[6])
        self.assertIn("session1", [s["sessionId"] for s in lst["sessions"]])

        d = self.curl(README_REST[5])
        self.assertEqual(d, {"destroyed": True})  # exec.ts DELETE: {destroyed}
        self.assertEqual(self.server.request("GET", "/v1/sandboxes/" + sid).status, 404)

        lst = self.curl(README_REST[6])
        self.assertNotIn("session1", [s["sessionId"] for s in lst["sessions"]])
        self.assertSeedAError(self.sdk.read_file("session1", "main.py"), 404, "not_found")

    def test_readme_verify_examples(self):
        self.session("test-session")
        h = self.curl(README_VERIFY[0])
        self.assertEqual(h.get("status"), "ok", h)
        self.assertIn("python", [x["name"] for x in self.curl(README_VERIFY[1])["templates"]])
        r = self.curl(README_VERIFY[2])
        self.assertEqual(r["exitCode"], 0, r)
        out = "".join(e["data"] for e in r["output"])
        self.assertRegex(out, r"^Python 3\.\d+")

    def test_cwd_env_timeout_exit_code_and_stderr(self):
        name = self.session("opts")
        r = self.execute(name, {"command": "mkdir", "args": ["-p", "sub"]})
        self.assertEqual(r.status, 200, r)
        r = self.execute(name, {"command": "sh", "args": ["-c", "pwd; echo $FOO; echo e >&2; exit 3"],
                                "cwd": "sub", "env": {"FOO": "bar"}}).json()
        self.assertResult(r)
        self.assertEqual(r["exitCode"], 3)
        self.assertNotIn("signal", r)  # runtime.js: signal || undefined
        self.assertEqual([(o["stream"], o["data"]) for o in r["output"]],
                         [("stdout", "/workspace/sub\nbar\n"), ("stderr", "e\n")])
        # runtime.js: a timeout kills the command; node reports exitCode null (-1) and a signal.
        r = self.execute(name, {"command": "sleep", "args": ["30"], "timeout": 500}).json()
        self.assertTrue(r["timedOut"], r)
        self.assertEqual(r["exitCode"], -1, r)
        self.assertRegex(r["signal"], r"^SIG[A-Z]+$")
        self.assertLess(r["duration"], 10000)

    def test_binary_round_trip_and_binary_output(self):
        name = self.session("bin")
        data = bytes(range(256)) * 4
        r = self.server.request("POST", "/exec/%s/write" % name,
                                {"path": "blob.bin", "contentBase64": b64(data)})
        self.assertEqual(r.json(), {"bytesWritten": len(data)})
        rd = self.server.request("GET", "/exec/%s/read?path=blob.bin" % name).json()
        self.assertEqual(base64.b64decode(rd["contentBase64"]), data)
        self.assertIn("\ufffd", rd["content"])  # seed A's lossy text is there too
        sha = self.execute(name, {"command": "sha256sum", "args": ["blob.bin"]}).json()
        self.assertTrue(sha["output"][0]["data"].startswith(hashlib.sha256(data).hexdigest()))
        out = self.execute(name, {"command": "cat", "args": ["blob.bin"]}).json()
        self.assertEqual(base64.b64decode(out["output"][0]["dataBase64"]), data)
        self.assertIn("\ufffd", out["output"][0]["data"])

    def test_empty_file_and_mode(self):
        # exec.ts refuses content "" (400 "path and content required"); we write it.
        name = self.session("empty")
        r = self.server.request("POST", "/exec/%s/write" % name, {"path": "e.txt", "content": ""})
        self.assertEqual(r.json(), {"bytesWritten": 0})
        rd = self.server.request("GET", "/exec/%s/read?path=e.txt" % name).json()
        self.assertEqual(rd, {"content": "", "size": 0})
        # exec.ts passes `mode` on; we apply it (0..0777: exactly 0777 passes, 0o1000 fails).
        r = self.server.request("POST", "/exec/%s/write" % name,
                                {"path": "x.sh", "content": "echo hi\n", "mode": 0o777})
        self.assertEqual(r.status, 200, r)
        r = self.execute(name, {"command": "stat", "args": ["-c", "%a", "x.sh"]}).json()
        self.assertEqual(r["output"][0]["data"], "777\n")
        self.assertSeedAError(self.sdk.request("POST", "/%s/write" % name,
                                               {"path": "y", "content": "", "mode": 0o1000}),
                              400, "invalid_request")

    def test_a_listing_over_the_byte_budget_is_413(self):
        # Security review W5: seed A's listing shares the 16 MiB listing budget of
        # /v1/.../files/list (4,200 paths of 4,034 bytes are 17.2 MB of listing data).
        name = self.session("w5")
        tree = ("mkdir W5 && cd W5 && N=$(printf '%0250d' 0) && "
                "for i in $(seq 15); do mkdir $N && cd $N || exit 1; done && "
                "seq -f '%0255.0f' 1 4200 | xargs touch")
        r = self.execute(name, {"command": "sh", "args": ["-c", tree]})
        self.assertEqual(r.json()["exitCode"], 0, r)
        r = self.sdk.list_files(name, "W5", recursive=True)
        self.assertSeedAError(r, 413, "payload_too_large")
        self.assertIn("listing exceeds 16777216 bytes", r[1]["error"])
        self.assertEqual(self.sdk.list_files(name, "W5")[0], 200)

    def test_guest_errors_are_errors(self):
        # exec.ts answers every guest error 500 {error}; ours say what went wrong.
        name = self.session("errs")
        self.assertEqual(self.execute(name, {"command": "true"}).status, 200)
        sdk = self.sdk
        self.assertSeedAError(sdk.read_file(name, "nope.txt"), 404, "not_found")
        self.assertSeedAError(sdk.read_file(name, "../../etc/shadow"), 400, "invalid_request")
        self.assertSeedAError(sdk.list_files(name, "nope"), 404, "not_found")
        # A command that cannot start is a result (exit 127, as a shell says).
        s, r = sdk.exec(name, "/no/such/binary")
        self.assertEqual((s, r["exitCode"]), (200, 127), r)
        self.assertIn("not found", r["output"][0]["data"])
        # A missing cwd is a bad field (ADR 0016), not a missing session.
        self.assertSeedAError(sdk.exec(name, "true", cwd="nodir"), 400, "invalid_request")
        # exec.ts: 400 {error: "command is required"}.
        self.assertEqual(sdk.request("POST", "/%s/execute" % name, {"args": ["x"]}),
                         (400, {"error": "command is required", "code": "invalid_request"}))
        self.assertSeedAError(sdk.request("POST", "/%s/execute" % name,
                                          {"command": "true", "bogus": 1}), 400, "invalid_request")
        self.assertSeedAError(sdk.exec(self.session(), "true", template="nope"), 400,
                              "invalid_request")
        self.assertSeedAError(sdk.request("POST", "/%s/execute" % name, "not json"), 400,
                              "invalid_request")
        # A session that was never used: no such file, and an empty workspace listing.
        self.assertSeedAError(sdk.read_file("never", "x"), 404, "not_found")
        self.assertEqual(sdk.list_files("never"), (200, {"files": []}))
        self.assertSeedAError(sdk.list_files("never", "sub"), 404, "not_found")
        self.assertNotIn("never", [x["sessionId"] for x in sdk.sessions()[1]["sessions"]])

    def test_session_names_are_validated(self):
        for bad in ("a" * 65, "a%20b", "a$b", "..%20", "%00"):
            self.assertSeedAError(self.sdk.exec(bad, "true", template="python"), 400,
                                  "invalid_request")
        # A decoded '/' splits the path: no route matches at all.
        for bad in ("a%2Fb", "%2E%2E%2Fx"):
            self.assertEqual(self.sdk.exec(bad, "true", template="python")[0], 404)
        self.assertEqual(self.sdk.sessions(), (200, {"sessions": []}))
        ok = self.session("A-z_0.9" + "x" * 57)  # exactly 64 characters
        self.assertEqual(self.sdk.exec(ok, "true", template="python")[0], 200)


class SeedASdkTest(SeedACase):
    """Each example of seed A's SDK READMEs, as the requests its SDK sends for it."""

    def test_quick_start(self):
        # sdk/typescript/README.md "Quick Start": create({template: "python"}) names the
        # session with a UUID (client.ts); runCode -> python3 -c (session.ts).
        sid = self.session()
        s, r = self.sdk.run_code(sid, "python", "print(2 + 2)")
        self.assertEqual(s, 200, r)
        self.assertResult(r)
        self.assertEqual(r["output"][0]["data"], "4\n")  # result.output[0].data
        self.assertEqual(self.sdk.destroy(sid), (200, {"destroyed": True}))

    def test_create_client_and_sessions_are_lazy(self):
        # "Create a Client" and "Sessions" send nothing: a session handle is a name until its
        # first request, which creates the sandbox with the handle's template (gateway.ts).
        sid = self.session("build-123")
        self.assertEqual(self.sdk.sessions(), (200, {"sessions": []}))
        s, r = self.sdk.exec(sid, "true", template="node")
        self.assertEqual(s, 200, r)
        info = self.server.request("GET", "/v1/sandboxes/" + r["sandboxId"]).json()
        self.assertEqual(info["template"], "node")
        # session.ts: a template sent later does not change the session.
        s, r2 = self.sdk.exec(sid, "true", template="python")
        self.assertEqual(r2["sandboxId"], r["sandboxId"])

    def test_execute_commands(self):
        # sdk/typescript/README.md "Execute Commands".
        node, py = self.session("ex-node"), self.session("ex-py")
        s, r = self.sdk.exec(node, "node", args=["-e", "console.log('hello')"], timeout=10_000)
        self.assertEqual(s, 200, r)
        self.assertResult(r)
        if self.has_node:
            self.assertEqual(r["exitCode"], 0)  # result.exitCode
            self.assertEqual([(o["stream"], o["data"]) for o in r["output"]],
                             [("stdout", "hello\n")])  # [{ stream, data: "hello\n", ts }]
        # session.run() -> exec("sh", {args: ["-c", cmd]}).
        s, r = self.sdk.exec(node, "sh", args=["-c", "echo hello && ls -la"])
        self.assertEqual(r["exitCode"], 0, r)
        self.assertTrue(r["output"][0]["data"].startswith("hello\n"), r)
        s, r = self.sdk.run_code(py, "python", "print('hello')")
        self.assertEqual(r["output"][0]["data"], "hello\n", r)
        s, r = self.sdk.run_code(node, "node", "console.log(42)")
        self.assertResult(r)
        if self.has_node:
            self.assertEqual(r["output"][0]["data"], "42\n", r)

    def check_stream(self, status, ctype, chunks):
        """exec.ts ndjson: {type:"stream", stream, data, ts} per chunk, then one
        {type:"result", exitCode, signal?, duration} (session.ts yields each line; the
        README's loop reads chunk.type, chunk.data, chunk.exitCode)."""
        self.assertEqual(status, 200, chunks)
        self.assertTrue(ctype.startswith("application/x-ndjson"), ctype)
        *body, (_, last) = chunks
        for _, c in body:
            self.assertEqual(c["type"], "stream", c)
            self.assertEqual(set(c), {"type", "stream", "data", "ts"}, c)
            self.assertIn(c["stream"], ("stdout", "stderr"))
        self.assertEqual(last["type"], "result", last)
        self.assertIsInstance(last["exitCode"], int)
        self.assertIsInstance(last["duration"], int)
        return [c for _, c in body], last

    def test_stream_output(self):
        # sdk/typescript/README.md "Stream Output": execStream("npm", {args: ["test"]}).
        sid = self.session("ex-stream")
        body, last = self.check_stream(*self.sdk.exec_stream(sid, "npm", args=["test"]))
        self.assertTrue(body, "no stream chunk")
        if self.has_node:  # npm test without a package.json
            self.assertNotEqual(last["exitCode"], 0)
            self.assertIn("package.json", "".join(c["data"] for c in body))
        # Output arrives as it is written ("stream output as it arrives"), not at the end.
        status, ctype, chunks = self.sdk.exec_stream(
            sid, "sh", args=["-c", "echo one; sleep 3; echo two >&2"])
        body, last = self.check_stream(status, ctype, chunks)
        self.assertEqual([(c["stream"], c["data"]) for c in body],
                         [("stdout", "one\n"), ("stderr", "two\n")])
        # (the first line came seconds before the end, not in one write with it)
        self.assertGreaterEqual(chunks[-1][0] - chunks[0][0], 2.5, chunks)
        self.assertEqual(last["exitCode"], 0)
        self.assertNotIn("signal", last)
        # A command that fails once the stream began ends it with exec.ts's error line,
        # {type: "error", error: message} (+ our code).
        status, _, chunks = self.sdk.exec_stream(sid, "true", cwd="nodir")
        self.assertEqual(status, 200)
        self.assertEqual([c for _, c in chunks][-1:], [
            {"type": "error", "error": chunks[-1][1].get("error"), "code": "invalid_request"}])
        self.assertIsInstance(chunks[-1][1]["error"], str)
        # One that fails before it starts is an HTTP error (session.ts throws on !res.ok).
        status, _, err = self.sdk.exec_stream(self.session(), "true", template="nope")
        self.assertEqual((status, err["code"]), (400, "invalid_request"), err)
        self.assertIsInstance(err["error"], str)

    def test_filesystem(self):
        # sdk/typescript/README.md "Filesystem".
        sid = self.session("ex-files")
        content = 'console.log("hello")'
        self.assertEqual(self.sdk.write_file(sid, "index.js", content),
                         (200, {"bytesWritten": len(content)}))  # runtime.js write_file
        self.assertEqual(self.sdk.read_file(sid, "index.js"),
                         (200, {"content": content, "size": len(content)}))  # const { content }
        self.sdk.write_file(sid, "src/lib/a.js", "x")
        s, r = self.sdk.list_files(sid, ".", recursive=True)
        # runtime.js listDir: paths relative to /workspace, dirs with size 0.
        self.assertEqual(s, 200, r)
        self.assertEqual(sorted(r["files"], key=lambda f: f["path"]), [
            {"path": "index.js", "type": "file", "size": len(content)},
            {"path": "src", "type": "dir", "size": 0},
            {"path": "src/lib", "type": "dir", "size": 0},
            {"path": "src/lib/a.js", "type": "file", "size": 1}])
        # Relative to /workspace whatever directory is listed; not recursive: one level.
        self.assertEqual(self.sdk.list_files(sid, "src"),
                         (200, {"files": [{"path": "src/lib", "type": "dir", "size": 0}]}))

    def test_templates_sessions_health(self):
        # sdk/typescript/README.md "Templates": templates(), sessions(), healthy().
        s, t = self.sdk.templates()
        self.assertEqual(s, 200)
        node = [x for x in t["templates"] if x["name"] == "node"]
        self.assertEqual(len(node), 1, t)
        # templates.ts TemplateManifest: name, displayName, version, description, tools,
        # baseImage, createdAt (resources when the template has some).
        self.assertLessEqual({"name", "displayName", "version", "description", "tools",
                              "baseImage", "createdAt"}, set(node[0]))
        self.assertIsInstance(node[0]["tools"], list)
        sid = self.session("ex-list")
        before = int(time.time() * 1000)
        self.assertEqual(self.sdk.exec(sid, "true", template="python")[0], 200)
        s, lst = self.sdk.sessions()
        self.assertEqual(s, 200)
        (mine,) = [x for x in lst["sessions"] if x["sessionId"] == sid]
        # session.ts Session: sessionId, state ("active"), template, createdAt and
        # lastActivityAt in Unix ms.
        self.assertEqual(mine["state"], "active")
        self.assertEqual(mine["template"], "python")
        self.assertIsInstance(mine["createdAt"], int)
        self.assertGreaterEqual(mine["createdAt"], before - 5000)
        self.assertGreaterEqual(mine["lastActivityAt"], mine["createdAt"])
        self.assertEqual(self.sdk.healthy(), 200)

    def test_session_lifecycle(self):
        # sdk/typescript/README.md "Session Lifecycle": destroy() reads `destroyed`;
        # session.ts destroySession() answers false for a session it does not know.
        sid = self.session("ex-life")
        self.assertEqual(self.sdk.exec(sid, "true", template="python")[0], 200)
        self.assertEqual(self.sdk.destroy(sid), (200, {"destroyed": True}))
        self.assertEqual(self.sdk.destroy(sid), (200, {"destroyed": False}))

    def test_error_handling(self):
        # sdk/typescript/README.md "Error Handling": exec("nonexistent-binary") in a try.
        # Seed A's guest answers a spawn error without an exit code (no throw either); we
        # answer exit 127 and the shell's message.
        sid = self.session("ex-errors")
        s, r = self.sdk.exec(sid, "nonexistent-binary", template="python")
        self.assertEqual((s, r["exitCode"]), (200, 127), r)
        self.assertEqual(r["output"][0]["stream"], "stderr")
        # What the SDK throws for an error answer: err.statusCode and err.message = `error`.
        self.assertSeedAError(self.sdk.read_file(sid, "missing"), 404, "not_found")

    def test_main_readme_block(self):
        # README.md "Client SDKs / TypeScript / JavaScript".
        sid = self.session()
        s, r = self.sdk.run_code(sid, "python", "print(2 + 2)")
        self.assertEqual(r["output"][0]["data"], "4\n", r)
        # execStream("npm", {args: ["test"]}) in the python session: npm is not there.
        body, last = self.check_stream(*self.sdk.exec_stream(sid, "npm", args=["test"],
                                                             template="python"))
        self.assertEqual(last["exitCode"], 127)
        self.assertEqual(body[0]["stream"], "stderr")
        data = json.dumps({"key": "value"})
        self.assertEqual(self.sdk.write_file(sid, "data.json", data)[0], 200)
        s, rd = self.sdk.read_file(sid, "data.json")
        self.assertEqual(json.loads(rd["content"]), {"key": "value"})
        self.assertEqual(self.sdk.destroy(sid), (200, {"destroyed": True}))


class SeedAAuthTest(unittest.TestCase):
    """README.md "Authentication Usage": Sandbox({apiKey}) sends Authorization: Bearer (and
    X-API-Key works too); two keys using the same session name get two sandboxes."""

    ADMIN_KEY = "sk_test_example-key"  # `${AUTH_KEY_PREFIX}example-key`, AUTH_KEY_PREFIX=sk_test_

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server, cls.tmpl_dir, _ = seed_server({"AGENT_SANDBOX_API_KEYS": cls.ADMIN_KEY},
                                                  api_key=cls.ADMIN_KEY)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        shutil.rmtree(cls.tmpl_dir, ignore_errors=True)

    def key(self):
        r = self.server.request("POST", "/v1/keys", {"name": "seeda-" + os.urandom(3).hex()})
        self.assertEqual(r.status, 201, r)
        return r.json()["key"]

    def test_api_key_example(self):
        sdk = SdkWire(self.server, {"Authorization": "Bearer " + self.ADMIN_KEY})
        s, t = sdk.templates()
        self.assertEqual(s, 200, t)
        self.assertTrue(t["templates"])
        self.assertEqual(SdkWire(self.server, {"X-API-Key": self.ADMIN_KEY}).templates()[0], 200)
        # No key, a wrong key: 401 in seed A's shape (middleware.ts: {error: "API key
        # required"}).
        s, body = SdkWire(self.server).request("GET", "/templates")
        self.assertEqual((s, body["code"]), (401, "unauthorized"), body)
        self.assertIsInstance(body["error"], str)
        s, body = SdkWire(self.server, {"Authorization": "Bearer nope"}).request("GET", "/")
        self.assertEqual(s, 401, body)

    def test_ownership(self):
        a = SdkWire(self.server, {"Authorization": "Bearer " + self.key()})
        b = SdkWire(self.server, {"Authorization": "Bearer " + self.key()})
        try:
            self.assertEqual(a.write_file("shared", "secret.txt", "A")[0], 200)
            # B's session "shared" is another sandbox: A's file is not there.
            s, body = b.read_file("shared", "secret.txt")
            self.assertEqual((s, body["code"]), (404, "not_found"))
            self.assertEqual(b.destroy("shared"), (200, {"destroyed": False}))
            s, r = b.exec("shared", "ls", template="python")
            self.assertEqual((s, r["output"]), (200, []), r)
            sa, sb = a.sessions()[1]["sessions"], b.sessions()[1]["sessions"]
            self.assertEqual((len(sa), len(sb)), (1, 1))
            self.assertNotEqual(sa[0]["sandboxId"], sb[0]["sandboxId"])
            self.assertEqual(a.read_file("shared", "secret.txt")[1]["content"], "A")
        finally:
            a.destroy("shared")
            b.destroy("shared")


class SeedASessionsPersistTest(unittest.TestCase):
    """Sessions live in the database: a restart keeps them, per owner; they end with their
    sandbox."""

    ADMIN_KEY = "asb_" + os.urandom(24).hex()

    def setUp(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        self.server, self.tmpl_dir, _ = seed_server(
            {"AGENT_SANDBOX_API_KEYS": self.ADMIN_KEY}, api_key=self.ADMIN_KEY)

    def tearDown(self):
        self.server.close()
        shutil.rmtree(self.tmpl_dir, ignore_errors=True)

    def client(self):
        r = self.server.request("POST", "/v1/keys", {"name": "seeda-" + os.urandom(3).hex()})
        self.assertEqual(r.status, 201, r)
        return SdkWire(self.server, {"Authorization": "Bearer " + r.json()["key"]})

    def rows(self):
        db = sqlite3.connect(os.path.join(self.server.data_dir, "agent-sandbox.db"))
        try:
            return sorted(db.execute("SELECT name, sandbox_id FROM exec_sessions").fetchall())
        finally:
            db.close()

    def listed(self, sdk):
        s, r = sdk.sessions()
        self.assertEqual(s, 200, r)
        return {x["sessionId"]: x["sandboxId"] for x in r["sessions"]}

    def test_restart_keeps_sessions_per_owner(self):
        a, b = self.client(), self.client()
        s, r = a.exec("keep", "sh", args=["-c", "echo A > notes.txt"], template="python")
        self.assertEqual(s, 200, r)
        sandbox = r["sandboxId"]
        s, rb = b.exec("keep", "true", template="python")
        self.assertNotEqual(rb["sandboxId"], sandbox)
        for restart in ("SIGTERM", "SIGKILL"):
            if restart == "SIGTERM":
                self.server.stop()
            else:
                self.server.kill9()
            self.server.start()
            self.assertEqual(self.listed(a), {"keep": sandbox}, restart)
            self.assertEqual(self.listed(b), {"keep": rb["sandboxId"]}, restart)
            self.assertEqual(a.read_file("keep", "notes.txt"), (200, {"content": "A\n", "size": 2}))
            s, r = a.exec("keep", "cat", args=["notes.txt"], template="python")
            self.assertEqual((r["sandboxId"], r["output"][0]["data"]), (sandbox, "A\n"), restart)
            # B still cannot reach A's session.
            self.assertEqual(b.read_file("keep", "notes.txt")[0], 404)

    def test_a_session_ends_with_its_sandbox(self):
        sdk = self.client()
        ids = {}
        for name in ("deleted", "reaped", "lost", "kept"):
            s, r = sdk.exec(name, "true", template="python")
            self.assertEqual(s, 200, r)
            ids[name] = r["sandboxId"]
        self.assertEqual(len(self.rows()), 4)
        # Deleted through /v1: gone from /exec/ and from the database.
        self.assertEqual(sdk.raw("DELETE", "/v1/sandboxes/" + ids["deleted"])[0], 204)
        # Reaped at its TTL (the harness reaps every second).
        s, _, body = sdk.raw("POST", "/v1/sandboxes/%s/timeout" % ids["reaped"],
                             {"timeout_seconds": 1}, {"Content-Type": "application/json"})
        self.assertEqual(s, 200, body)
        deadline = time.time() + 30
        while "reaped" in self.listed(sdk) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(set(self.listed(sdk)), {"lost", "kept"})
        self.assertEqual([n for n, _ in self.rows()], ["kept", "lost"])
        # Lost while the server was down: the restart finds it gone.
        self.server.kill9()
        kill_sandbox(ids["lost"])
        self.server.start()
        self.assertEqual(self.listed(sdk), {"kept": ids["kept"]})
        self.assertEqual(self.rows(), [("kept", ids["kept"])])
        # The same name then starts a new, empty sandbox.
        s, r = sdk.exec("deleted", "ls", template="python")
        self.assertNotEqual(r["sandboxId"], ids["deleted"])
        self.assertEqual(r["output"], [])
        for name in ("deleted", "kept"):
            self.assertEqual(sdk.destroy(name), (200, {"destroyed": True}))
        self.assertEqual(self.rows(), [])


if __name__ == "__main__":
    main()
