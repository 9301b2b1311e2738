#!/usr/bin/env python3
"""Fails when a layer reaches below the layer it may use (docs/ARCHITECTURE.md, "Layers";
ADR 0018): nothing in src/api/ or src/mcp/ may include, directly or through the project headers
it includes, a header of src/protocol/ (sandboxd's wire types) or src/isolation/ (backends).
Tests (*_test.cc) are exempt: they assemble a manager over a backend. The one exception is isolation/net/policy.h, the egress policy value that core re-exports as
core::NetworkPolicy. CTest runs it as `layer_check`.

Usage: python3 scripts/check-layers.py [--counts]   (--counts: print the include counts only)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
UPPER = ("api", "mcp")
FORBIDDEN = ("protocol/", "isolation/")
ALLOWED = {"isolation/net/policy.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

_cache = {}


def includes(rel):
    """The project headers `rel` (a path under src/) includes directly."""
    if rel not in _cache:
        try:
            with open(os.path.join(SRC, rel), encoding="utf-8") as f:
                text = f.read()
        except OSError:
            text = ""
        _cache[rel] = [i for i in INCLUDE.findall(text) if os.path.exists(os.path.join(SRC, i))]
    return _cache[rel]


def chain_to_forbidden(rel):
    """A shortest include chain from `rel` to a forbidden header, or None."""
    seen = {rel}
    frontier = [[rel]]
    while frontier:
        nxt = []
        for path in frontier:
            for inc in includes(path[-1]):
                if inc in seen:
                    continue
                seen.add(inc)
                if inc.startswith(FORBIDDEN) and inc not in ALLOWED:
                    return path + [inc]
                nxt.append(path + [inc])
        frontier = nxt
    return None


def main():
    files = []
    for layer in UPPER:
        for dirpath, _, names in os.walk(os.path.join(SRC, layer)):
            for n in sorted(names):
                if n.endswith((".cc", ".h", ".cc.in")) and not n.endswith("_test.cc"):
                    files.append(os.path.relpath(os.path.join(dirpath, n), SRC))
    direct = sum(1 for f in files for i in includes(f) if i.startswith(FORBIDDEN) and i not in ALLOWED)
    bad = [(f, c) for f in files if (c := chain_to_forbidden(f))]
    if "--counts" in sys.argv:
        print(f"files in {'/, '.join(UPPER)}/: {len(files)}; direct includes of protocol/ or "
              f"isolation/: {direct}; files reaching one: {len(bad)}")
        return 0
    if bad:
        print(f"check-layers: {len(bad)} file(s) of src/api or src/mcp reach protocol/ or "
              "isolation/ (use core's types: core/sandbox_types.h, core/event_stream.h):",
              file=sys.stderr)
        for f, chain in bad:
            print("  " + " -> ".join(chain), file=sys.stderr)
        return 1
    print(f"check-layers: {len(files)} files of src/api and src/mcp stay above core/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
