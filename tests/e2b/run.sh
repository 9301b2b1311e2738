#!/bin/sh
# CTest entry of the E2B compatibility suite (tests/CMakeLists.txt, e2e_e2b; docs/e2b.md): the
# official `e2b` SDK, pinned in package-lock.json (npm ci, only when node_modules is missing or
# older than the lockfile), driven unmodified by node's test runner against the real server and
# real sandboxes. Exit 77 (skipped) with a reason when node or npm is missing.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "node not installed: skipped"; exit 77; }
command -v npm >/dev/null 2>&1 || { echo "npm not installed: skipped"; exit 77; }
# e2b 2.x needs Node.js 20 or later (Debian 12's own nodejs is 18).
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  { echo "node $(node --version) is older than 20 (the e2b SDK needs 20): skipped"; exit 77; }
: "${ASB_BIN:?ASB_BIN must name the built agent-sandbox}"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund
  touch node_modules
fi
exec node --test --test-reporter=spec --test-concurrency=1
