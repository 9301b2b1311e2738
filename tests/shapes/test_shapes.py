#!/usr/bin/env python3
"""One definition per resource shape: api/openapi.json is the definition of the REST shapes, and
this fast, unprivileged test (CTest `shapes`, label unit) holds every other copy to it:

  * the JSON the handlers answer: the C++ api_shapes_test (src/api/shapes_test.cc) drives every
    documented route over the FakeBackend and records each answer and stream event; each one is
    validated here against its OpenAPI response schema (openapi_check.py of the e2e suite) with
    additionalProperties false wherever the document leaves it open, so a field the server
    sends and the document lacks fails, as does a documented required field it does not send;
    every documented success answer must have been produced (without root, the answers that
    need sandboxd are left out: sandboxd on the host drops to uid 1000, which needs root);
  * the MCP tools' inputSchema properties (src/mcp/tools*.cc, recorded by the same binary): each
    one is a field of the request schema, a path or query parameter of the REST operation the
    tool maps to (same type, enum and range), or listed below as the tool's own;
  * the SDKs' type files (sdk/python/agent_sandbox/types.py, sdk/typescript/src/types.ts): each
    type declares exactly the fields of the OpenAPI schema it mirrors, apart from the SDK-only
    and deliberately omitted fields listed below (these lists are checked too, so they cannot
    go stale).

Run directly: ASB_SHAPES_TEST=build/tests/api_shapes_test python3 tests/shapes/test_shapes.py
"""

import ast
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import openapi_check  # noqa: E402  (the e2e suite's validator, reused)

DOC = openapi_check.document()
SCHEMAS = DOC["components"]["schemas"]


def strict(doc):
    """`doc` with additionalProperties: false on every object schema that leaves it open."""
    doc = copy.deepcopy(doc)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc["components"])
    walk(doc["paths"])
    return doc


_samples = None
# Set when api_shapes_test could not run sandboxd (not root): its routes are not required then.
SANDBOXD_PART_SKIPPED = []
SANDBOXD_ROUTES = re.compile(r"/(exec|files|processes|archive|snapshots|rollback|contexts|code)"
                             r"(/|$)|"
                             r"^/v1/snapshots")


def samples():
    """The lines api_shapes_test wrote (answers, stream events, MCP tools), run once."""
    global _samples
    if _samples is None:
        binary = os.environ.get("ASB_SHAPES_TEST",
                                os.path.join(ROOT, "build", "tests", "api_shapes_test"))
        if not os.access(binary, os.X_OK):
            raise unittest.SkipTest("api_shapes_test not built at %s" % binary)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "shapes.ndjson")
            r = subprocess.run([binary], env=dict(os.environ, ASB_SHAPES_OUT=out),
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise AssertionError("api_shapes_test failed:\n" + r.stdout[-6000:] + r.stderr)
            if "[  SKIPPED ]" in r.stdout:
                if os.geteuid() == 0 or "needs root" not in r.stdout:
                    raise AssertionError("api_shapes_test skipped a part (is sandboxd built?):"
                                         "\n" + r.stdout[-3000:])
                SANDBOXD_PART_SKIPPED.append(True)
                sys.stderr.write("note: not root, so the answers that need sandboxd (exec, files, "
                                 "processes, snapshots) are not checked\n")
            with open(out, encoding="utf-8", errors="replace") as f:
                _samples = [json.loads(line) for line in f if line.strip()]
    return _samples


# ---- (a) the handlers' answers ------------------------------------------------------------------

# Documented routes whose answers this test does not produce, and why.
NOT_EXERCISED = {
    ("POST", "/mcp"): "JSON-RPC over Streamable HTTP: tests/mcp (e2e_mcp) drives it",
    ("GET", "/mcp"): "answers only errors",
    ("DELETE", "/mcp"): "ends an MCP session: tests/mcp",
    ("GET", "/v1/sandboxes/{id}/processes/{pid}/ws"): "a WebSocket upgrade (101)",
    ("PUT", "/v1/sandboxes/{id}/network"): "the FakeBackend has no networking to apply a policy "
                                           "to (503); GET answers the same NetworkPolicy shape",
    # The web console's static files are HTML/JS/CSS, not JSON shapes: the console's own tests
    # (api_test's console cases, tests/console in a real browser) serve and check them.
    ("GET", "/"): "the web console's index.html (tests/console, e2e_console)",
    ("GET", "/console"): "the web console's index.html (tests/console, e2e_console)",
    ("GET", "/console/{path}"): "the web console's assets (tests/console, e2e_console)",
    # Seed A's routes need a session's sandbox: tests/e2e/test_seed_a.py drives each against the
    # real server, and the harness checks every answer against this document.
    ("GET", "/exec"): "seed A: e2e_seed_a",
    ("GET", "/exec/templates"): "seed A: e2e_seed_a",
    ("POST", "/exec/{session}/execute"): "seed A: e2e_seed_a",
    ("POST", "/exec/{session}/write"): "seed A: e2e_seed_a",
    ("GET", "/exec/{session}/read"): "seed A: e2e_seed_a",
    ("GET", "/exec/{session}/files"): "seed A: e2e_seed_a",
    ("DELETE", "/exec/{session}"): "seed A: e2e_seed_a",
}


class AnswersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lines = samples()
        openapi_check.use_document(strict(DOC))

    @classmethod
    def tearDownClass(cls):
        openapi_check.use_document(DOC)

    def answers(self):
        return [s for s in self.lines if "method" in s]

    def test_every_answer_matches_its_strict_schema(self):
        problems = []
        for s in self.answers():
            problems += openapi_check.check(s["method"], s["path"], s["status"],
                                            {"Content-Type": s["content_type"]}, s["body"])
        self.assertEqual(problems, [])

    def test_every_stream_event_matches(self):
        kinds = {"exec": "StreamEvent", "process": "ProcessStreamEvent", "code": "CodeStreamEvent",
                 "watch": "FileWatchEvent"}
        seen = set()
        problems = []
        for s in self.lines:
            if "stream" in s:
                seen.add((s["stream"], s["event"].get("type")))
                schema = openapi_check.schema_of(kinds[s["stream"]])
                problems += ["%s event %r: %s" % (s["stream"], s["event"], p)
                             for p in openapi_check.validate_schema(schema, s["event"])]
        self.assertEqual(problems, [])
        if not SANDBOXD_PART_SKIPPED:
            for want in [("exec", "stdout"), ("exec", "exit"), ("exec", "keepalive"),
                         ("process", "exit"), ("code", "context"), ("code", "stdout"),
                         ("code", "stderr"), ("code", "end"), ("watch", "start"),
                         ("watch", "end")]:
                self.assertIn(want, seen)

    def test_every_documented_success_answer_is_exercised(self):
        got = set()
        for s in self.answers():
            template = openapi_check.match_route(s["path"])
            if template is not None:
                got.add((s["method"], template, s["status"]))
        missing = []
        for template, item in DOC["paths"].items():
            for method, op in item.items():
                if method == "parameters" or (method.upper(), template) in NOT_EXERCISED:
                    continue
                if "/ports/" in template:  # the ports proxy: any answer of the app
                    continue
                if SANDBOXD_PART_SKIPPED and SANDBOXD_ROUTES.search(template):
                    continue
                for status in op["responses"]:
                    if status.startswith("2") and not any(
                            g[:2] == (method.upper(), template) and str(g[2]) == status
                            for g in got):
                        missing.append("%s %s -> %s" % (method.upper(), template, status))
        self.assertEqual(missing, [], "documented answers src/api/shapes_test.cc never produced")


# ---- (b) the MCP tools --------------------------------------------------------------------------

# tool -> (METHOD, route template) of the REST operation it maps to, {argument: field of the
# request} where the names differ, and {argument: why it is the tool's own}.
MCP_TOOLS = {
    "sandbox_create": (("POST", "/v1/sandboxes"), {}, {}),
    "sandbox_list": (("GET", "/v1/sandboxes"), {}, {}),
    "sandbox_list_templates": (("GET", "/v1/templates"), {}, {}),
    "sandbox_exec": (("POST", "/v1/sandboxes/{id}/exec"), {"sandbox_id": "id"}, {}),
    "sandbox_read_file": (("GET", "/v1/sandboxes/{id}/files"), {"sandbox_id": "id"}, {}),
    "sandbox_write_file": (("PUT", "/v1/sandboxes/{id}/files"), {"sandbox_id": "id"}, {
        "content": "the request body", "encoding": "how content is encoded in the JSON-RPC call"}),
    "sandbox_list_files": (("GET", "/v1/sandboxes/{id}/files/list"), {"sandbox_id": "id"}, {}),
    "sandbox_watch_files": (("GET", "/v1/sandboxes/{id}/files/watch"), {"sandbox_id": "id"}, {
        "wait_seconds": "how long the tool watches before it answers (timeout_ms underneath)",
        "max_events": "how many changes make the tool answer early"}),
    "sandbox_snapshot": (("POST", "/v1/sandboxes/{id}/snapshots"), {"sandbox_id": "id"}, {}),
    "sandbox_rollback": (("POST", "/v1/sandboxes/{id}/rollback"), {"sandbox_id": "id"}, {}),
    "sandbox_fork": (("POST", "/v1/snapshots/{id}/fork"), {"snapshot_id": "id"}, {}),
    "sandbox_fork_running": (("POST", "/v1/sandboxes/{id}/fork"), {"sandbox_id": "id"}, {}),
    "sandbox_destroy": (("DELETE", "/v1/sandboxes/{id}"), {"sandbox_id": "id"}, {}),
    "sandbox_pause": (("POST", "/v1/sandboxes/{id}/pause"),
                      {"sandbox_id": "id", "keep_memory": "memory"}, {}),
    "sandbox_resume": (("POST", "/v1/sandboxes/{id}/resume"), {"sandbox_id": "id"}, {}),
    "sandbox_process_start": (("POST", "/v1/sandboxes/{id}/processes"), {"sandbox_id": "id"}, {}),
    "sandbox_process_list": (("GET", "/v1/sandboxes/{id}/processes"), {"sandbox_id": "id"}, {}),
    "sandbox_process_output": (("GET", "/v1/sandboxes/{id}/processes/{pid}/stream"),
                               {"sandbox_id": "id"}, {
        "tail_bytes": "how much of the replay the tool returns",
        "wait_seconds": "how long the tool waits for output before it answers"}),
    "sandbox_process_stdin": (("POST", "/v1/sandboxes/{id}/processes/{pid}/stdin"),
                              {"sandbox_id": "id"}, {
        "close": "also closes stdin (POST .../close-stdin)"}),
    "sandbox_process_signal": (("POST", "/v1/sandboxes/{id}/processes/{pid}/signal"),
                               {"sandbox_id": "id"}, {}),
    "sandbox_process_kill": (("DELETE", "/v1/sandboxes/{id}/processes/{pid}"),
                             {"sandbox_id": "id"}, {}),
    "sandbox_port_list": (None, {}, {"sandbox_id": "reads /proc/net in the sandbox"}),
    "sandbox_port_request": (("GET", "/v1/sandboxes/{id}/ports/{port}/{path}"),
                             {"sandbox_id": "id"}, {
        "method": "the HTTP method of the proxied request", "headers": "its headers",
        "body": "its body", "timeout": "the whole exchange's limit"}),
    "sandbox_run_code": (("POST", "/v1/sandboxes/{id}/exec"), {"sandbox_id": "id"}, {
        "language": "picks the interpreter the code runs under",
        "code": "the program text, run as a file"}),
    "sandbox_code_run": (("POST", "/v1/sandboxes/{id}/code"), {"sandbox_id": "id"}, {}),
    "sandbox_code_context_create": (("POST", "/v1/sandboxes/{id}/contexts"),
                                    {"sandbox_id": "id"}, {}),
    "sandbox_code_context_list": (("GET", "/v1/sandboxes/{id}/contexts"), {"sandbox_id": "id"}, {}),
    "sandbox_code_context_restart": (("POST", "/v1/sandboxes/{id}/contexts/{cid}/restart"),
                                     {"sandbox_id": "id", "context_id": "cid"}, {}),
    "sandbox_code_context_delete": (("DELETE", "/v1/sandboxes/{id}/contexts/{cid}"),
                                    {"sandbox_id": "id", "context_id": "cid"}, {}),
}


def _types(schema):
    """The JSON types a schema (or a oneOf of schemas) allows, as a set."""
    schema = openapi_check._resolve(schema)
    if "oneOf" in schema or "anyOf" in schema:
        out = set()
        for s in schema.get("oneOf", schema.get("anyOf")):
            out |= _types(s)
        return out
    t = schema.get("type")
    if t is None:
        return {"string"} if "enum" in schema or "const" in schema else set()
    return set(t) if isinstance(t, list) else {t}


def _operation_fields(method, template):
    """{name: schema} of the request body's properties and the operation's parameters."""
    item = DOC["paths"][template]
    op = item[method.lower()]
    fields = {}
    for p in item.get("parameters", []) + op.get("parameters", []):
        p = openapi_check._resolve(p)
        fields[p["name"]] = dict(p.get("schema", {}), **{"x-in": p["in"]})
    for media in op.get("requestBody", {}).get("content", {}).values():
        body = openapi_check._resolve(media.get("schema", {}))
        for name, s in body.get("properties", {}).items():
            fields[name] = s
    return fields


def _url_text_types(field):
    """The typed values a path or query parameter's text stands for: an integer where its
    pattern admits digits only, a boolean where its enum has "true" and "false"."""
    out = set()
    if "pattern" in field and re.search(field["pattern"], "1") and \
            not re.search(field["pattern"], "a"):
        out.add("integer")
    if {"true", "false"} <= set(field.get("enum", [])):
        out.add("boolean")
    return out


def _compatible(arg, field):
    """Problems of MCP argument schema `arg` against the OpenAPI field schema `field`: its types
    must be among the field's (an integer is a number; a path or query parameter's text may
    stand for an integer or a boolean, see _url_text_types), its enum within the field's (a
    tool may offer fewer values, never one the REST API refuses), and a bound both state must
    be the same."""
    field = openapi_check._resolve(field)
    a, f = _types(arg), _types(field)
    allowed = f | ({"integer"} if "number" in f else set())
    if "x-in" in field:
        allowed |= _url_text_types(field)
    problems = []
    if a and f and not a <= allowed:
        problems.append("type %s, OpenAPI %s" % (sorted(a), sorted(f)))
    for key in ("minimum", "maximum", "exclusiveMinimum", "maxLength"):
        if key in arg and key in field and arg[key] != field[key]:
            problems.append("%s %r, OpenAPI %r" % (key, arg[key], field[key]))
    if "enum" in arg and not set(arg["enum"]) <= set(field.get("enum", arg["enum"] if
                                                             "string" in f else [])):
        problems.append("enum %r, OpenAPI %r" % (arg["enum"], field.get("enum")))
    return problems


# tool -> the REST answer its structuredContent mirrors (a component schema, or the JSON answer
# of METHOD route status), and {output field: why it is the tool's own}.
MCP_OUTPUTS = {
    "sandbox_create": ("Sandbox", {}),
    "sandbox_list": ("SandboxList", {}),
    "sandbox_list_templates": ("TemplateList", {}),
    "sandbox_exec": ("ExecResult", {
        "stdout_bytes": "the tool cuts long output and gives the full size",
        "stderr_bytes": "the same for stderr"}),
    "sandbox_snapshot": ("Snapshot", {}),
    "sandbox_rollback": ("Sandbox", {}),
    "sandbox_pause": ("Sandbox", {}),
    "sandbox_resume": ("Sandbox", {}),
    "sandbox_fork": ("Sandbox", {}),
    "sandbox_fork_running": ("ForkResult", {}),
    "sandbox_list_files": ("FileList", {}),
    "sandbox_process_start": ("Process", {}),
    "sandbox_process_list": (("GET", "/v1/sandboxes/{id}/processes", "200"), {}),
    "sandbox_process_kill": ("Process", {}),
}


def _response_schema(spec):
    if isinstance(spec, str):
        return SCHEMAS[spec]
    method, template, status = spec
    resp = DOC["paths"][template][method.lower()]["responses"][status]
    return openapi_check._resolve(resp)["content"]["application/json"]["schema"]


def _output_problems(mcp, rest, where, own=()):
    """Problems of MCP output schema `mcp` against the REST schema `rest`, recursively."""
    rest = openapi_check._resolve(rest)
    if mcp.get("type") == "array" and "items" in mcp:
        return _output_problems(mcp["items"], rest.get("items", {}), where + "[]")
    problems = []
    rest_props = rest.get("properties", {})
    for name, sub in mcp.get("properties", {}).items():
        if name in own:
            continue
        if name not in rest_props:
            problems.append("%s.%s: not a field of the REST answer" % (where, name))
            continue
        problems += ["%s.%s: %s" % (where, name, p) for p in _compatible(sub, rest_props[name])]
        if sub.get("type") in ("object", "array"):
            problems += _output_problems(sub, rest_props[name], where + "." + name)
    return problems


class McpToolsTest(unittest.TestCase):
    def test_every_argument_is_a_field_of_its_operation(self):
        tools = next(s["mcp_tools"] for s in samples() if "mcp_tools" in s)
        names = {t["name"] for t in tools}
        self.assertEqual(sorted(names - set(MCP_TOOLS)), [], "tools missing from MCP_TOOLS")
        self.assertEqual(sorted(set(MCP_TOOLS) - names), [], "MCP_TOOLS names unknown tools")
        problems = []
        for t in tools:
            route, renames, own = MCP_TOOLS[t["name"]]
            if route and route[1] not in DOC["paths"]:
                problems.append("%s: %s %s is not in api/openapi.json" % (t["name"], *route))
                continue
            fields = _operation_fields(*route) if route else {}
            props = t["inputSchema"].get("properties", {})
            for stale in sorted(set(own) | set(renames)):
                if stale not in props:
                    problems.append("%s: MCP_TOOLS lists %s, which it does not take" %
                                    (t["name"], stale))
            for arg, schema in props.items():
                if arg in own:
                    continue
                field = renames.get(arg, arg)
                if field not in fields:
                    problems.append("%s.%s: not a field of %s %s" % (t["name"], arg, *route))
                    continue
                problems += ["%s.%s: %s" % (t["name"], arg, p)
                             for p in _compatible(schema, fields[field])]
        self.assertEqual(problems, [])

    def test_structured_results_mirror_the_rest_answers(self):
        tools = {t["name"]: t for t in next(s["mcp_tools"] for s in samples() if "mcp_tools" in s)}
        problems = []
        for name, (spec, own) in sorted(MCP_OUTPUTS.items()):
            out = tools[name].get("outputSchema", {})
            for stale in sorted(set(own) - set(out.get("properties", {}))):
                problems.append("%s: MCP_OUTPUTS lists %s, which it lacks" % (name, stale))
            problems += _output_problems(out, _response_schema(spec), name, own)
        self.assertEqual(problems, [])


# ---- (c) the SDKs' type files -------------------------------------------------------------------

def schema_fields(name):
    """Property names of components.schemas[name]; "Name#value" picks the oneOf branch whose
    type is that const/enum value."""
    name, _, branch = name.partition("#")
    s = SCHEMAS[name]
    if branch:
        for b in s["oneOf"]:
            t = b["properties"]["type"]
            if t.get("const") == branch or branch in t.get("enum", []):
                return set(b["properties"])
        raise KeyError(name + "#" + branch)
    return set(s["properties"])


def python_types():
    """{class name: field names} of the dataclasses (and their properties) in types.py."""
    path = os.path.join(ROOT, "sdk", "python", "agent_sandbox", "types.py")
    with open(path) as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            fields = set()
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    fields.add(item.target.id)
                elif isinstance(item, ast.FunctionDef) and any(
                        isinstance(d, ast.Name) and d.id == "property"
                        for d in item.decorator_list):
                    fields.add(item.name)
            out[node.name] = fields
            for base in node.bases:  # _NoExitFields' properties
                if isinstance(base, ast.Name) and base.id in out:
                    fields |= out[base.id]
    return out


def _snake(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def typescript_types():
    """{interface name: field names, snake_case} of types.ts and code.ts ("extends" merged)."""
    text = ""
    for name in ("types.ts", "code.ts"):
        with open(os.path.join(ROOT, "sdk", "typescript", "src", name)) as f:
            text += re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S) + "\n"
    text = re.sub(r"//[^\n]*", "", text)
    out, parents = {}, {}
    for m in re.finditer(r"export interface (\w+)(?: extends (\w+))?\s*\{(.*?)\n\}", text, re.S):
        depth, fields = 0, set()
        for line in m.group(3).splitlines():
            fm = re.match(r"\s*(\w+)\??\s*:", line)
            if fm and depth == 0:
                fields.add(_snake(fm.group(1)))
            depth += line.count("{") - line.count("}")
        out[m.group(1)] = fields
        if m.group(2):
            parents[m.group(1)] = m.group(2)
    for child, parent in parents.items():
        out[child] |= out[parent]
    return out


# sdk type -> (OpenAPI schema, {sdk field: wire field}, {sdk-only field: why},
#              {omitted wire field: why})
PYTHON_TYPES = {
    "ExecResult": ("ExecResult", {}, {"ok": "derived: exit 0, no timeout, no signal"}, {
        "encoding": "the SDK decodes base64 output itself"}),
    "ExitEvent": ("StreamEvent#exit", {}, {
        "ok": "derived", "data": "seed B's ExecEvent attribute, always empty"}, {}),
    "OutputEvent": ("StreamEvent#stdout", {"stream": "type"}, {
        "exit_code": "seed B's ExecEvent attribute, None", "timed_out": "seed B's, False",
        "duration_ms": "seed B's, None"}, {}),
    "ErrorEvent": ("StreamEvent#error", {}, {
        "data": "the message, as seed B's ExecEvent.data", "exit_code": "seed B's, None",
        "timed_out": "seed B's, False", "duration_ms": "seed B's, None"}, {}),
    "FileInfo": ("FileStat", {}, {"is_dir": "derived from type"}, {}),
    "FileEvent": ("FileWatchEvent", {}, {}, {
        "watches": "the start line's, kept on FileWatch", "reason": "the end line's, on FileWatch",
        "code": "an error line raises", "message": "an error line raises"}),
    "SnapshotInfo": ("Snapshot", {}, {}, {}),
    "PreviewInfo": ("Preview", {}, {}, {}),
    "SandboxInfo": ("Sandbox", {}, {"raw": "the server's whole JSON"}, {}),
    "TemplateInfo": ("Template", {}, {}, {
        "source": "how it was built; not part of the SDK's view"}),
    "ProcessInfo": ("Process", {}, {}, {}),
    "Context": ("CodeContext", {}, {}, {}),
    "ExecutionError": ("CodeError", {}, {}, {}),
    "Execution": ("Execution", {}, {
        "logs": "E2B's shape: the stdout and stderr pieces as they came",
        "main_result": "derived: the result with is_main_result", "ok": "derived: status ok",
        "text": "derived: the main result's text/plain"}, {}),
    "SkippedEvent": ("ProcessStreamEvent", {}, {}, {
        "type": "the class is the type", "data": "not a skipped event's", "exit_code": "same",
        "signal": "same", "code": "same", "message": "same"}),
}

TYPESCRIPT_TYPES = {
    "SandboxInfo": ("Sandbox", {}, {"raw": "the server's whole JSON"}, {}),
    "CreateOptions": ("CreateSandbox", {}, {"idempotency_key": "the Idempotency-Key header"}, {
        "network_policy": "set later with setNetworkPolicy()"}),
    "ForkOptions": ("Fork", {}, {}, {}),
    "ResumeOptions": ("ResumeSandbox", {"keep_memory": "memory"}, {}, {}),
    "PauseOptions": ("PauseSandbox", {"keep_memory": "memory"}, {}, {}),
    "ExecOptions": ("ExecRequest", {"args": "argv", "cwd": "workdir"}, {}, {
        "command": "exec()'s first argument", "timeout": "timeoutSeconds is the SDK's name",
        "encoding": "the SDK always asks for text"}),
    "ExitInfo": ("StreamEvent#exit", {}, {}, {"type": "ExecEvent adds it"}),
    "ExecResult": ("ExecResult", {}, {
        "ok": "derived", "output": "the interleaved chunks the SDK collects"}, {
        "encoding": "the SDK decodes base64 output itself"}),
    "FileInfo": ("FileStat", {}, {}, {}),
    "WriteResult": ("FileWritten", {}, {}, {}),
    "PreviewInfo": ("Preview", {}, {}, {}),
    "SnapshotInfo": ("Snapshot", {}, {}, {}),
    "ProcessInfo": ("Process", {}, {}, {}),
    "Context": ("CodeContext", {}, {}, {}),
    "ExecutionError": ("CodeError", {}, {}, {}),
    "Execution": ("Execution", {}, {
        "logs": "E2B's shape: the stdout and stderr pieces as they came",
        "ok": "derived: status ok", "text": "derived: the main result's text/plain"}, {}),
    "RunCodeOptions": ("CodeRequest", {}, {
        "context": "a Context or its id; the SDK sends context_id",
        "on_stdout": "callbacks: the SDK streams", "on_stderr": "same", "on_result": "same",
        "on_error": "same"}, {
        "code": "runCode()'s first argument", "language": "runCode()'s second argument",
        "context_id": "from context", "timeout_seconds": "timeout is the SDK's name"}),
    "StartProcessOptions": ("ProcessStartRequest", {"args": "argv", "cwd": "workdir"}, {}, {
        "command": "startProcess()'s first argument"}),
    "TemplateInfo": ("Template", {}, {}, {
        "source": "how it was built; not part of the SDK's view"}),
}


def sdk_problems(label, declared, table):
    problems = []
    for sdk_name, (schema, renames, sdk_only, omitted) in sorted(table.items()):
        if sdk_name not in declared:
            problems.append("%s %s: not found in the type file" % (label, sdk_name))
            continue
        fields = declared[sdk_name]
        wire = schema_fields(schema)
        mapped = {renames.get(f, f) for f in fields if f not in sdk_only}
        for f in sorted(mapped - wire):
            problems.append("%s %s.%s: not a field of %s" % (label, sdk_name, f, schema))
        for f in sorted(wire - mapped - set(omitted)):
            problems.append("%s %s: lacks %s of %s" % (label, sdk_name, f, schema))
        for f in sorted(set(sdk_only) - fields):
            problems.append("%s %s: lists SDK-only %s, which it lacks" % (label, sdk_name, f))
        for f in sorted(set(omitted) & mapped):
            problems.append("%s %s: lists %s as omitted, but declares it" % (label, sdk_name, f))
        for f in sorted(set(omitted) - wire):
            problems.append("%s %s: lists omitted %s, not in %s" % (label, sdk_name, f, schema))
    return problems


class SdkTypesTest(unittest.TestCase):
    def test_python_types_mirror_the_schemas(self):
        self.assertEqual(sdk_problems("python", python_types(), PYTHON_TYPES), [])

    def test_typescript_types_mirror_the_schemas(self):
        self.assertEqual(sdk_problems("typescript", typescript_types(), TYPESCRIPT_TYPES), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
