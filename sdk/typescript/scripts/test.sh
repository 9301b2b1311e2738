#!/usr/bin/env bash
# The TypeScript SDK's test step (npm test, and CTest's sdk_typescript): installs the pinned
# toolchain with `npm ci` (package-lock.json), builds dist/ with tsc, then runs `node --test`
# on the built output against a real server (scripts/with_server.py). Exits 77 (skipped) when
# the machine cannot run sandboxes (not root, no base template, no ASB_BIN).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rc=0
python3 scripts/with_server.py --check || rc=$?
if [[ $rc -ne 0 ]]; then exit "$rc"; fi
npm ci --no-audit --no-fund --prefer-offline
npm run build
exec python3 scripts/with_server.py -- node --test test/sdk.test.mjs
