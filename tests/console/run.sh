#!/bin/sh
# CTest entry of the web console's browser test (tests/CMakeLists.txt, e2e_console; ADR 0022):
# builds the console beside ASB_BIN (scripts/build-console.sh <dir of ASB_BIN>/console, where
# serve finds it), installs the pinned playwright-core (npm ci, only when node_modules is
# missing or older than package-lock.json), then drives Debian's chromium against the real
# server with node's test runner. Exit 77 (skipped) with a reason when node, npm or chromium
# is missing (and, with AGENT_SANDBOX_BACKEND=microvm, QEMU or the guest). Screenshots of
# every page go to <build>/console-screenshots/.
set -eu
cd "$(dirname "$0")"
command -v node >/dev/null 2>&1 || { echo "node not installed: skipped"; exit 77; }
command -v npm >/dev/null 2>&1 || { echo "npm not installed: skipped"; exit 77; }
# playwright-core needs Node.js 20 or later (Debian 12's own nodejs is 18).
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  { echo "node $(node --version) is older than 20 (playwright-core needs 20): skipped"; exit 77; }
CHROMIUM=${ASB_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$CHROMIUM" ] || { echo "chromium not installed (scripts/install-deps.sh): skipped"; exit 77; }
export ASB_CHROMIUM="$CHROMIUM"
if [ "${AGENT_SANDBOX_BACKEND:-}" = microvm ]; then  # every sandbox a microVM (ADR 0025)
  GUEST=${AGENT_SANDBOX_MICROVM_GUEST:-/var/lib/agent-sandbox/microvm}
  [ -x /usr/bin/qemu-system-x86_64 ] || { echo "qemu-system-x86 not installed: skipped"; exit 77; }
  [ -f "$GUEST/vmlinuz" ] || { echo "no microVM guest in $GUEST (scripts/microvm-guest.sh): skipped"; exit 77; }
  export AGENT_SANDBOX_MICROVM_GUEST="$GUEST"
fi
: "${ASB_BIN:?ASB_BIN must name the built agent-sandbox}"
bash ../../scripts/build-console.sh "$(dirname "$ASB_BIN")/console"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund
  touch node_modules
fi
exec node --test --test-reporter=spec --test-concurrency=1
