"""Hardening, round 3 (ADR 0014): what an outside attacker broke in the landed server, each as
a row with its bound. The memory rows send smaller bodies over fewer connections than the
attack did (CI time), with the same assertion: the server's RSS stays within +64 MiB.

  1. bodies are never read before the key or E2B token is checked (from the headers), uploads
     stream into the sandbox and large E2B downloads out of it instead of being held whole,
     and the bodies a handler does hold share one budget;
  4. the data dir's files are the server's alone (0600, a looser mode tightened at start), and
     env values given on create are sealed at rest: not in the database's bytes;
  5. an HTTP/1.1 request with no Host, or any with two, is 400 (RFC 9112 section 3.2);
  6. the E2B traffic token opens the interpreter's contexts but never runs code (/execute).
"""

import json
import os
import socket
import stat
import subprocess
import time
import unittest

from harness import RssWatch, Server, ServerTestCase, main, missing_prerequisite

ADMIN_KEY = "asb_hardening_admin_key_0123456789"
MIB = 1 << 20
RSS_BOUND = 64 * MIB


def read_head(sock, timeout=10):
    """The answer's status line and headers (bytes), or what came before the peer closed."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not chunk:
            break
        data += chunk
    return data


class HardeningTest(ServerTestCase):
    # A small body budget, so that its row needs no 512 MiB of uploads.
    SERVER_ENV = {"AGENT_SANDBOX_API_KEYS": ADMIN_KEY, "AGENT_SANDBOX_BODY_BUFFER_MB": "48"}
    API_KEY = ADMIN_KEY

    def raw(self):
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=10)

    def e2b_box(self):
        """A sandbox made through E2B's control plane: its JSON (sandboxID, the two tokens)."""
        r = self.server.request("POST", "/sandboxes", {"templateID": "base"},
                                headers={"X-API-Key": ADMIN_KEY}, check=False)
        self.assertEqual(r.status, 201, r)
        self._created.append(r.json()["sandboxID"])
        return r.json()

    def upload_flood(self, headers, conns=8, send_bytes=16 * MIB):
        """`conns` connections each announce a 99 MiB upload with `headers` and send
        `send_bytes` of it; returns the status lines and the server's RSS growth."""
        announced = 99 * MIB
        chunk = b"x" * (256 * 1024)
        statuses = []
        socks = []
        with RssWatch(self.server.proc.pid) as watch:
            for _ in range(conns):
                s = self.raw()
                socks.append(s)
                s.sendall(headers % announced)
            for s in socks:
                sent = 0
                try:
                    while sent < send_bytes:
                        s.sendall(chunk)
                        sent += len(chunk)
                except OSError:
                    pass  # answered and closed: the point
            for s in socks:
                statuses.append(read_head(s).split(b"\r\n", 1)[0])
            time.sleep(0.3)
        for s in socks:
            s.close()
        return statuses, watch.growth

    def test_unauthenticated_uploads_are_refused_before_their_bodies_are_read(self):
        # The attack: PUT /files with 99 MiB bodies, no key / a bogus key / an E2B sandbox id
        # and no token. Before: the server read every body into memory, then answered 401
        # (20 connections: 40 MB -> 2.07 GB RSS). After: 401 from the head, RSS flat.
        ghost = "sb_" + "0123456789abcdef"
        cases = {
            "no key": b"PUT /v1/sandboxes/" + ghost.encode() +
                      b"/files?path=x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n",
            "bogus key": b"PUT /v1/sandboxes/" + ghost.encode() +
                         b"/files?path=x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer asb_bogus"
                         b"\r\nContent-Length: %d\r\n\r\n",
            "e2b, no token": b"POST /files?path=x HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " +
                             ghost.encode() + b"\r\nContent-Length: %d\r\n\r\n",
        }
        for name, head in cases.items():
            with self.subTest(name):
                statuses, growth = self.upload_flood(head)
                for st in statuses:
                    self.assertIn(b" 401 ", st, (name, statuses))
                self.assertLess(growth, RSS_BOUND, "%s: RSS grew %d MiB" % (name, growth >> 20))

    def test_authenticated_bodies_share_one_budget(self):
        # Bodies a handler takes whole (here a gzip upload, inflated before it is written)
        # are held under --body-buffer-mb (48 here): one client holds 40 MiB of it
        # mid-request; a second 40 MiB body is 503 with Retry-After before a byte of it is
        # kept, and admitted once the first is gone.
        box = self.e2b_box()
        head = (b"POST /files?path=z HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
                b"Content-Type: application/octet-stream\r\nE2b-Sandbox-Id: " +
                box["sandboxID"].encode() + b"\r\nX-Access-Token: " +
                box["envdAccessToken"].encode() + b"\r\nContent-Length: %d\r\n\r\n" % (40 * MIB))
        holder = self.raw()
        holder.sendall(head + b"x" * MIB)
        time.sleep(0.5)
        s = self.raw()
        s.sendall(head)
        refused = read_head(s)
        s.close()
        self.assertIn(b" 503 ", refused.split(b"\r\n", 1)[0], refused)
        self.assertIn(b"retry-after: 1", refused.lower(), refused)
        holder.close()
        deadline = time.time() + 5
        while True:
            s = self.raw()
            s.sendall(head)
            try:
                s.sendall(b"y" * (40 * MIB))
            except OSError:
                pass
            answer = read_head(s, timeout=30)
            s.close()
            status = answer.split(b"\r\n", 1)[0]
            if b" 503 " not in status or time.time() > deadline:
                break
            time.sleep(0.2)
        # Read whole, then answered for what it is (not gzip).
        self.assertIn(b" 400 ", status, answer[:300])

    def upload_streams(self, request_for, size, conns=4):
        """`conns` clients each upload `size` bytes at once with the request `request_for(i,
        size)` makes (head and body framing); returns the status lines and the RSS growth."""
        chunk = b"u" * (256 * 1024)
        socks = []
        with RssWatch(self.server.proc.pid) as watch:
            for i in range(conns):
                s = self.raw()
                head, prefix, suffix = request_for(i, size)
                s.sendall(head + prefix)
                socks.append((s, suffix))
            for sent in range(0, size, len(chunk)):
                for s, _ in socks:
                    s.sendall(chunk[:min(len(chunk), size - sent)])
            statuses = []
            for s, suffix in socks:
                s.sendall(suffix)
                statuses.append(read_head(s, timeout=60))
        for s, _ in socks:
            s.close()
        return statuses, watch.growth

    def test_uploads_stream_into_the_sandbox(self):
        # Before: an upload was read whole into the server's memory, then written: four 32 MiB
        # uploads held 128 MiB (and past --body-buffer-mb, 48 here, were refused 503). After:
        # each moves into the sandbox a chunk at a time with sandboxd's flow control, so all
        # four are taken at once with RSS flat, and the files are whole.
        sid = self.create()["id"]
        size = 32 * MIB
        auth = b"Authorization: Bearer " + ADMIN_KEY.encode()

        def put(i, n):
            return (b"PUT /v1/sandboxes/%s/files?path=up%d HTTP/1.1\r\nHost: x\r\n%s\r\n"
                    b"Content-Length: %d\r\n\r\n" % (sid.encode(), i, auth, n), b"", b"")

        statuses, growth = self.upload_streams(put, size)
        for st in statuses:
            self.assertIn(b" 200 ", st.split(b"\r\n", 1)[0], st[:300])
        self.assertLess(growth, RSS_BOUND, "RSS grew %d MiB" % (growth >> 20))
        out = self.server.run(sid, ["sh", "-c", "stat -c %s up0 up1 up2 up3; tr -d u < up3 | wc -c"])
        self.assertEqual(out["stdout"].split(), [str(size)] * 4 + ["0"], out)

        # E2B's multipart upload, as the SDKs send it, streams the same way.
        box = self.e2b_box()
        e2b_sid = box["sandboxID"]

        def multipart(i, n):
            boundary = b"----asbupload%d" % i
            prefix = (b"--" + boundary + b"\r\nContent-Disposition: form-data; name=\"file\"; "
                      b"filename=\"/home/user/e%d\"\r\nContent-Type: application/octet-stream"
                      b"\r\n\r\n" % i)
            suffix = b"\r\n--" + boundary + b"--\r\n"
            head = (b"POST /files HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " + e2b_sid.encode() +
                    b"\r\nX-Access-Token: " + box["envdAccessToken"].encode() +
                    b"\r\nContent-Type: multipart/form-data; boundary=" + boundary +
                    b"\r\nContent-Length: %d\r\n\r\n" % (len(prefix) + n + len(suffix)))
            return head, prefix, suffix

        statuses, growth = self.upload_streams(multipart, size)
        for st in statuses:
            self.assertIn(b" 200 ", st.split(b"\r\n", 1)[0], st[:300])
        self.assertLess(growth, RSS_BOUND, "RSS grew %d MiB" % (growth >> 20))
        out = self.server.run(e2b_sid, ["sh", "-c", "stat -c %s e0 e1 e2 e3"])
        self.assertEqual(out["stdout"].split(), [str(size)] * 4, out)

    def test_a_cut_upload_leaves_the_old_file(self):
        # A client that goes away mid-upload, or whose chunked body passes the file limit,
        # leaves the destination as it was (the write is a temporary file renamed at the end).
        sid = self.create()["id"]
        self.server.request("PUT", "/v1/sandboxes/%s/files?path=keep" % sid, b"old")
        s = self.raw()
        s.sendall(b"PUT /v1/sandboxes/%s/files?path=keep HTTP/1.1\r\nHost: x\r\n"
                  b"Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n"
                  % (sid.encode(), ADMIN_KEY.encode(), 8 * MIB) + b"n" * MIB)
        time.sleep(0.5)
        s.close()
        deadline = time.time() + 10
        while time.time() < deadline:
            out = self.server.run(sid, ["sh", "-c", "cat keep; echo; ls -a | grep -c asb- || true"])
            if out["stdout"].split() == ["old", "0"]:
                break
            time.sleep(0.2)
        self.assertEqual(out["stdout"].split(), ["old", "0"], out)

    def test_large_e2b_downloads_stream_instead_of_being_held(self):
        # Before: envd's GET /files read the whole file into the server's memory per client
        # (ten clients that did not read a 100 MB file: +1 GB). After: streamed with
        # backpressure, so clients that do not read hold up only their own streams.
        box = self.e2b_box()
        sid = box["sandboxID"]
        out = self.server.run(sid, ["sh", "-c", "head -c 33554432 /dev/zero > /workspace/big"])
        self.assertEqual(out["exit_code"], 0, out)
        socks = []
        with RssWatch(self.server.proc.pid) as watch:
            for _ in range(4):
                c = self.raw()
                c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                c.sendall(("GET /files?path=/workspace/big HTTP/1.1\r\nHost: x\r\n"
                           "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n\r\n"
                           % (sid, box["envdAccessToken"])).encode())
                socks.append(c)
            time.sleep(3)  # long enough for a whole-file read of each to have happened
            head = read_head(socks[0])
        for c in socks:
            c.close()
        self.assertIn(b" 200 ", head.split(b"\r\n", 1)[0], head[:200])
        self.assertIn(b"chunked", head.lower(), head[:300])
        self.assertLess(watch.growth, RSS_BOUND, "RSS grew %d MiB" % (watch.growth >> 20))
        # The stream is whole when read.
        c = self.raw()
        c.sendall(("GET /files?path=/workspace/big HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n\r\n"
                   % (sid, box["envdAccessToken"])).encode())
        data = b""
        c.settimeout(30)
        while True:
            chunk = c.recv(1 << 20)
            if not chunk:
                break
            data += chunk
        c.close()
        body = data.split(b"\r\n\r\n", 1)[1]
        # Undo the chunked framing.
        whole = b""
        while body:
            size_line, body = body.split(b"\r\n", 1)
            n = int(size_line, 16)
            if n == 0:
                break
            whole += body[:n]
            body = body[n + 2:]
        self.assertEqual(len(whole), 32 * MIB)

    def test_host_must_appear_exactly_once(self):
        for name, raw in (
                ("none", b"GET /v1/sandboxes HTTP/1.1\r\nConnection: close\r\n\r\n"),
                ("two", b"GET /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Host: 8000-sb-0123456789abcdef.localhost\r\nConnection: close\r\n\r\n")):
            with self.subTest(name):
                s = self.raw()
                s.sendall(raw)
                head = read_head(s)
                s.close()
                self.assertIn(b" 400 ", head.split(b"\r\n", 1)[0], head)
        s = self.raw()
        s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        self.assertIn(b" 200 ", read_head(s).split(b"\r\n", 1)[0])
        s.close()

    def test_the_traffic_token_never_runs_code(self):
        # Before: E2B-Traffic-Access-Token alone ran `id` through the interpreter's /execute.
        box = self.e2b_box()
        sid = box["sandboxID"]
        base = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
                "Content-Type": "application/json", "Authorization": ""}
        run = json.dumps({"code": "import os; print(os.getuid())", "language": "python"})
        refused = self.server.request(
            "POST", "/execute", run, check=False,
            headers=dict(base, **{"E2B-Traffic-Access-Token": box["trafficAccessToken"]}))
        self.assertEqual(refused.status, 401, refused)
        # The envd token is what runs code; the traffic token still opens the contexts.
        contexts = self.server.request(
            "GET", "/contexts", check=False,
            headers=dict(base, **{"E2B-Traffic-Access-Token": box["trafficAccessToken"]}))
        self.assertNotEqual(contexts.status, 401, contexts)
        self.assertNotEqual(contexts.status, 403, contexts)
        neither = self.server.request("GET", "/contexts", check=False, headers=base)
        self.assertEqual(neither.status, 401, neither)


class DataAtRestTest(unittest.TestCase):
    """Finding 4, before: agent-sandbox.db, -wal and -shm were 0644 in a 0711 data dir, and as
    `nobody` sqlite3 read a sandbox's env (an OPENAI_API_KEY passed on create), the audit's
    command lines and the keys' names and hashes."""

    SECRET = "sk-live-9f8e7d6c5b4a39281706"

    def setUp(self):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        self.server = Server()
        try:
            self.server.start()
        except Exception:
            self.server.close()
            raise

    def tearDown(self):
        self.server.close()

    def mode(self, name):
        return stat.S_IMODE(os.lstat(os.path.join(self.server.data_dir, name)).st_mode)

    def test_files_are_private_and_env_values_are_sealed(self):
        s = self.server
        sid = s.create(timeout_seconds=600, env={"OPENAI_API_KEY": self.SECRET})["id"]
        out = s.run(sid, ["sh", "-c", "printf %s \"$OPENAI_API_KEY\""])
        self.assertEqual(out["stdout"], self.SECRET)  # the sandbox has it; the disk does not
        s.run(sid, ["sh", "-c", "echo OPENAI_API_KEY=%s >/dev/null" % self.SECRET])
        for name in ("agent-sandbox.db", "agent-sandbox.db-wal", "agent-sandbox.db-shm",
                     "secrets.key", "e2b-token.key"):
            self.assertEqual(self.mode(name), 0o600, name)
        self.assertEqual(self.mode("."), 0o711)
        # As nobody nothing of it opens.
        db = os.path.join(s.data_dir, "agent-sandbox.db")
        for name in (db, db + "-wal", os.path.join(s.data_dir, "secrets.key")):
            r = subprocess.run(["runuser", "-u", "nobody", "--", "cat", name],
                               capture_output=True)
            self.assertNotEqual(r.returncode, 0, name)
            self.assertIn(b"Permission denied", r.stderr)
        # The value is in no byte of the database or its log, though the record and the audit
        # trail (the command line above, redacted) are.
        everything = b""
        for name in (db, db + "-wal"):
            with open(name, "rb") as f:
                data = f.read()
            self.assertNotIn(self.SECRET.encode(), data, name)
            everything += data
        self.assertIn(b"OPENAI_API_KEY", everything)
        # inspect shows the key's name only, as before.
        info = s.request("GET", "/v1/sandboxes/" + sid).json()
        self.assertEqual(info.get("env_keys"), ["OPENAI_API_KEY"])
        self.assertNotIn(self.SECRET, json.dumps(info))

        # A restart: a looser mode (a database of an older version) is tightened and logged;
        # the sealed env opens again with the server's key, so the recovered sandbox keeps it.
        s.stop()
        os.chmod(db, 0o644)
        s.start()
        self.assertEqual(self.mode("agent-sandbox.db"), 0o600)
        self.assertIn("was mode 0644", s.log_tail(200))
        out = s.run(sid, ["sh", "-c", "printf %s \"$OPENAI_API_KEY\""])
        self.assertEqual(out["stdout"], self.SECRET)
        r = s.request("DELETE", "/v1/sandboxes/" + sid, timeout=60, check=False)
        self.assertEqual(r.status, 204, r)


if __name__ == "__main__":
    main()
