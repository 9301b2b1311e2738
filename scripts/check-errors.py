#!/usr/bin/env python3
"""Fails when code re-makes an asb::Error out of another one's message (docs/design/
error-handling.md): `Error(code, e.message(), ...)` drops the mark of a failed host call, and
with it the rule that its host text (paths, errno words) never reaches a client. Re-code with
`std::move(e).WithCode(c)`, add context with `WithContext`; where the source is known not to be
a host call (a protocol error of sandboxd's, a parse error), say so in the 4 lines above with a
comment containing "not a host call". Tests and test doubles are exempt. CTest runs it as
`error_check`.

Usage: python3 scripts/check-errors.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
# Error(<code>, ... x.message() ...) or Error(<code>, ... x.error().message() ...) within one
# statement; boost's error_code (`ec.message()`) is not an asb::Error.
REMADE = re.compile(
    r"\bError\(\s*(?:ErrorCode::\w+|[\w.()]+\.code\(\))\s*,[^;]*?"
    r"\b(?!ec\b)(\w+)(?:\.error\(\))?\.message\(\)", re.S)
WAIVER = "not a host call"


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
            for m in REMADE.finditer(text):
                line_no = text.count("\n", 0, m.start()) + 1
                lines = text.splitlines()
                before = "\n".join(lines[max(0, line_no - 5):line_no])  # the 4 lines above too
                if WAIVER in before:
                    continue
                found.append("%s:%d: %s" % (os.path.relpath(path, ROOT), line_no,
                                            lines[line_no - 1].strip()))
    if found:
        print("check-errors: an Error re-made from another's message() drops the host-call "
              "mark; use WithCode/WithContext, or say why it is \"%s\":" % WAIVER)
        for f in found:
            print("  " + f)
        return 1
    print("check-errors: no Error re-made from another's message() outside tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
