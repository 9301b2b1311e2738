#!/bin/bash
# bench_e2b.mjs with what it needs: the pinned e2b SDK (tests/e2b's npm ci), our TypeScript SDK
# built (sdk/typescript), and the server binary of BUILD_DIR (default build). Needs root, the
# base template and node >= 20. Usage: sudo bash bench/bench_e2b.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
export ASB_BIN=$build/bin/agent-sandbox
(cd "$root/tests/e2b" && { [ -d node_modules ] || npm ci --no-audit --no-fund; })
(cd "$root/sdk/typescript" && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run --silent build)
# bench/ resolves `e2b` from tests/e2b's node_modules (ES modules look in ./node_modules).
ln -sfn ../tests/e2b/node_modules "$root/bench/node_modules"
exec node "$root/bench/bench_e2b.mjs"
