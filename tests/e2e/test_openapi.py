"""The OpenAPI document (api/openapi.json, ADR 0007) against the server: served at
/openapi.json and printed by `agent-sandbox openapi` byte for byte; every route the source
registers is in it; its schemas are valid JSON Schema; the validator the harness runs on every
answer (openapi_check.py) accepts the real answers and rejects wrong ones."""

import copy
import glob
import json
import os
import re
import subprocess
import unittest

import jsonschema

import openapi_check
from harness import BIN, ServerTestCase, main

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def source_routes():
    """{(METHOD, pattern)} registered with router.Add in src/api and src/mcp (/mcp; keys under
    both bases)."""
    found = set()
    for path in glob.glob(os.path.join(ROOT, "src", "api", "*.cc")) + \
            glob.glob(os.path.join(ROOT, "src", "mcp", "*.cc")):
        if path.endswith("_test.cc"):
            continue
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r'router\.Add\(\s*"([A-Z]+)",\s*"([^"]+)"', text):
            found.add((m.group(1), m.group(2)))
        bases = re.findall(r'for \(std::string base : \{([^}]*)\}\)', text)
        for m in re.finditer(r'router\.Add\(\s*"([A-Z]+)",\s*base(?:\s*\+\s*"([^"]*)")?', text):
            for blist in bases:
                for b in re.findall(r'"([^"]+)"', blist):
                    found.add((m.group(1), b + (m.group(2) or "")))
    return found


class DocumentTest(unittest.TestCase):
    def test_every_source_route_is_documented(self):
        doc = openapi_check.document()
        routes = source_routes()
        self.assertGreater(len(routes), 40, routes)
        # E2B's control plane (docs/e2b.md) is another product's API, kept to its own
        # document; seed A's /exec routes are in this one (tag "seed A"), /exec/ being the
        # list's alias.
        foreign = ("/sandboxes", "/v2/sandboxes", "/snapshots", "/templates/", "/files")
        missing = sorted((m, p) for m, p in routes
                         if not p.startswith(foreign) and p != "/exec/"
                         and m.lower() not in doc["paths"].get(p, {}))
        self.assertEqual(missing, [], "routes the server has and api/openapi.json lacks")
        extra = sorted((m.upper(), p) for p, item in doc["paths"].items() for m in item
                       if m != "parameters" and (m.upper(), p) not in routes)
        self.assertEqual(extra, [], "documented routes the server does not register")

    def test_schemas_are_valid_json_schema_and_refs_resolve(self):
        doc = openapi_check.document()
        self.assertEqual(doc["openapi"], "3.1.0")
        for name, schema in doc["components"]["schemas"].items():
            jsonschema.Draft202012Validator.check_schema(schema)
        for ref in re.findall(r'"\$ref": "([^"]+)"', json.dumps(doc)):
            node = doc
            for part in ref.lstrip("#/").split("/"):
                node = node[part]  # KeyError names a dangling $ref
        self.assertEqual(set(doc["components"]["securitySchemes"]), {"bearerAuth", "apiKeyHeader"})

    def test_yaml_twin_is_current(self):
        r = subprocess.run(["python3", os.path.join(ROOT, "scripts", "openapi-yaml.py"),
                            "--check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_cli_prints_the_document(self):
        out = subprocess.run([BIN, "openapi"], capture_output=True, check=True).stdout
        self.assertEqual(json.loads(out), openapi_check.document())

    def test_wrong_bodies_fail_validation(self):
        good = {"id": "sb_0123456789abcdef", "status": "running", "template": "base",
                "image": "base", "backend": "ns", "cpus": 1,
                "memory_mb": 512, "pids_limit": 256, "workspace_mb": 1024, "network": False,
                "read_only_rootfs": True, "env_keys": [], "default_workdir": "/workspace",
                "default_user": "sandbox", "created_at": "2026-01-01T00:00:00Z",
                "expires_at": "2026-01-01T01:00:00Z", "timeout_seconds": 3600,
                "idle_timeout_seconds": 0, "auto_pause": False, "auto_pause_keep_memory": True,
                "auto_resume": False, "allow_public_traffic": False,
                "mask_request_host": None, "paused_at": None, "paused_memory": None,
                "source_snapshot_id": None, "forked_from_snapshot_id": None,
                "last_rollback": None}
        ct = {"Content-Type": "application/json"}
        path = "/v1/sandboxes/sb_0123456789abcdef"
        self.assertEqual(openapi_check.check("GET", path, 200, ct, json.dumps(good)), [])
        for mutate in (lambda o: o.pop("status"), lambda o: o.update(colour="blue"),
                       lambda o: o.update(memory_mb="512"), lambda o: o.update(status="asleep"),
                       lambda o: o.update(default_user="nobody")):
            bad = copy.deepcopy(good)
            mutate(bad)
            self.assertNotEqual(openapi_check.check("GET", path, 200, ct, json.dumps(bad)), [],
                                bad)
        # An undocumented status, a wrong content type, an unknown route, a bad stream event.
        self.assertTrue(openapi_check.check("GET", path, 418, ct, json.dumps(good)))
        self.assertTrue(openapi_check.check("GET", path, 200, {"Content-Type": "text/plain"},
                                            json.dumps(good)))
        self.assertTrue(openapi_check.check("GET", "/v1/nowhere", 200, ct, "{}"))
        self.assertTrue(openapi_check.check_stream_event({"type": "exit", "exit_code": 0}))
        self.assertEqual(openapi_check.check_stream_event({"type": "stdout", "data": "x"}), [])
        # The harness hook turns problems into test failures.
        with self.assertRaises(AssertionError):
            openapi_check.enforce(["x"])
        del openapi_check.PROBLEMS[:]


class ServedTest(ServerTestCase):
    def test_served_document_is_the_source(self):
        r = self.server.request("GET", "/openapi.json")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), openapi_check.document())

    def test_real_answers_validate(self):
        s = self.server
        sb = self.create()
        sid = sb["id"]
        s.run(sid, "printf hi; printf oops >&2")
        _, status, events = s.stream(sid, {"command": "echo a; echo b >&2; exit 3"})
        self.assertEqual(status, 200)
        self.assertEqual(events[-1]["type"], "exit")
        self.assertEqual(s.put_file(sid, "d/f.txt", b"data", mode="600").status, 200)
        self.assertEqual(s.request("GET", "/v1/sandboxes/%s/files/list?path=d" % sid).status, 200)
        self.assertEqual(s.request("GET", "/v1/sandboxes/%s/files/stat?path=d/f.txt" % sid).status,
                         200)
        self.assertEqual(s.get_file(sid, "d/f.txt").body, b"data")
        r = s.request("POST", "/v1/sandboxes/%s/snapshots" % sid, {"name": "one"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(s.request("GET", "/v1/snapshots").status, 200)
        self.assertEqual(s.request("GET", "/v1/events").status, 200)
        self.assertEqual(s.request("GET", "/metrics").status, 200)
        self.assertEqual(s.request("GET", "/v1/sandboxes/sb_ffffffffffffffff").status, 404)
        self.assertEqual(openapi_check.PROBLEMS, [])


if __name__ == "__main__":
    main()
