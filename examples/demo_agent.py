#!/usr/bin/env python3
"""A demo "agent" that works through the agent-sandbox REST API only (Python standard library,
no SDK): it creates a sandbox, uploads a multi-file Python project, runs the project's tests
with their output streamed as it comes, runs part of CPython's own test suite (Debian's
libpython3.11-testsuite, in the base template) the same way, fetches a result file back, and
destroys the sandbox — printing what ran and how long each step took.

Usage: demo_agent.py [--url http://127.0.0.1:8080] [--project DIR] [--cpython-tests "a b c"]
"""

import argparse
import http.client
import json
import os
import re
import sys
import time
import urllib.parse

DEFAULT_CPYTHON_TESTS = ("test_json test_textwrap test_difflib test_statistics test_fractions "
                         "test_heapq test_bisect test_base64 test_string test_csv test_shlex "
                         "test_functools test_itertools test_re")


class Api:
    def __init__(self, url, api_key=None):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.headers = {"Authorization": "Bearer " + api_key} if api_key else {}

    def call(self, method, path, body=None, content_type="application/json", timeout=600):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = dict(self.headers)
            if body is not None:
                if not isinstance(body, (bytes, str)):
                    body = json.dumps(body)
                h["Content-Type"] = content_type
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            if r.status >= 300:
                raise RuntimeError("%s %s -> %d %s" % (method, path, r.status, data.decode()))
            if r.getheader("Content-Type", "").startswith("application/json"):
                return json.loads(data)
            return data
        finally:
            c.close()

    def stream(self, sid, body, on_output):
        """POST .../exec/stream; calls on_output(kind, text) per event; returns the exit event."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=900)
        try:
            h = dict(self.headers)
            h["Content-Type"] = "application/json"
            c.request("POST", "/v1/sandboxes/%s/exec/stream" % sid, json.dumps(body), h)
            r = c.getresponse()
            if r.status != 200:
                raise RuntimeError("exec/stream -> %d %s" % (r.status, r.read().decode()))
            while True:
                line = r.readline()
                if not line:
                    raise RuntimeError("stream ended without an exit event")
                ev = json.loads(line)
                if ev["type"] in ("stdout", "stderr"):
                    on_output(ev["type"], ev["data"])
                elif ev["type"] == "exit":
                    return ev
                elif ev["type"] == "error":
                    raise RuntimeError("exec failed: %s: %s" % (ev["code"], ev["message"]))
        finally:
            c.close()


def banner(text):
    print("\n\033[1m== %s\033[0m" % text, flush=True)


def echo(kind, text):
    out = sys.stdout if kind == "stdout" else sys.stderr
    for line in text.splitlines(keepends=True):
        out.write("   | " + line)
    out.flush()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default=os.environ.get("AGENT_SANDBOX_URL", "http://127.0.0.1:8080"))
    p.add_argument("--project", default=os.path.join(here, "wordstats"))
    p.add_argument("--cpython-tests", default=DEFAULT_CPYTHON_TESTS)
    args = p.parse_args()
    api = Api(args.url, os.environ.get("AGENT_SANDBOX_API_KEY"))
    timings = []

    def timed(label, fn):
        t0 = time.monotonic()
        result = fn()
        timings.append((label, time.monotonic() - t0))
        return result

    banner("create a sandbox (2 CPUs, 1 GiB memory, 30 min TTL)")
    sb = timed("create sandbox", lambda: api.call(
        "POST", "/v1/sandboxes", {"cpus": 2, "memory_mb": 1024, "timeout_seconds": 1800,
                                  "env": {"PYTHONDONTWRITEBYTECODE": "1"}}))
    sid = sb["id"]
    print("   %s  status=%s template=%s expires_at=%s" % (sid, sb["status"], sb["template"],
                                                         sb["expires_at"]))
    failed = False
    try:
        banner("upload the project %s" % os.path.relpath(args.project))
        files = []
        for root, dirs, names in os.walk(args.project):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for n in sorted(names):
                if not n.endswith(".pyc"):
                    files.append(os.path.join(root, n))
        project = os.path.basename(os.path.normpath(args.project))

        def upload():
            total = 0
            for f in files:
                rel = os.path.relpath(f, args.project)
                with open(f, "rb") as fh:
                    data = fh.read()
                r = api.call("PUT", "/v1/sandboxes/%s/files?%s" % (sid, urllib.parse.urlencode(
                    {"path": "%s/%s" % (project, rel)})), data, "application/octet-stream")
                total += r["size"]
                print("   PUT %-40s %6d bytes" % (r["path"], r["size"]))
            return total

        total = timed("upload %d files" % len(files), upload)
        listing = api.call("GET", "/v1/sandboxes/%s/files/list?%s" % (
            sid, urllib.parse.urlencode({"path": project, "recursive": "true"})))
        print("   the sandbox now holds %d entries under /workspace/%s (%d bytes uploaded)"
              % (len(listing["entries"]), project, total))

        banner("run the project's tests in the sandbox (streamed)")
        ev = timed("project tests", lambda: api.stream(
            sid, {"command": "python3 -m unittest discover -v", "workdir": project,
                  "timeout": 300}, echo))
        print("   -> exit %d in %d ms" % (ev["exit_code"], ev["duration_ms"]))
        failed |= ev["exit_code"] != 0

        banner("use the project on a file in the sandbox")
        ev = timed("wordstats run", lambda: api.stream(
            sid, {"command": "python3 -m wordstats README.md -n 3 > summary.json && "
                             "cat summary.json", "workdir": project}, echo))
        summary = api.call("GET", "/v1/sandboxes/%s/files?%s" % (
            sid, urllib.parse.urlencode({"path": project + "/summary.json"})))
        print("   fetched summary.json back: %d bytes, %d words counted"
              % (len(summary), json.loads(summary)["README.md"]["words"]))
        failed |= ev["exit_code"] != 0

        tests = args.cpython_tests.split()
        banner("run %d modules of CPython's own test suite in the sandbox (streamed)" % len(tests))
        print("   " + " ".join(tests))
        output = []

        def collect(kind, text):
            output.append(text)
            echo(kind, text)

        ev = timed("CPython tests", lambda: api.stream(
            sid, {"command": "python3 -m test -j2 " + " ".join(tests), "timeout": 900},
            collect))
        text = "".join(output)
        ok = re.search(r"(\d+) tests? OK", text)
        bad = re.search(r"(\d+) tests? failed", text)
        print("   -> exit %d in %.1f s: %s tests OK, %s failed"
              % (ev["exit_code"], ev["duration_ms"] / 1000.0, ok.group(1) if ok else "?",
                 bad.group(1) if bad else "0"))
        failed |= ev["exit_code"] != 0
    finally:
        banner("destroy the sandbox")
        timed("destroy sandbox", lambda: api.call("DELETE", "/v1/sandboxes/" + sid))
        print("   %s deleted" % sid)

    banner("timings")
    for label, secs in timings:
        print("   %-28s %8.2f s" % (label, secs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
