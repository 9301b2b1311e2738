#!/usr/bin/env bash
# Builds the web console (web/, ADR 0022) into OUTDIR (the server serves <dir of its binary>/
# console by default, so scripts/setup.sh and scripts/test.sh pass <build>/bin/console):
# npm ci when web/node_modules is missing or older than package-lock.json, then a type check
# and `vite build`. Skips the build when OUTDIR/index.html is newer than every source file.
# Node.js is needed only here, never at run time.
#
# Usage: bash scripts/build-console.sh OUTDIR
# Exit: 0 built (or up to date); 1 failed; 77 node or npm missing (nothing built).
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 1; }
REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$REPO_DIR/web"
command -v node >/dev/null 2>&1 || { echo "build-console: node not installed: skipped" >&2; exit 77; }
command -v npm >/dev/null 2>&1 || { echo "build-console: npm not installed: skipped" >&2; exit 77; }

if [[ -f "$OUT/index.html" ]] &&
  [[ -z $(find src index.html vite.config.ts tsconfig.json package.json package-lock.json \
    -newer "$OUT/index.html" -print -quit) ]]; then
  echo "build-console: $OUT is up to date"
  exit 0
fi
if [[ ! -d node_modules ]] || [[ package-lock.json -nt node_modules ]]; then
  npm ci --no-audit --no-fund
  touch node_modules
fi
npx --no-install tsc --noEmit -p .
ASB_CONSOLE_OUT="$OUT" npx --no-install vite build --logLevel warn
echo "build-console: built into $OUT"
