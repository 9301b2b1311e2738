"""Validates HTTP answers against api/openapi.json (the OpenAPI 3.1 document of the REST API),
the way Firecracker's tests validate against their swagger file: every response the e2e tests
receive goes through check() (harness.Server.request() calls it), so the document cannot drift
from the server.

  problems = check("GET", "/v1/sandboxes/sb_0123456789abcdef", 200, headers, body)

returns a list of strings, empty when the answer matches: the route and method must be in the
document, the status must be one of the operation's responses, the Content-Type must be the
documented one, and a JSON body must validate against the response schema (JSON Schema 2020-12,
python3-jsonschema). Answers to paths the document does not know are accepted only as the
router's own 404/405 (or the auth layer's 401) with a well-formed error body.

Set ASB_OPENAPI_CHECK=0 to switch the hook off.
"""

import json
import os
import re
import warnings
from urllib.parse import urlsplit

try:
    import jsonschema
except ImportError as e:  # pragma: no cover
    raise ImportError("tests/e2e need python3-jsonschema (scripts/install-deps.sh): %s" % e)

DOC_PATH = os.environ.get(
    "ASB_OPENAPI",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "api", "openapi.json"))

ENABLED = os.environ.get("ASB_OPENAPI_CHECK", "1") != "0"

# Seed A's compatibility routes (ADR 0007) are in the document, in seed A's shapes (tag "seed
# A"); only /exec/, the list's alias with a trailing slash, has no entry of its own.
UNDOCUMENTED_PATHS = ("/exec/",)

# Every problem check() found in this process, for a summary at exit.
PROBLEMS = []

_doc = None
_routes = None


def document():
    global _doc
    if _doc is None:
        with open(DOC_PATH) as f:
            _doc = json.load(f)
    return _doc


def use_document(doc):
    """Validates against `doc` from now on (a stricter copy, in tests/shapes/test_shapes.py)."""
    global _doc, _routes
    _doc, _routes = doc, None


def _compiled_routes():
    """[(regex, template)], literal segments before templated ones so /a/b beats /a/{id}."""
    global _routes
    if _routes is None:
        out = []
        for template in document()["paths"]:
            rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            if template.endswith("/{path}"):  # the ports proxy: the rest of the path, any depth
                rx = rx[:-len("[^/]+$")] + ".*$"
            out.append((re.compile(rx), template))
        out.sort(key=lambda r: r[1].count("{"))
        _routes = out
    return _routes


def match_route(path):
    """The document's route template for a concrete path (query ignored), or None."""
    path = urlsplit(path).path
    for rx, template in _compiled_routes():
        if rx.match(path):
            return template
    return None


def _validator(schema):
    # RefResolver works in Debian 12's jsonschema 4.10 and, deprecated, in later ones.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = jsonschema.RefResolver(base_uri="", referrer=document())
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def validate_schema(schema, value):
    """Problems (strings) of value against a schema of the document (may hold $refs)."""
    return ["%s at %s" % (e.message, "/".join(str(p) for p in e.absolute_path) or "(root)")
            for e in _validator(schema).iter_errors(value)]


def schema_of(name):
    return document()["components"]["schemas"][name]


def _resolve(obj):
    while isinstance(obj, dict) and "$ref" in obj:
        node = document()
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def _media(content_type):
    return (content_type or "").split(";")[0].strip().lower()


def check_response(method, template, status, content_type, body):
    """Problems of one answer to `method template` (a route template of the document)."""
    where = "%s %s -> %d" % (method, template, status)
    item = document()["paths"].get(template)
    if item is None:
        return ["%s: route not in the OpenAPI document" % where]
    op = item.get(method.lower())
    if op is None:
        return ["%s: method not in the OpenAPI document" % where]
    resp = op["responses"].get(str(status)) or op["responses"].get("default")
    if resp is None:
        return ["%s: status not documented (has %s)" % (where, sorted(op["responses"]))]
    resp = _resolve(resp)
    content = resp.get("content")
    if not content:
        if body:
            return ["%s: documented without a body, got %d bytes" % (where, len(body))]
        return []
    media = _media(content_type)
    if "*/*" in content:  # a proxied answer (exposed ports): any media type
        return []
    if media not in content:
        return ["%s: Content-Type %r, documented %s" % (where, content_type, sorted(content))]
    if media != "application/json":
        return []
    try:
        value = json.loads(body)
    except ValueError as e:
        return ["%s: body is not JSON (%s): %r" % (where, e, body[:200])]
    return ["%s: %s" % (where, p) for p in validate_schema(content[media]["schema"], value)]


def check(method, path, status, headers, body):
    """Problems of one answer to `method path` (a concrete path, query allowed)."""
    if urlsplit(path).path in UNDOCUMENTED_PATHS:
        return []
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    ctype = headers.get("content-type", "")
    template = match_route(path)
    if template is None or method.lower() not in document()["paths"][template]:
        # The router's own "no such route"/"method not allowed", or auth refusing first.
        if status in (401, 404, 405) and _media(ctype) == "application/json":
            try:
                value = json.loads(body)
            except ValueError:
                value = None
            if value is not None and not validate_schema(schema_of("Error"), value):
                return []
        problems = ["%s %s -> %d: route not in the OpenAPI document" % (method, path, status)]
    else:
        problems = check_response(method, template, status, ctype, body)
    PROBLEMS.extend(problems)
    return problems


def check_stream_event(event, schema="StreamEvent"):
    """Problems of one parsed NDJSON line of /exec/stream (or of a stream of `schema`)."""
    problems = ["stream event %r: %s" % (event, p)
                for p in validate_schema(schema_of(schema), event)]
    PROBLEMS.extend(problems)
    return problems


def enforce(problems):
    """Raises AssertionError naming the problems (the harness calls this on every answer)."""
    if problems:
        raise AssertionError("response does not match api/openapi.json:\n  " +
                             "\n  ".join(problems))
