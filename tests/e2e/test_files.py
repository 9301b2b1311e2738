"""Over HTTP (ADR 0007): the file routes against the real server."""

import hashlib
import json
import os
import time
from urllib.parse import urlencode

import openapi_check
from harness import ServerTestCase, main


class Watch:
    """GET /v1/sandboxes/{id}/files/watch held open; every line checked against the spec."""

    def __init__(self, server, sid, **query):
        self.path = "/v1/sandboxes/%s/files/watch?%s" % (sid, urlencode(query))
        self.conn = server.conn(timeout=15)
        self.conn.request("GET", self.path, headers=server._auth({}))
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.events = []
        if self.status != 200:
            self.error = json.loads(self.resp.read())["error"]
            self.conn.close()
            return
        assert self.resp.getheader("content-type") == "application/x-ndjson"
        self.start = self.next()

    def next(self):
        line = self.resp.readline()
        if not line:
            return None
        ev = json.loads(line)
        openapi_check.enforce(openapi_check.check_stream_event(ev, "FileWatchEvent"))
        if ev["type"] != "keepalive":
            self.events.append(ev)
        return ev

    def until(self, pred, timeout=10):
        """Reads until pred(events) holds or the stream ends; returns the events."""
        deadline = time.monotonic() + timeout
        while not pred(self.events) and time.monotonic() < deadline:
            if self.next() is None:
                break
        return self.events

    def seen(self):
        return ["%s %s" % (e["type"], e.get("path", "")) for e in self.events]

    def close(self):
        self.conn.close()


class FilesTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sid = cls.server.create()["id"]

    def url(self, route, **query):
        from urllib.parse import urlencode
        q = ("?" + urlencode(query)) if query else ""
        return "/v1/sandboxes/%s/%s%s" % (self.sid, route, q)

    def test_f1_write_read_run_and_ownership(self):
        script = b"#!/bin/sh\necho script ran\n"
        r = self.server.put_file(self.sid, "src/app.py", script, mode="755")
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["path"], "/workspace/src/app.py")
        self.assertEqual(body["size"], len(script))
        self.assertEqual(body["mode"], "0755")
        g = self.server.get_file(self.sid, "/workspace/src/app.py")
        self.assertEqual(g.status, 200)
        self.assertEqual(g.headers["content-type"], "application/octet-stream")
        self.assertEqual(g.body, script)
        self.assertEqual(self.server.run(self.sid, "./src/app.py")["stdout"], "script ran\n")
        owner = self.server.run(self.sid, "stat -c '%u:%g %a' src/app.py src")["stdout"]
        self.assertEqual(owner.split("\n")[0], "1000:1000 755")
        self.assertTrue(owner.split("\n")[1].startswith("1000:1000"))

    def test_f2_binary_round_trips(self):
        cases = {
            "rand.bin": os.urandom(16 * 1024),
            "nul.bin": b"a\x00b\xff\xfe\xc3\x28 \x00\x00",
            "empty.bin": b"",
            "big.bin": os.urandom(1 << 20) * 50,
        }
        for name, data in cases.items():
            with self.subTest(name=name):
                p = self.server.put_file(self.sid, "bin/" + name, data)
                self.assertEqual(p.status, 200, p)
                self.assertEqual(p.json()["size"], len(data))
                g = self.server.get_file(self.sid, "bin/" + name)
                self.assertEqual(g.status, 200)
                self.assertEqual(len(g.body), len(data))
                self.assertEqual(hashlib.sha256(g.body).hexdigest(),
                                 hashlib.sha256(data).hexdigest())
        # Small files come with a Content-Length; large ones are streamed, never held whole.
        small = self.server.get_file(self.sid, "bin/rand.bin")
        self.assertEqual(small.headers.get("content-length"), str(16 * 1024))
        big = self.server.get_file(self.sid, "bin/big.bin")
        self.assertEqual(big.headers.get("transfer-encoding"), "chunked")
        # The sandbox sees the same bytes.
        digest = self.server.run(self.sid, "sha256sum bin/big.bin")["stdout"].split()[0]
        self.assertEqual(digest, hashlib.sha256(cases["big.bin"]).hexdigest())

    def test_f3_listing(self):
        self.server.run(self.sid, "mkdir -p l3/d && printf hello > l3/f && "
                                  "printf x > l3/.hidden && ln -s f l3/link")
        r = self.server.request("GET", self.url("files/list", path="l3"))
        self.assertEqual(r.status, 200, r)
        entries = r.json()["entries"]
        names = [e["name"] for e in entries]
        self.assertEqual(names, sorted(names))
        self.assertEqual(set(names), {".hidden", "d", "f", "link"})
        by = {e["name"]: e for e in entries}
        self.assertEqual(by["d"]["type"], "dir")
        self.assertEqual(by["f"]["type"], "file")
        self.assertEqual(by["f"]["size"], 5)
        self.assertEqual(by["link"]["type"], "symlink")
        self.assertEqual(by["f"]["path"], "/workspace/l3/f")
        rec = self.server.request("GET", self.url("files/list", path="/workspace/l3",
                                                  recursive="true"))
        self.assertEqual(rec.status, 200, rec)

    def test_f4_paths_outside_the_workspace_and_bad_modes(self):
        # Relative paths are under /workspace and may not climb out of it.
        for path in ("../etc/passwd", "a/../../x", "/.."):
            with self.subTest(path=path):
                r = self.server.put_file(self.sid, path, b"x")
                self.assertError(r, 400, "invalid_request")
        # Absolute paths reach the whole sandbox as its user, as E2B's and Daytona's file APIs
        # do: /etc/os-release reads, /tmp takes a file, the read-only root and root's own
        # directories refuse a write with 403.
        r = self.server.get_file(self.sid, "/etc/os-release")
        self.assertEqual(r.status, 200, r)
        self.assertIn(b"ID=", r.body)
        r = self.server.put_file(self.sid, "/tmp/x/y.txt", b"tmp data")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["path"], "/tmp/x/y.txt")
        out = self.server.run(self.sid, "stat -c %U /tmp/x/y.txt; cat /tmp/x/y.txt")
        self.assertEqual(out["stdout"], "sandbox\ntmp data")  # written as the sandbox user
        self.assertEqual(self.server.get_file(self.sid, "/tmp/x/y.txt").body, b"tmp data")
        listing = self.server.request("GET", self.url("files/list", path="/tmp/x"))
        self.assertEqual([e["path"] for e in listing.json()["entries"]], ["/tmp/x/y.txt"])
        for path in ("/usr/x", "/etc/x", "/workspacex/a", "/root/x"):
            with self.subTest(refused=path):
                self.assertError(self.server.put_file(self.sid, path, b"x"), 403,
                                 "forbidden")
        self.assertError(self.server.get_file(self.sid, "/etc/shadow"), 403, "forbidden")
        self.assertError(self.server.request("DELETE", self.url("files", path="/")), 400,
                         "invalid_request")
        # /workspace and /tmp are two file systems: a move between them is refused, not half
        # made.
        r = self.server.request("POST", self.url("files/move"),
                                {"from": "/tmp/x/y.txt", "to": "/workspace/y.txt"})
        self.assertError(r, 400, "invalid_request")
        self.assertEqual(self.server.get_file(self.sid, "/tmp/x/y.txt").body, b"tmp data")
        self.assertError(self.server.put_file(self.sid, "ok.txt", b"x", mode="999"), 400,
                         "invalid_request")
        self.assertError(self.server.get_file(self.sid, "no/such/file"), 404, "not_found")
        self.server.run(self.sid, "mkdir -p adir")
        self.assertError(self.server.get_file(self.sid, "adir"), 400, "invalid_request")
        # The symlink trick: a link to /etc is not followed out of the workspace.
        self.server.run(self.sid, "ln -sfn /etc etclink")
        r = self.server.get_file(self.sid, "etclink/passwd")
        self.assertIn(r.status, (400, 403, 404), r)
        self.assertError(self.server.request("PUT", self.url("files")), 400, "invalid_request")

    def test_stat_mkdir_move_delete(self):
        mk = self.server.request("POST", self.url("files/mkdir"), {"path": "m/n", "mode": "700"})
        self.assertEqual(mk.status, 200, mk)
        self.assertEqual(mk.json()["type"], "dir")
        self.assertEqual(mk.json()["mode"], "0700")
        self.server.put_file(self.sid, "m/a.txt", b"abc")
        st = self.server.request("GET", self.url("files/stat", path="m/a.txt"))
        self.assertEqual(st.status, 200, st)
        self.assertEqual(st.json()["size"], 3)
        self.assertEqual(st.json()["type"], "file")
        mv = self.server.request("POST", self.url("files/move"), {"from": "m/a.txt", "to": "m/b.txt"})
        self.assertEqual(mv.status, 200, mv)
        self.assertEqual(mv.json()["path"], "/workspace/m/b.txt")
        self.assertError(self.server.get_file(self.sid, "m/a.txt"), 404, "not_found")
        self.server.put_file(self.sid, "m/c.txt", b"c")
        clash = self.server.request("POST", self.url("files/move"), {"from": "m/c.txt", "to": "m/b.txt"})
        self.assertEqual(clash.status, 409, clash)
        ok = self.server.request("POST", self.url("files/move"),
                                 {"from": "m/c.txt", "to": "m/b.txt", "overwrite": True})
        self.assertEqual(ok.status, 200, ok)
        self.assertEqual(self.server.get_file(self.sid, "m/b.txt").body, b"c")
        self.assertError(self.server.request("POST", self.url("files/move"), {"from": "x"}), 400,
                         "invalid_request")
        d = self.server.request("DELETE", self.url("files", path="m/b.txt"))
        self.assertEqual(d.status, 204, d)
        self.assertError(self.server.request("GET", self.url("files/stat", path="m/b.txt")), 404,
                         "not_found")
        d = self.server.request("DELETE", self.url("files", path="m", recursive="true"))
        self.assertEqual(d.status, 204, d)
        self.assertError(self.server.request("GET", self.url("files/stat", path="m")), 404,
                         "not_found")

    def test_f6_watch_streams_the_changes(self):
        self.server.run(self.sid, "mkdir -p w6")
        w = Watch(self.server, self.sid, path="w6", recursive="true")
        try:
            self.assertEqual(w.status, 200)
            self.assertEqual(w.start, {"type": "start", "path": "/workspace/w6", "watches": 1})
            # Armed: everything after is reported, whichever way it is made. A write through
            # the API reads as a shell's `>` does: a new file created and written, an existing
            # one written (never a create, which a program waiting for "write" would miss).
            self.assertEqual(self.server.put_file(self.sid, "w6/a.txt", b"one").status, 200)
            self.server.run(self.sid, "touch w6/between")
            self.assertEqual(self.server.put_file(self.sid, "w6/a.txt", b"two").status, 200)
            w.until(lambda evs: w.seen().count("write /workspace/w6/a.txt") == 2)
            self.assertEqual([e for e in w.seen() if e.endswith("/a.txt")],
                             ["create /workspace/w6/a.txt", "write /workspace/w6/a.txt",
                              "write /workspace/w6/a.txt"])
            self.assertFalse([e for e in w.seen() if ".asb" in e], w.seen())
            self.server.run(self.sid, "mkdir -p w6/n/m && echo x > w6/n/m/f && "
                                      "mv w6/a.txt w6/b.txt && chmod 600 w6/b.txt && rm w6/b.txt")
            w.until(lambda evs: "remove /workspace/w6/b.txt" in w.seen())
            for want in ["create /workspace/w6/a.txt", "create /workspace/w6/n",
                         "create /workspace/w6/n/m", "create /workspace/w6/n/m/f",
                         "rename /workspace/w6/a.txt", "create /workspace/w6/b.txt",
                         "chmod /workspace/w6/b.txt", "remove /workspace/w6/b.txt"]:
                self.assertIn(want, w.seen())
            self.assertTrue([e for e in w.events if e.get("path") == "/workspace/w6/n"][0]["dir"])
            # The watched directory itself going away ends the stream.
            self.server.run(self.sid, "rm -rf w6")
            w.until(lambda evs: evs[-1]["type"] == "end")
            self.assertEqual(w.events[-1], {"type": "end", "reason": "removed"})
            self.assertIsNone(w.next())
        finally:
            w.close()
        # timeout_ms ends it by itself; the default path is the workspace.
        t = Watch(self.server, self.sid, timeout_ms="300")
        try:
            self.assertEqual(t.start["path"], "/workspace")
            t.until(lambda evs: evs[-1]["type"] == "end", timeout=5)
            self.assertEqual(t.events[-1], {"type": "end", "reason": "timeout"})
        finally:
            t.close()

    def test_f7_watch_limits_and_bad_targets(self):
        self.server.run(self.sid, "mkdir -p w7/d && echo f > w7/file && ln -sfn /etc w7/etc")

        def status(**q):
            w = Watch(self.server, self.sid, **q)
            w.close()
            return w.status, (w.error["code"] if w.status != 200 else None)
        self.assertEqual(status(path="w7", max_queue="65536"), (200, None))
        self.assertEqual(status(path="w7", max_queue="1"), (200, None))
        self.assertEqual(status(path="w7", max_queue="65537"), (400, "invalid_request"))
        self.assertEqual(status(path="w7", max_queue="0"), (400, "invalid_request"))
        self.assertEqual(status(path="w7", timeout_ms="86400000"), (200, None))
        self.assertEqual(status(path="w7", timeout_ms="86400001"), (400, "invalid_request"))
        self.assertEqual(status(path="w7", recursive="maybe"), (400, "invalid_request"))
        self.assertEqual(status(path="w7/file"), (400, "invalid_request"))
        self.assertEqual(status(path="w7/nope"), (404, "not_found"))
        self.assertEqual(status(path="w7/etc"), (400, "invalid_request"))  # out of /workspace
        self.assertEqual(status(path="/etc"), (200, None))  # absolute: anywhere, as the user
        self.assertEqual(status(path="/root"), (403, "forbidden"))
        self.assertEqual(status(path="../.."), (400, "invalid_request"))
        # At most 8 at once per sandbox: the 8th is fine, the 9th is refused, and closing one
        # makes room again (sandboxd notices the closed stream and ends its watch).
        held = []
        try:
            for i in range(8):
                w = Watch(self.server, self.sid, path="w7")
                self.assertEqual(w.status, 200, i)
                held.append(w)
            self.assertEqual(status(path="w7"), (429, "limit_exceeded"))
            held.pop().close()
            deadline = time.monotonic() + 10
            while status(path="w7")[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            self.assertEqual(status(path="w7"), (200, None))
        finally:
            for w in held:
                w.close()
        # A symlinked directory inside the tree is never followed by a recursive watch.
        w = Watch(self.server, self.sid, path="w7", recursive="true")
        try:
            self.assertEqual(w.start["watches"], 2)  # w7 and w7/d, not w7/etc
        finally:
            w.close()

    def test_unknown_sandbox(self):
        r = self.server.request("GET", "/v1/sandboxes/sb_0000000000000000/files?path=a")
        self.assertError(r, 404, "not_found")
        w = Watch(self.server, "sb_0000000000000000")
        self.assertEqual((w.status, w.error["code"]), (404, "not_found"))


class FileLimitTest(ServerTestCase):
    SERVER_ENV = {"AGENT_SANDBOX_MAX_FILE_BYTES": "10"}

    def test_f5_max_file_bytes(self):
        sid = self.create()["id"]
        self.assertEqual(self.server.put_file(sid, "ten", b"0123456789").status, 200)
        self.assertError(self.server.put_file(sid, "eleven", b"0123456789a"), 413,
                         "payload_too_large")
        # Far above the limit: refused before the body is read, still in the one shape.
        self.assertError(self.server.put_file(sid, "huge", b"x" * (2 << 20)), 413,
                         "payload_too_large")
        self.assertError(self.server.get_file(sid, "eleven"), 404, "not_found")


if __name__ == "__main__":
    main()
