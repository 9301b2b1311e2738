"""ADR 0010 over real HTTP: secrets typed into commands do not reach the audit trail.

Commands carrying a GitHub token, an AWS key id, a Bearer header, a URL password, an OpenAI-style
key, a MySQL -p password, a JWT and a private key block are run every way a command reaches the
server (sync exec with argv, exec/stream with a shell command, a background process, seed A's
/exec/{session}/execute with args, the MCP tools over /mcp, and a call refused with 404), with
secret env values beside them. Then GET /v1/events, every row of every table of
agent-sandbox.db read with sqlite3, the raw bytes of the database files, and the server's log
must hold none of the secrets, and the audited targets keep the rest readable ([REDACTED] in
place of each secret). The rule itself is unit-tested per pattern in src/common/redact_test.cc.
"""

import base64
import glob
import json
import os
import secrets
import sqlite3
import string
import unittest

from harness import Server, ServerTestCase, main, missing_prerequisite

ADMIN_KEY = "asb_" + os.urandom(24).hex()


def rand(alphabet, n):
    return "".join(secrets.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
GITHUB = "ghp_" + rand(ALNUM, 36)
AWS_ID = "AKIA" + rand(string.ascii_uppercase + string.digits, 16)
BEARER = rand(ALNUM, 32)
URL_PW = "pw" + rand(ALNUM, 14)
OPENAI = "sk-proj-" + rand(ALNUM, 10) + "7" + rand(ALNUM, 20)
MYSQL_PW = "my" + rand(ALNUM, 14)
JWT = ".".join([base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
                base64.urlsafe_b64encode(b'{"sub":"' + rand(ALNUM, 12).encode() + b'"}')
                .decode().rstrip("="), rand(ALNUM + "-_", 43)])
PRIVATE_KEY_BODY = rand(ALNUM + "+/", 64)
FLAG_PW = "fl" + rand(ALNUM, 14)
MCP_SECRET = rand(ALNUM, 40)
ENV_SECRET = "envsecret-" + os.urandom(8).hex()
SECRETS = [GITHUB, AWS_ID, BEARER, URL_PW, OPENAI, MYSQL_PW, JWT, PRIVATE_KEY_BODY, FLAG_PW,
           MCP_SECRET, ENV_SECRET]


class AuditRedactionTest(ServerTestCase):

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server({"AGENT_SANDBOX_API_KEYS": ADMIN_KEY, "AGENT_SANDBOX_LOG_LEVEL": "debug"},
                            api_key=ADMIN_KEY)
        try:
            cls.server.start()
        except Exception:
            cls.server.close()
            raise

    def mcp(self, session, rid, method, params):
        """One JSON-RPC request to /mcp; returns the result of its (SSE or JSON) answer."""
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if session:
            h["Mcp-Session-Id"] = session
        body = {"jsonrpc": "2.0", "method": method, "params": params}
        if rid is not None:
            body["id"] = rid
        r = self.server.request("POST", "/mcp", json.dumps(body), headers=h)
        self.assertIn(r.status, (200, 202), r)
        if rid is None:
            return r, None
        text = r.body.decode()
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
            msgs = [json.loads(d) for d in datas if d]
            text = json.dumps([m for m in msgs if m.get("id") == rid][0])
        return r, json.loads(text)["result"]

    def test_secrets_in_commands_are_redacted_in_events_database_and_logs(self):
        sid = self.create()["id"]
        env = {"GITHUB_TOKEN": ENV_SECRET, "AWS_ACCESS_KEY_ID": AWS_ID}

        # 1. Sync exec, argv: the token reaches the command (its length is printed).
        r = self.server.exec(sid, {"argv": [
            "sh", "-c", 'echo "${#GITHUB_TOKEN} $#"', "curl",
            "-H", "Authorization: Bearer " + BEARER,
            "https://deploy:%s@git.example.com/repo.git" % URL_PW, "--token=" + GITHUB],
            "env": env})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["stdout"], "%d 4\n" % len(ENV_SECRET))

        # 2. exec/stream with a shell command.
        _, status, events = self.server.stream(sid, {
            "command": "export OPENAI_API_KEY=%s; mysql -u root -p%s db 2>/dev/null; "
                       "echo %s > /dev/null; echo ok" % (OPENAI, MYSQL_PW, JWT),
            "env": env})
        self.assertEqual(status, 200)
        self.assertEqual(events[-1]["exit_code"], 0, events)

        # 3. A background process whose command holds a private key block.
        p = self.server.request("POST", "/v1/sandboxes/%s/processes" % sid, {
            "command": "printf '%%s' '-----BEGIN RSA PRIVATE KEY-----\n%s\n"
                       "-----END RSA PRIVATE KEY-----' > /tmp/k; sleep 30" % PRIVATE_KEY_BODY,
            "env": env})
        self.assertEqual(p.status, 201, p)
        pid = p.json()["pid"]
        k = self.server.request("DELETE", "/v1/sandboxes/%s/processes/%d" % (sid, pid))
        self.assertEqual(k.status, 200, k)

        # 4. Seed A's execute with args.
        a = self.server.request("POST", "/exec/redact-session/execute", {
            "command": "sh", "args": ["-c", "echo seed-a", "x", "--password", FLAG_PW]})
        self.assertEqual(a.status, 200, a)
        seed_a_sid = a.json()["sandboxId"]
        self.addCleanup(self.server.request, "DELETE", "/exec/redact-session", check=False)

        # 5. MCP over Streamable HTTP: sandbox_exec and sandbox_process_start.
        r, _ = self.mcp(None, 1, "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "redact-test", "version": "1"}})
        session = r.headers["mcp-session-id"]
        self.mcp(session, None, "notifications/initialized", {})
        _, res = self.mcp(session, 2, "tools/call", {"name": "sandbox_exec", "arguments": {
            "sandbox_id": sid, "command": "AWS_SECRET_ACCESS_KEY=%s true" % MCP_SECRET,
            "env": env}})
        self.assertFalse(res.get("isError"), res)
        _, res = self.mcp(session, 3, "tools/call", {"name": "sandbox_process_start", "arguments": {
            "sandbox_id": sid, "argv": ["sleep", "0", "--api-key=" + MCP_SECRET]}})
        self.assertFalse(res.get("isError"), res)

        # 6. A call refused with 404 is audited too.
        gone = self.server.exec("sb_0000000000000000", {"command": "echo " + GITHUB})
        self.assertEqual(gone.status, 404, gone)

        # The events route: nothing secret, the rest readable.
        ev = self.server.request("GET", "/v1/events?limit=1000")
        self.assertEqual(ev.status, 200, ev)
        raw = ev.body.decode()
        for s in SECRETS:
            self.assertNotIn(s, raw)
        targets = [e["target"] for e in ev.json()["events"]]
        want = [
            "sh -c 'echo \"${#GITHUB_TOKEN} $#\"' curl -H 'Authorization: Bearer [REDACTED]' "
            "https://deploy:[REDACTED]@git.example.com/repo.git --token=[REDACTED]",
            "export OPENAI_API_KEY=[REDACTED]; mysql -u root -p[REDACTED] db 2>/dev/null; "
            "echo [REDACTED] > /dev/null; echo ok",
            "printf '%s' '-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----'"
            " > /tmp/k; sleep 30",
            "sh -c 'echo seed-a' x --password [REDACTED]",
            "AWS_SECRET_ACCESS_KEY=[REDACTED] true",
            "sleep 0 --api-key=[REDACTED]",
            "echo ghp_[REDACTED]",
        ]
        for t in want:
            self.assertIn(t, targets)
        actions = {e["action"] for e in ev.json()["events"] if e["sandbox_id"] in (sid, seed_a_sid)}
        self.assertTrue({"exec", "exec.stream", "process.start", "process.kill"} <= actions,
                        actions)

        # The database itself: every row of every table, then the raw bytes of its files.
        db_path = os.path.join(self.server.data_dir, "agent-sandbox.db")
        db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
        try:
            tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            self.assertIn("events", tables)
            dump = repr([db.execute('SELECT * FROM "%s"' % t).fetchall() for t in tables])
            audited = repr(db.execute("SELECT target FROM events").fetchall())
        finally:
            db.close()
        self.assertIn("[REDACTED]", audited)
        files = glob.glob(db_path + "*")
        self.assertTrue(files)
        for s in SECRETS:
            self.assertNotIn(s, dump)
            for f in files:
                with open(f, "rb") as fh:
                    self.assertNotIn(s.encode(), fh.read(), f)

        # And the log, at debug level.
        with open(self.server.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        for s in SECRETS:
            self.assertNotIn(s, log)


if __name__ == "__main__":
    main()
