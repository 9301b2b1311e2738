"""Over real HTTP: preview URLs of exposed ports (docs/adr/0015-preview-urls.md).

A real server with API keys, real sandboxes running small HTTP servers, and real Chromium
(headless, a host resolver rule that maps the test's preview domain to loopback) that opens a
preview URL with no header: the page, a script it loads by absolute path and a request that
script makes all come from inside the sandbox. Then revoke, expiry, a token for another port or
sandbox, another tenant, an API key where a token belongs, and the token in no log line, audit
record or database column.
"""

import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
import urllib.parse
from urllib.parse import urlsplit

import harness
from harness import BIN, Server, main, missing_prerequisite

ADMIN_KEY = "asb_" + os.urandom(24).hex()
MAX_TTL = 7200  # --preview-max-ttl-seconds of this suite's server
NONCE = os.urandom(8).hex()  # written into the sandbox: proof that content came from there
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Every raw token this suite saw; the last test looks for each in the server's records.
SEEN_TOKENS = []

INDEX_HTML = """<!doctype html>
<html><head><title>preview test</title><script src="/app.js"></script></head>
<body><h1 id="page">page served from inside the sandbox</h1><p id="out">no script ran</p>
</body></html>
"""
# Loaded by absolute path; it asks the app's API (absolute path again) and writes the answer
# into the page, so the DOM shows both reached the sandbox with the cookie alone.
APP_JS = """window.addEventListener('DOMContentLoaded', function () {
  var x = new XMLHttpRequest();
  x.open('GET', '/api/data.txt', false);
  x.send();
  document.getElementById('out').textContent =
      'app.js loaded by absolute path; api said ' + x.status + ' ' + x.responseText.trim();
});
"""
# The app on port 8000: static files, and /echo, which answers what the app was sent.
SERVE_PY = """import http.server, json, os
os.chdir('/workspace/www')
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith('/toss?'):
            # A hostile app: sets whatever cookies it is told to, one per c= (ADR 0014, round 3).
            from urllib.parse import parse_qs, urlsplit
            q = parse_qs(urlsplit(self.path).query)
            self.send_response(200)
            for c in q.get('c', []):
                self.send_header('Set-Cookie', c)
            self.send_header('Content-Type', 'text/html')
            self.end_headers()
            page = '<p id="tossed">tossed</p>'
            for nxt in q.get('next', []):  # then on to a victim's page, in the same browser
                page += '<script>location.replace(%s)</script>' % json.dumps(nxt)
            self.wfile.write(page.encode())
            return
        if self.path.startswith('/echo'):
            body = json.dumps({'path': self.path, 'headers': dict(self.headers)}).encode()
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        return super().do_GET()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', 8000), H).serve_forever()
"""


def bearer(key):
    return {"Authorization": "Bearer " + key}


class PreviewTest(harness.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server({"AGENT_SANDBOX_API_KEYS": ADMIN_KEY,
                             "AGENT_SANDBOX_PREVIEW_MAX_TTL_SECONDS": str(MAX_TTL)},
                            api_key=ADMIN_KEY)
        cls.server.port = harness.free_port()
        cls.domain = "preview.test:%d" % cls.server.port
        cls.server.extra_env["AGENT_SANDBOX_PREVIEW_DOMAIN"] = cls.domain
        try:
            cls.server.start()
            cls.tenant = cls.make_key("tenant")
            cls.other = cls.make_key("other-tenant")
            cls.a = cls.app_sandbox()
            cls.b = cls.app_sandbox()
        except Exception:
            cls.server.close()
            raise

    # ---- helpers -------------------------------------------------------------------------

    @classmethod
    def make_key(cls, name):
        r = cls.server.request("POST", "/v1/keys", {"name": name, "scopes": ["exec"]})
        assert r.status == 201, r
        return r.json()["key"]

    @classmethod
    def app_sandbox(cls, **create):
        """A sandbox of the tenant with the app on 8000 and a plain http.server on 8001."""
        s = cls.server
        r = s.request("POST", "/v1/sandboxes", create, headers=bearer(cls.tenant))
        assert r.status == 201, r
        sid = r.json()["id"]
        assert s.run(sid, "mkdir -p /workspace/www/api /workspace/other")["exit_code"] == 0
        for path, text in (("/workspace/www/index.html", INDEX_HTML),
                           ("/workspace/www/app.js", APP_JS),
                           ("/workspace/www/api/data.txt", "data %s from %s\n" % (NONCE, sid)),
                           ("/workspace/serve.py", SERVE_PY),
                           ("/workspace/other/index.html", "port 8001 of %s\n" % sid)):
            assert s.put_file(sid, path, text.encode()).status == 200
        s.run(sid, "setsid python3 /workspace/serve.py >/dev/null 2>&1 & "
                   "cd /workspace/other && setsid python3 -m http.server --bind 127.0.0.1 8001 "
                   ">/dev/null 2>&1 &")
        for port in (8000, 8001):
            deadline = time.time() + 15
            while True:
                r = s.request("GET", "/v1/sandboxes/%s/ports/%d/" % (sid, port), check=False)
                if r.status == 200 or time.time() > deadline:
                    assert r.status == 200, r
                    break
                time.sleep(0.1)
        return sid

    def preview(self, sid, port=8000, key=None, **body):
        body["port"] = port
        r = self.server.request("POST", "/v1/sandboxes/%s/previews" % sid, body,
                                headers=bearer(key or self.tenant))
        self.assertEqual(r.status, 201, r)
        p = r.json()
        SEEN_TOKENS.append(p["token"])
        return p

    def host_of(self, sid, port):
        return "%d-%s.%s" % (port, sid.replace("_", "-"), self.domain)

    def on_host(self, host, method, target, headers=None, body=None):
        """One request to the server with Host `host` (what a browser sends for the URL)."""
        c = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        try:
            h = {"Host": host}
            h.update(headers or {})
            c.request(method, target, body=body, headers=h)
            r = c.getresponse()
            return harness.Response(r.status, {k.lower(): v for k, v in r.getheaders()},
                                    r.read())
        finally:
            c.close()

    def assertError(self, r, status, code):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.headers.get("content-type"), "application/json", r.headers)
        self.assertEqual(set(r.json()), {"error"}, r)
        self.assertEqual(r.json()["error"]["code"], code, r)

    def chromium(self, url, profile):
        """The DOM real Chromium builds for `url` (headless, no header of ours, loopback only)."""
        out = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
             "--no-first-run", "--disable-background-networking", "--disable-extensions",
             "--user-data-dir=" + profile,
             "--host-resolver-rules=MAP *.preview.test 127.0.0.1",
             "--dump-dom", url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        return out.stdout.decode()

    # ---- a browser -----------------------------------------------------------------------

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (scripts/install-deps.sh)")
    def test_chromium_opens_the_preview_until_it_is_revoked(self):
        p = self.preview(self.a, ttl_seconds=600)
        url = urlsplit(p["url"])
        self.assertEqual(url.netloc, self.host_of(self.a, 8000))
        self.assertEqual(p["host"], url.netloc)
        self.assertEqual(url.query, "_asb_preview_token=" + p["token"])
        profile = tempfile.mkdtemp(prefix="asb-chromium-")
        self.addCleanup(shutil.rmtree, profile, True)
        dom = self.chromium(p["url"], profile)
        self.assertIn("page served from inside the sandbox", dom)
        # The script at /app.js ran, and its request to /api/data.txt got the sandbox's file.
        self.assertIn("app.js loaded by absolute path; api said 200 data %s from %s"
                      % (NONCE, self.a), dom)
        # The same browser again, at the URL without the token: its cookie opens the page.
        bare = "http://%s/" % url.netloc
        self.assertIn("page served from inside the sandbox", self.chromium(bare, profile))
        r = self.server.request("DELETE", "/v1/sandboxes/%s/previews/%s" % (self.a, p["id"]),
                                headers=bearer(self.tenant))
        self.assertEqual(r.status, 204, r)
        for target in (bare, p["url"]):  # the cookie, and the token in the query
            dom = self.chromium(target, profile)
            self.assertNotIn("page served from inside the sandbox", dom)
            self.assertNotIn(NONCE, dom)
            self.assertIn('"code":"unauthorized"', dom)
        for target in ("/", "/?_asb_preview_token=" + p["token"]):
            r = self.on_host(url.netloc, "GET", target,
                             {"Cookie": "_asb_preview_token=" + p["token"]})
            self.assertError(r, 401, "unauthorized")

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (scripts/install-deps.sh)")
    def test_chromium_another_apps_domain_cookie_does_not_lock_a_preview_out(self):
        # ADR 0014, round 3, before: B's app answered Set-Cookie _asb_preview_token=junk;
        # Domain=<preview domain>, and A's preview answered 401 in that browser, even from a
        # fresh URL, because the server read the last cookie of the name. After: each cookie
        # of A's own name is tried, and the name carries the host.
        profile = tempfile.mkdtemp(prefix="asb-chromium-")
        try:
            a_name = "_asb_pv_8000_" + self.a
            domain = self.domain.split(":")[0]
            pb = self.preview(self.b)
            pa = self.preview(self.a)
            query = "&".join(
                "c=" + urllib.parse.quote("%s; Domain=%s; Path=/" % (junk, domain), safe="")
                for junk in ("_asb_preview_token=junk", a_name + "=junk"))
            # One browser run: B's page tosses both cookies, then goes on to A's fresh preview
            # URL; its redirect lands on A's `/` with cookies only, the junk ones first (older).
            # (Chromium may not write its cookie jar to disk before a headless run exits, so
            # the attack and the visit share one run.)
            url = pb["url"].replace("/?", "/toss?%s&next=%s&" % (
                query, urllib.parse.quote(pa["url"], safe="")), 1)
            dom = self.chromium(url, profile)
            self.assertIn("page served from inside the sandbox", dom)
            self.assertIn("api said 200 data %s from %s" % (NONCE, self.a), dom)
        finally:
            shutil.rmtree(profile, ignore_errors=True)

    # ---- the exchange, as curl sees it ---------------------------------------------------

    def test_first_request_sets_a_host_only_cookie_and_the_app_never_sees_the_token(self):
        p = self.preview(self.a)
        host = self.host_of(self.a, 8000)
        r = self.on_host(host, "GET", "/index.html?x=1&_asb_preview_token=%s&y=2" % p["token"])
        self.assertEqual(r.status, 302, r)
        self.assertEqual(r.headers["location"], "/index.html?x=1&y=2")
        cookie = r.headers["set-cookie"]
        # The name carries the host (ADR 0014, round 3): another preview host cannot shadow it.
        m = re.match(r"^_asb_pv_8000_%s=(asbp_[0-9a-f]{64}); Path=/; Max-Age=(\d+); "
                     r"HttpOnly; SameSite=Lax$" % self.a, cookie)
        self.assertTrue(m, cookie)  # no Domain: this host only; no Secure over http
        self.assertEqual(m.group(1), p["token"])
        self.assertTrue(3500 <= int(m.group(2)) <= 3600, cookie)
        self.assertEqual(r.headers["referrer-policy"], "no-referrer")
        self.assertEqual(r.headers["cache-control"], "no-store")
        # With the cookie: the app's own answer, and the app is sent neither the token nor the
        # API key, while its own cookies and query pass.
        r = self.on_host(host, "GET", "/echo?a=1&_asb_preview_token=%s&b=2" % p["token"],
                         {"Cookie": "theme=dark; _asb_preview_token=%s; lang=en" % p["token"],
                          "Authorization": "Bearer " + ADMIN_KEY, "X-API-Key": ADMIN_KEY})
        self.assertEqual(r.status, 302, r)  # a GET with the token in the query always redirects
        r = self.on_host(host, "GET", "/echo?a=1",
                         {"Cookie": "theme=dark; _asb_preview_token=%s; lang=en" % p["token"],
                          "Authorization": "Bearer " + ADMIN_KEY})
        self.assertEqual(r.status, 200, r)
        seen = r.json()
        self.assertEqual(seen["path"], "/echo?a=1")
        headers = {k.lower(): v for k, v in seen["headers"].items()}
        self.assertEqual(headers["cookie"], "theme=dark; lang=en")
        self.assertEqual(headers["x-forwarded-host"], host)
        self.assertEqual(headers["x-forwarded-proto"], "http")
        self.assertNotIn("authorization", headers)
        self.assertNotIn("x-forwarded-prefix", headers)
        self.assertNotIn(p["token"], r.body.decode())
        self.assertNotIn(ADMIN_KEY, r.body.decode())
        # Another method with the token in the query is passed on without it (http.server has
        # no POST: its own 501).
        r = self.on_host(host, "POST", "/echo?_asb_preview_token=" + p["token"], body=b"x")
        self.assertEqual(r.status, 501, r)
        # The app's absolute redirects are not rewritten on its own origin.
        r = self.on_host(host, "GET", "/api", {"Cookie": "_asb_preview_token=" + p["token"]})
        self.assertEqual((r.status, r.headers["location"]), (301, "/api/"), r)

    def test_a_preview_host_needs_its_own_token_and_takes_no_api_key(self):
        p = self.preview(self.a)
        host = self.host_of(self.a, 8000)
        self.assertError(self.on_host(host, "GET", "/"), 401, "unauthorized")
        # An API key, wherever a token would go, opens nothing.
        for headers, target in (({}, "/?_asb_preview_token=" + ADMIN_KEY),
                                ({"Cookie": "_asb_preview_token=" + ADMIN_KEY}, "/"),
                                (bearer(ADMIN_KEY), "/"), ({"X-API-Key": ADMIN_KEY}, "/"),
                                ({}, "/?_asb_preview_token=" + self.tenant)):
            self.assertError(self.on_host(host, "GET", target, headers), 401, "unauthorized")
        # The API is not served on a preview origin: its paths are the app's (http.server 404).
        r = self.on_host(host, "GET", "/v1/sandboxes", {"Cookie": "_asb_preview_token=" +
                                                        p["token"], **bearer(ADMIN_KEY)})
        self.assertEqual(r.status, 404, r)
        self.assertNotIn(b"sandboxes", r.body)
        # A token for port 8000 does not open port 8001 of the same sandbox (which listens), nor
        # port 8000 of another sandbox; the answer is the same as for any bad token.
        for other in (self.host_of(self.a, 8001), self.host_of(self.b, 8000)):
            for h, target in (({"Cookie": "_asb_preview_token=" + p["token"]}, "/"),
                              ({}, "/?_asb_preview_token=" + p["token"])):
                self.assertError(self.on_host(other, "GET", target, h), 401, "unauthorized")
        q = self.preview(self.a, port=8001)
        r = self.on_host(self.host_of(self.a, 8001), "GET", "/",
                         {"Cookie": "_asb_preview_token=" + q["token"]})
        self.assertEqual((r.status, r.body), (200, ("port 8001 of %s\n" % self.a).encode()), r)
        # A token is never an API key.
        for headers in (bearer(p["token"]), {"X-API-Key": p["token"]},
                        {"Cookie": "_asb_preview_token=" + p["token"], "Authorization": ""}):
            r = self.server.request("GET", "/v1/sandboxes/" + self.a, headers=headers)
            self.assertError(r, 401, "unauthorized")
        r = self.server.request("GET", "/v1/sandboxes/%s/ports/8000/?_asb_preview_token=%s"
                                % (self.a, p["token"]), headers={"Authorization": ""})
        self.assertError(r, 401, "unauthorized")
        # Hosts that are not preview hosts are the API's; a preview host's bad port is a 400.
        r = self.server.request("GET", "/v1/sandboxes/" + self.a,
                                headers={"Host": "x." + self.domain})
        self.assertEqual(r.status, 200, r)
        self.assertError(self.on_host("0-%s.%s" % (self.a.replace("_", "-"), self.domain),
                                      "GET", "/"), 400, "invalid_request")

    def test_a_public_sandbox_answers_without_a_token_and_with_its_host_mask(self):
        pub = self.app_sandbox(allow_public_traffic=True, mask_request_host="dev.test:${PORT}")
        try:
            info = self.server.request("GET", "/v1/sandboxes/" + pub).json()
            self.assertEqual((info["allow_public_traffic"], info["mask_request_host"]),
                             (True, "dev.test:${PORT}"))
            # No token, no key: the app answers, and sees the masked Host.
            r = self.on_host(self.host_of(pub, 8000), "GET", "/echo")
            self.assertEqual(r.status, 200, r)
            headers = {k.lower(): v for k, v in r.json()["headers"].items()}
            self.assertEqual(headers["host"], "dev.test:8000")
            r = self.server.request("GET", "/v1/sandboxes/%s/ports/8000/echo" % pub,
                                    headers=bearer(self.tenant))
            headers = {k.lower(): v for k, v in r.json()["headers"].items()}
            self.assertEqual(headers["host"], "dev.test:8000")
            # A token sent anyway never reaches the app.
            p = self.preview(pub)
            r = self.on_host(self.host_of(pub, 8000), "GET", "/echo",
                             {"Cookie": "_asb_preview_token=" + p["token"]})
            self.assertNotIn(p["token"], r.body.decode())
            # The other sandboxes stay private; a mask that is no host name is refused.
            self.assertError(self.on_host(self.host_of(self.a, 8000), "GET", "/"), 401,
                             "unauthorized")
            for bad in ("a\r\nX-Admin: 1", "a b", "x/y", "h" * 254):
                r = self.server.request("POST", "/v1/sandboxes", {"mask_request_host": bad},
                                        headers=bearer(self.tenant), check=False)
                self.assertError(r, 400, "invalid_request")
        finally:
            self.server.request("DELETE", "/v1/sandboxes/" + pub, headers=bearer(self.tenant))

    def test_a_paused_auto_resume_sandbox_wakes_for_its_preview_and_port_traffic(self):
        s = self.server
        r = s.request("POST", "/v1/sandboxes", {"auto_resume": True}, headers=bearer(self.tenant))
        self.assertEqual(r.status, 201, r)
        sid = r.json()["id"]
        try:
            self.assertEqual(s.put_file(sid, "/workspace/w/index.html", b"awake\n").status, 200)
            s.run(sid, "cd /workspace/w && setsid python3 -m http.server --bind 127.0.0.1 8002 "
                       ">/dev/null 2>&1 &")
            deadline = time.time() + 15
            while s.request("GET", "/v1/sandboxes/%s/ports/8002/" % sid,
                            check=False).status != 200 and time.time() < deadline:
                time.sleep(0.1)
            p = self.preview(sid, port=8002)
            host = self.host_of(sid, 8002)
            for wake in ("preview", "port"):
                r = s.request("POST", "/v1/sandboxes/%s/pause" % sid, {},
                              headers=bearer(self.tenant))
                self.assertEqual(r.status, 200, r)
                if wake == "preview":
                    r = self.on_host(host, "GET", "/", {"Cookie": "_asb_preview_token=" +
                                                        p["token"]})
                else:
                    r = s.request("GET", "/v1/sandboxes/%s/ports/8002/" % sid,
                                  headers=bearer(self.tenant))
                self.assertEqual((r.status, r.body), (200, b"awake\n"), (wake, r))
                got = s.request("GET", "/v1/sandboxes/" + sid, headers=bearer(self.tenant))
                self.assertEqual(got.json()["status"], "running", wake)
        finally:
            s.request("DELETE", "/v1/sandboxes/" + sid, check=False)

    def test_ttl_is_bounded_and_an_expired_token_fails(self):
        p = self.preview(self.a, ttl_seconds=MAX_TTL)  # exactly the maximum
        life = harness.parse_time(p["expires_at"]) - harness.parse_time(p["created_at"])
        self.assertAlmostEqual(life, MAX_TTL, delta=0.01)
        d = self.preview(self.a)  # the default, one hour
        life = harness.parse_time(d["expires_at"]) - harness.parse_time(d["created_at"])
        self.assertAlmostEqual(life, 3600, delta=0.01)
        path = "/v1/sandboxes/%s/previews" % self.a
        for body in ({"port": 8000, "ttl_seconds": MAX_TTL + 1}, {"port": 8000, "ttl_seconds": 0},
                     {"port": 0}, {"port": 65536}, {}, {"port": "8000"},
                     {"port": 8000, "public": True}):
            r = self.server.request("POST", path, body, headers=bearer(self.tenant))
            self.assertError(r, 400, "invalid_request")
        self.assertIn(str(MAX_TTL), self.server.request(
            "POST", path, {"port": 8000, "ttl_seconds": MAX_TTL + 1}).json()["error"]["message"])
        short = self.preview(self.a, ttl_seconds=1)
        host = self.host_of(self.a, 8000)
        r = self.on_host(host, "GET", "/?_asb_preview_token=" + short["token"])
        self.assertEqual(r.status, 302, r)
        self.assertIn("Max-Age=1;", r.headers["set-cookie"])
        time.sleep(max(0.0, harness.parse_time(short["expires_at"]) - time.time()) + 0.2)
        for h, target in (({"Cookie": "_asb_preview_token=" + short["token"]}, "/"),
                          ({}, "/?_asb_preview_token=" + short["token"])):
            self.assertError(self.on_host(host, "GET", target, h), 401, "unauthorized")
        listed = self.server.request("GET", path, headers=bearer(self.tenant)).json()
        self.assertNotIn(short["id"], [x["id"] for x in listed["previews"]])

    def test_list_and_revoke_belong_to_the_sandboxs_tenant(self):
        p = self.preview(self.b, port=8001)
        path = "/v1/sandboxes/%s/previews" % self.b
        listed = self.server.request("GET", path + "?port=8001", headers=bearer(self.tenant))
        self.assertEqual(listed.status, 200, listed)
        mine = [x for x in listed.json()["previews"] if x["id"] == p["id"]]
        self.assertEqual(len(mine), 1, listed)
        self.assertEqual(mine[0]["port"], 8001)
        self.assertEqual(mine[0]["host"], self.host_of(self.b, 8001))
        self.assertNotIn("token", mine[0])
        self.assertNotIn(p["token"], listed.body.decode())
        only = self.server.request("GET", path + "?port=8000", headers=bearer(self.tenant))
        self.assertEqual([x for x in only.json()["previews"] if x["port"] != 8000], [])
        # Another tenant sees neither the sandbox nor its tokens, and cannot make or revoke any.
        for method, target, body in (("GET", path, None), ("POST", path, {"port": 8001}),
                                     ("DELETE", path + "/" + p["id"], None)):
            r = self.server.request(method, target, body, headers=bearer(self.other))
            self.assertError(r, 404, "not_found")
        # Revoking by the id under another sandbox does nothing.
        r = self.server.request("DELETE", "/v1/sandboxes/%s/previews/%s" % (self.a, p["id"]),
                                headers=bearer(self.tenant))
        self.assertError(r, 404, "not_found")
        host = self.host_of(self.b, 8001)
        cookie = {"Cookie": "_asb_preview_token=" + p["token"]}
        self.assertEqual(self.on_host(host, "GET", "/", cookie).status, 200)
        r = self.server.request("DELETE", path + "/" + p["id"], headers=bearer(self.tenant))
        self.assertEqual(r.status, 204, r)
        self.assertError(self.on_host(host, "GET", "/", cookie), 401, "unauthorized")
        r = self.server.request("DELETE", path + "/" + p["id"], headers=bearer(self.tenant))
        self.assertError(r, 404, "not_found")
        self.assertError(self.server.request("DELETE", path + "/nonsense"), 404, "not_found")
        listed = self.server.request("GET", path, headers=bearer(self.tenant)).json()
        self.assertNotIn(p["id"], [x["id"] for x in listed["previews"]])

    def test_tokens_die_with_their_sandbox(self):
        sid = self.server.create()["id"]
        p = self.preview(sid, key=ADMIN_KEY)
        r = self.server.request("DELETE", "/v1/sandboxes/" + sid)
        self.assertEqual(r.status, 204, r)
        host = self.host_of(sid, 8000)
        self.assertError(self.on_host(host, "GET", "/?_asb_preview_token=" + p["token"]), 401,
                         "unauthorized")
        db = sqlite3.connect(os.path.join(self.server.data_dir, "agent-sandbox.db"))
        try:
            n = db.execute("SELECT COUNT(*) FROM preview_tokens WHERE sandbox_id = ?",
                           (sid,)).fetchone()[0]
        finally:
            db.close()
        self.assertEqual(n, 0)
        r = self.server.request("POST", "/v1/sandboxes/%s/previews" % sid, {"port": 8000})
        self.assertError(r, 404, "not_found")

    def test_cli_port_preview_previews_and_revoke(self):
        env = dict(os.environ, AGENT_SANDBOX_URL="http://127.0.0.1:%d" % self.server.port,
                   AGENT_SANDBOX_API_KEY=self.tenant)

        def cli(*args):
            out = subprocess.run([BIN] + list(args), env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, timeout=60)
            return out.returncode, out.stdout.decode(), out.stderr.decode()

        rc, out, err = cli("port", "preview", self.a, "8001", "--ttl", "120")
        self.assertEqual(rc, 0, err)
        url = urlsplit(out.strip())
        self.assertEqual(url.netloc, self.host_of(self.a, 8001))
        token = url.query.split("=", 1)[1]
        SEEN_TOKENS.append(token)
        r = self.on_host(url.netloc, "GET", "/", {"Cookie": "_asb_preview_token=" + token})
        self.assertEqual(r.status, 200, r)
        rc, out, err = cli("port", "previews", self.a, "8001")
        self.assertEqual(rc, 0, err)
        self.assertNotIn(token, out)
        ids = re.findall(r"^(pv_[0-9a-f]{16})\s+8001\s", out, re.M)
        self.assertTrue(ids, out)
        for pid in ids:
            self.assertEqual(cli("port", "revoke", self.a, pid)[0], 0)
        self.assertError(self.on_host(url.netloc, "GET", "/",
                                      {"Cookie": "_asb_preview_token=" + token}),
                         401, "unauthorized")
        rc, out, err = cli("port", "revoke", self.a, ids[0])
        self.assertEqual(rc, 125)
        self.assertIn("not found", err)
        rc, out, err = cli("--json", "port", "preview", self.a, "8000", "--ttl", str(MAX_TTL + 1))
        self.assertEqual(rc, 125)
        self.assertIn("ttl_seconds", err)

    def test_z_tokens_are_in_no_log_audit_record_or_database_column(self):
        # Its own traffic (so it also holds when run alone), after every other test's.
        host = self.host_of(self.a, 8000)
        for p in (self.preview(self.a), self.preview(self.a, ttl_seconds=30)):
            self.assertEqual(self.on_host(host, "GET", "/?_asb_preview_token=" +
                                          p["token"]).status, 302)
            self.assertEqual(self.on_host(host, "GET", "/", {"Cookie": "_asb_preview_token=" +
                                                             p["token"]}).status, 200)
        self.server.request("DELETE", "/v1/sandboxes/%s/previews/%s" % (self.a, p["id"]))
        self.assertGreaterEqual(len(SEEN_TOKENS), 2)
        with open(self.server.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        events = self.server.request("GET", "/v1/events?limit=1000").body.decode()
        self.assertIn("preview.create", events)
        self.assertIn("preview.revoke", events)
        files = ""
        for name in os.listdir(self.server.data_dir):
            if name.startswith("agent-sandbox.db"):
                with open(os.path.join(self.server.data_dir, name), "rb") as f:
                    files += f.read().decode("latin-1")
        for token in SEEN_TOKENS:
            hexpart = token[len("asbp_"):]
            self.assertNotIn(hexpart, log)
            self.assertNotIn(hexpart, events)
            self.assertNotIn(hexpart, files)
        # The preview hosts' requests are in the log, by route and sandbox only.
        self.assertIn("route={port}-{id}.%s sandbox_id=%s" % (self.domain, self.a), log)


if __name__ == "__main__":
    main()
