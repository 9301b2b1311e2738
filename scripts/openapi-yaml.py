#!/usr/bin/env python3
"""Writes api/openapi.yaml, the YAML twin of api/openapi.json (the source of truth: the server
embeds the JSON at build time, see src/api/openapi.h). Run after editing the JSON:

  python3 scripts/openapi-yaml.py          # rewrite api/openapi.yaml
  python3 scripts/openapi-yaml.py --check  # exit 1 if api/openapi.yaml is stale

Needs python3-yaml (scripts/install-deps.sh).
"""
import json
import os
import sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "api", "openapi.json")
DST = os.path.join(ROOT, "api", "openapi.yaml")


def render():
    with open(SRC) as f:
        doc = json.load(f)
    head = "# Generated from api/openapi.json by scripts/openapi-yaml.py; do not edit.\n"
    return head + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def main():
    text = render()
    if "--check" in sys.argv[1:]:
        with open(DST) as f:
            if f.read() != text:
                print("api/openapi.yaml is stale: run scripts/openapi-yaml.py", file=sys.stderr)
                return 1
        return 0
    with open(DST, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
