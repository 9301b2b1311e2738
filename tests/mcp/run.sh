#!/bin/sh
# CTest entry of the MCP tests (tests/CMakeLists.txt, e2e_mcp): installs the pinned npm packages
# from package-lock.json (npm ci, only when node_modules is missing or older than the lockfile),
# then runs every *.test.mjs here with node's built-in test runner. Exit 77 (skipped) when node
# or npm is not installed. ASB_BIN must name the built agent-sandbox.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "node not installed: skipped"; exit 77; }
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  command -v npm >/dev/null 2>&1 || { echo "npm not installed: skipped"; exit 77; }
  npm ci --no-audit --no-fund
  touch node_modules
fi
exec node --test --test-reporter=spec
