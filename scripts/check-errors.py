#!/usr/bin/env python3
"""Fails when a log line or a CLI's print shows an asb::Error's message() instead of its detail
(docs/design/error-handling.md). An Error keeps two texts: message(), which a client may read,
and detail(), the operator's whole account. For a failed host call the message says only what
was being done and "a host operation failed"; the errno words and paths are in the detail. So
the server's log (spdlog) and the local CLI's stderr (whose reader is the operator) print
`e.ToString()` or `e.detail()`. boost's error_code (`ec.message()`) is not an asb::Error.
Tests and test doubles are exempt. CTest runs it as `error_check`.

Usage: python3 scripts/check-errors.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
# One statement that logs or prints to stderr and names x.message() or x.error().message().
PRINTED = re.compile(
    r"\b(?:spdlog::\w+|f?printf\s*\(\s*stderr|dprintf\s*\(\s*2)\s*\(?[^;]*?"
    r"\b(?!ec\b)(\w+)(?:\.error\(\))?\.message\(\)", re.S)


def main():
    found = []
    for dirpath, dirnames, filenames in os.walk(SRC):
        dirnames[:] = [d for d in dirnames if d != "testing"]
        for name in filenames:
            if not name.endswith(".cc") or name.endswith("_test.cc"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in PRINTED.finditer(text):
                line_no = text.count("\n", 0, m.start()) + 1
                found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), line_no,
                                            text.splitlines()[line_no - 1].strip()))
    if found:
        print("check-errors: a log line or stderr print shows an Error's message(), which hides "
              "a host call's detail from the operator; print ToString() or detail():")
        for f in found:
            print("  " + f)
        return 1
    print("check-errors: logs and CLI prints show Errors' details")
    return 0


if __name__ == "__main__":
    sys.exit(main())
