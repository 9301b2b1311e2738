#!/usr/bin/env python3
"""Fails when a file includes a header of a layer its folder may not use (docs/ARCHITECTURE.md,
"Layers"; ADR 0018). Two rules:

1. The layer table: every folder of src/ has a row whose "may use" cell names, in backticks,
   the folders (`core`), subfolders (`isolation/ns`) or single headers
   (`isolation/net/policy.h`) its files may include besides their own folder. Every folder of
   src/ must have a row; a direct include outside the row fails.
2. Above core: nothing in src/api/ or src/mcp/ may reach a header of src/protocol/ (sandboxd's
   wire types) or src/isolation/ (backends) even through the project headers it includes, but
   for isolation/net/policy.h, the egress policy value that core re-exports.

Tests (*_test.cc, testing/ folders, test harnesses) are exempt: they assemble a manager over a
backend. CTest runs this as `layer_check`.

Usage: python3 scripts/check-layers.py [--counts]   (--counts: print the include counts only)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
DOC = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
UPPER = ("api", "mcp")
FORBIDDEN = ("protocol/", "isolation/")
ALLOWED = {"isolation/net/policy.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`src/([\w/]+?)/?`\s*\|[^|]*\|([^|]*)\|\s*$", re.M)

_cache = {}


def read_table():
    """{folder: [allowed prefixes]} from the Layers table of docs/ARCHITECTURE.md."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    start = text.index("## Layers")
    end = text.index("\n## ", start + 1)
    table = {}
    for folder, cell in ROW.findall(text[start:end]):
        table[folder] = re.findall(r"`([\w./]+)`", cell)
    return table


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


def is_test(rel):
    parts = rel.split("/")
    name = parts[-1]
    return (name.endswith("_test.cc") or "testing" in parts[:-1] or "_harness." in name)


def source_files(folder):
    out = []
    for dirpath, _, names in os.walk(os.path.join(SRC, folder)):
        for n in sorted(names):
            if n.endswith((".cc", ".h", ".cc.in")):
                rel = os.path.relpath(os.path.join(dirpath, n), SRC)
                if not is_test(rel):
                    out.append(rel)
    return out


def permitted(inc, folder, allowed):
    if inc.startswith(folder + "/"):
        return True
    for a in allowed:
        if inc == a or inc.startswith(a.rstrip("/") + "/"):
            return True
    return False


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
    table = read_table()
    folders = sorted(d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)))
    errors = []
    for d in folders:
        if d not in table:
            errors.append(f"src/{d}/ has no row in the Layers table of docs/ARCHITECTURE.md")
    for d in table:
        if d not in folders:
            errors.append(f"the Layers table names src/{d}/, which does not exist")
    checked = 0
    for d in folders:
        for f in source_files(d):
            checked += 1
            for inc in includes(f):
                if not permitted(inc, d, table.get(d, [])):
                    errors.append(f"{f} includes {inc}: src/{d}/ may use {table.get(d, [])}")
    upper = [f for d in UPPER for f in source_files(d)]
    direct = sum(1 for f in upper for i in includes(f) if i.startswith(FORBIDDEN) and i not in ALLOWED)
    bad = [(f, c) for f in upper if (c := chain_to_forbidden(f))]
    if "--counts" in sys.argv:
        print(f"files in {'/, '.join(UPPER)}/: {len(upper)}; direct includes of protocol/ or "
              f"isolation/: {direct}; files reaching one: {len(bad)}")
        return 0
    for f, chain in bad:
        errors.append("reaches below core (use core's types: core/sandbox_types.h, "
                      "core/event_stream.h): " + " -> ".join(chain))
    if errors:
        print(f"check-layers: {len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print(f"check-layers: {checked} files of {len(folders)} folders keep to the Layers table; "
          f"{len(upper)} files of src/api and src/mcp stay above core/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
