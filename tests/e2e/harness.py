"""End-to-end harness: starts the REAL `agent-sandbox serve` binary on a free loopback port with
a temporary data directory whose templates/ points at the real template rootfs, talks to it over
HTTP with the standard library, and cleans up everything (sandboxes, server, data directory)
even when a test fails.

Environment:
  ASB_BIN        path of agent-sandbox (CTest passes the built one); sandboxd must be beside it
  ASB_TEMPLATES  templates directory to use (default /var/lib/agent-sandbox/templates)
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import openapi_check

BIN = os.environ.get("ASB_BIN", "agent-sandbox")
TEMPLATES = os.environ.get("ASB_TEMPLATES", "/var/lib/agent-sandbox/templates")
ID_RE = re.compile(r"^sb_[0-9a-f]{16}$")


def missing_prerequisite():
    """The reason these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, cgroups, loop devices)"
    if not os.path.isdir(os.path.join(TEMPLATES, "base", "rootfs", "usr")):
        return "no base template rootfs under %s (run scripts/build-template.sh)" % TEMPLATES
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        return "agent-sandbox binary not found at %s (set ASB_BIN)" % BIN
    if not os.path.isfile(os.path.join(os.path.dirname(BIN), "sandboxd")):
        return "sandboxd not found beside %s" % BIN
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_time(text):
    """RFC 3339 UTC with milliseconds -> Unix seconds (float)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$", text)
    assert m, "not an RFC 3339 UTC time: %r" % text
    import calendar
    secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6]))
    frac = float("0." + m.group(7)) if m.group(7) else 0.0
    return secs + frac


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    @property
    def error_code(self):
        try:
            return self.json()["error"]["code"]
        except Exception:
            return None

    def __repr__(self):
        return "<%d %r>" % (self.status, self.body[:300])


def rss_bytes(pid):
    """The resident set of process `pid`, bytes (0 when it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class RssWatch:
    """The highest RSS of `pid` while the block runs, sampled every 20 ms."""

    def __init__(self, pid):
        self.pid = pid
        self.base = rss_bytes(pid)
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pid))

    @property
    def growth(self):
        return self.peak - self.base


class Server:
    """One `agent-sandbox serve` process with its own data directory."""

    def __init__(self, env=None, data_dir=None, api_key=None):
        self.extra_env = dict(env or {})
        # With api_key, every request that names no key of its own sends this one (Bearer),
        # and the server runs with authentication (the key must be in
        # AGENT_SANDBOX_API_KEYS or the data dir's database).
        self.api_key = api_key
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="asb-e2e-", dir="/var/tmp")
        tmpl = os.path.join(self.data_dir, "templates")
        if not os.path.lexists(tmpl):
            os.symlink(TEMPLATES, tmpl)
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.data_dir, "serve.log")

    def env(self):
        e = dict(os.environ)
        e.update({
            "AGENT_SANDBOX_HOST": "127.0.0.1",
            "AGENT_SANDBOX_PORT": str(self.port),
            "AGENT_SANDBOX_DATA_DIR": self.data_dir,
            "AGENT_SANDBOX_INSECURE_NO_AUTH": "true",
            "AGENT_SANDBOX_REAP_INTERVAL_SECONDS": "1",
            "AGENT_SANDBOX_SHUTDOWN_GRACE_SECONDS": "10",
            # E2B creates get no network on the host's real uplink unless a test asks (the
            # network tests give the server an uplink into a namespace of their own).
            "AGENT_SANDBOX_E2B_INTERNET_DEFAULT": "false",
        })
        if self.api_key:
            e["AGENT_SANDBOX_INSECURE_NO_AUTH"] = "false"
        e.update(self.extra_env)
        return e

    def start(self, port=None, timeout=20):
        self.port = port or self.port or free_port()
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BIN, "serve"], env=self.env(), stdout=log,
                                     stderr=subprocess.STDOUT)
        log.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %s:\n%s" % (self.proc.returncode,
                                                                   self.log_tail()))
            try:
                if self.request("GET", "/healthz", timeout=2).status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not answer /healthz:\n" + self.log_tail())

    def log_tail(self, n=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout=30):
        """SIGTERM and wait; SIGKILL if it does not stop. Returns the exit code."""
        if not self.running():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("server ignored SIGTERM for %d s" % timeout)

    def destroy_all(self):
        """Deletes every sandbox the server knows (used in cleanup)."""
        if not self.running():
            return
        try:
            r = self.request("GET", "/v1/sandboxes", timeout=30, check=False)
            for s in r.json().get("sandboxes", []):
                self.request("DELETE", "/v1/sandboxes/" + s["id"], timeout=60, check=False)
        except Exception as e:  # cleanup must go on
            print("cleanup: destroy_all: %s" % e, file=sys.stderr)

    def close(self):
        """Full cleanup: sandboxes, the server, leftovers of a crashed server, the data dir."""
        try:
            if not self.running() and self.proc is not None and self.own_dir:
                # A killed server leaves sandboxes behind: a restart adopts them, then we delete.
                try:
                    self.start()
                except Exception as e:
                    print("cleanup: restart failed: %s" % e, file=sys.stderr)
            self.destroy_all()
            try:
                self.stop()
            except AssertionError as e:
                print("cleanup: %s" % e, file=sys.stderr)
        finally:
            if self.own_dir:
                self._remove_data_dir()

    def cgroup_name(self):
        """The server's cgroup directory name: serve.cc's CgroupNameFor() of the data dir."""
        h = 1469598103934665603
        for c in os.path.realpath(self.data_dir).encode():
            h ^= c
            h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return "agent-sandbox-%08x" % (h & 0xFFFFFFFF)

    def _remove_cgroup_parents(self):
        # The backend leaves its (empty) per-server parent cgroup behind; rmdir succeeds only
        # when it is empty, so nothing that still holds a sandbox is touched.
        name = self.cgroup_name()
        for root in ["/sys/fs/cgroup"] + [os.path.join("/sys/fs/cgroup", d)
                                          for d in os.listdir("/sys/fs/cgroup")]:
            path = os.path.join(root, name)
            if os.path.isdir(path) and not os.path.islink(root):
                try:
                    os.rmdir(path)
                except OSError:
                    pass

    def _remove_data_dir(self):
        wait_for_run_watchers(self.data_dir)
        self._remove_cgroup_parents()
        # Never follow the templates symlink; unmount anything left below the data dir first.
        try:
            with open("/proc/self/mountinfo") as f:
                mounts = [l.split()[4] for l in f]
            for m in sorted((m for m in mounts if m.startswith(self.data_dir + "/")),
                            key=len, reverse=True):
                subprocess.run(["umount", "-l", m], check=False)
        except OSError:
            pass
        tmpl = os.path.join(self.data_dir, "templates")
        if os.path.islink(tmpl):
            os.unlink(tmpl)
        shutil.rmtree(self.data_dir, ignore_errors=True)

    # ---- HTTP --------------------------------------------------------------------------------

    def _auth(self, headers):
        h = dict(headers or {})
        names = {k.lower() for k in h}
        if self.api_key and "authorization" not in names and "x-api-key" not in names:
            h["Authorization"] = "Bearer " + self.api_key
        return h

    def conn(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=120, check=True):
        """One HTTP exchange. With check (the default) an answer that does not match
        api/openapi.json raises AssertionError (openapi_check.py); cleanup passes False."""
        c = self.conn(timeout)
        try:
            h = self._auth(headers)
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
                h.setdefault("Content-Type", "application/json")
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            resp = Response(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
            if check and openapi_check.ENABLED:  # every answer must match api/openapi.json
                openapi_check.enforce(
                    openapi_check.check(method, path, resp.status, resp.headers, data))
            return resp
        finally:
            c.close()

    def create(self, **spec):
        r = self.request("POST", "/v1/sandboxes", spec)
        assert r.status == 201, r
        return r.json()

    def exec(self, sid, body, timeout=120):
        if isinstance(body, str):
            body = {"command": body}
        return self.request("POST", "/v1/sandboxes/%s/exec" % sid, body, timeout=timeout)

    def run(self, sid, command, **kw):
        """Sync exec that must succeed at the HTTP level; returns the result object."""
        body = {"command": command}
        body.update(kw)
        r = self.exec(sid, body)
        assert r.status == 200, r
        return r.json()

    def stream(self, sid, body, timeout=120, route="exec/stream", event_schema="StreamEvent"):
        """Streams an exec (or another NDJSON POST route of the sandbox, whose lines match
        `event_schema`); returns (response headers, status, list of events)."""
        path = "/v1/sandboxes/%s/%s" % (sid, route)
        c = self.conn(timeout)
        try:
            c.request("POST", path, body=json.dumps(body),
                      headers=self._auth({"Content-Type": "application/json"}))
            r = c.getresponse()
            headers = {k.lower(): v for k, v in r.getheaders()}
            if r.status != 200:
                data = r.read()
                if openapi_check.ENABLED:
                    openapi_check.enforce(openapi_check.check("POST", path, r.status, headers, data))
                return headers, r.status, Response(r.status, headers, data)
            if openapi_check.ENABLED:
                openapi_check.enforce(openapi_check.check("POST", path, 200, headers, b""))
            events = []
            while True:
                line = r.readline()
                if not line:
                    break
                events.append(json.loads(line))
                if openapi_check.ENABLED:
                    openapi_check.enforce(openapi_check.check_stream_event(events[-1],
                                                                           event_schema))
            return headers, r.status, events
        finally:
            c.close()

    def put_file(self, sid, path, data, mode=None):
        from urllib.parse import quote
        q = "path=" + quote(path, safe="")
        if mode is not None:
            q += "&mode=" + mode
        return self.request("PUT", "/v1/sandboxes/%s/files?%s" % (sid, q), body=data,
                            headers={"Content-Type": "application/octet-stream"})

    def get_file(self, sid, path):
        from urllib.parse import quote
        return self.request("GET", "/v1/sandboxes/%s/files?path=%s" % (sid, quote(path, safe="")))


def sandbox_pids(sid):
    """Host pids whose cgroup names the sandbox (its processes, wherever they are)."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % p) as f:
                if sid in f.read():
                    pids.append(int(p))
        except OSError:
            pass
    return pids


def kill_sandbox(sid, timeout=5):
    """SIGKILLs every process of sandbox `sid` (a sandbox dying while the server is down) and
    waits up to `timeout` seconds for them to be gone."""
    for p in sandbox_pids(sid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.time() + timeout
    while sandbox_pids(sid) and time.time() < deadline:
        time.sleep(0.05)


def wait_for_run_watchers(data_dir, timeout=30):
    """Waits until no `agent-sandbox run` watcher of `data_dir` runs: after its command ended,
    run exits at once and its watcher destroys the sandbox (cli/run_leftovers.h), so whoever
    removes the data directory right after a run waits for that first."""
    needle = ("--data-dir\0%s\0" % data_dir).encode()
    deadline = time.time() + timeout
    while time.time() < deadline:
        busy = False
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"run-watch" in cmd and needle in cmd:
                busy = True
                break
        if not busy:
            return
        time.sleep(0.05)


def sandbox_leftovers(server, sid):
    """Everything of sandbox `sid` still visible on the host: processes, mounts, cgroups,
    state files. Empty when it is fully gone."""
    left = []
    if sandbox_pids(sid):
        left.append("processes %s" % sandbox_pids(sid))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if sid in line:
                left.append("mount " + line.split()[4])
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d == sid or d.startswith(sid):
                left.append("cgroup " + os.path.join(root, d))
        if root.count("/") > 6:
            dirs[:] = []
    for backend_dir in ("sandboxes", "microvm-sandboxes"):
        state = os.path.join(server.data_dir, backend_dir, sid)
        if os.path.exists(state):
            left.append("state dir " + state)
    return left


class ServerTestCase(unittest.TestCase):
    """A test class with one server for all its tests (SERVER_ENV configures it). Each test
    registers the sandboxes it creates through self.create(), deleted after the test."""

    SERVER_ENV = {}
    API_KEY = None  # with a key: authentication on, every request sends it (Server's api_key)
    server = None

    @classmethod
    def setUpClass(cls):
        reason = missing_prerequisite()
        if reason:
            raise unittest.SkipTest(reason)
        cls.server = Server(cls.SERVER_ENV, api_key=cls.API_KEY)
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
        self._created = []

    def tearDown(self):
        # A destroy that fails is a product bug, not cleanup noise: the breaker found deletes
        # failing with 502 (and leaking the workspace) that these quiet deletes had hidden.
        failed = []
        for sid in self._created:
            try:
                r = self.server.request("DELETE", "/v1/sandboxes/" + sid, timeout=60,
                                        check=False)
                if r.status not in (204, 404):
                    failed.append((sid, r.status, r.body[:200]))
            except Exception as e:
                failed.append((sid, 0, repr(e)))
        self.assertEqual(failed, [], "cleanup: DELETE of the test's sandboxes failed")

    def create(self, **spec):
        s = self.server.create(**spec)
        self._created.append(s["id"])
        return s

    def assertError(self, r, status, code):
        self.assertEqual(r.status, status, r)
        body = r.json()
        self.assertEqual(set(body.keys()), {"error"}, r)
        self.assertEqual(set(body["error"].keys()), {"code", "message"}, r)
        self.assertEqual(body["error"]["code"], code, r)
        self.assertTrue(body["error"]["message"], r)


def main(needs_sandboxes=True):
    """Entry point of each test file: exit 77 (CTest SKIP_RETURN_CODE) when the machine
    cannot run sandboxes (or, with needs_sandboxes=False, when the binary is missing), else run
    the file's tests."""
    reason = missing_prerequisite()
    if reason and not needs_sandboxes:
        reason = None if os.access(BIN, os.X_OK) else "agent-sandbox not found at " + BIN
    if reason and os.environ.get("ASB_E2E_REQUIRE") != "1":
        print("SKIP: " + reason)
        sys.exit(77)
    unittest.main(verbosity=2)
