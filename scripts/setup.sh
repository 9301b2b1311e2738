#!/usr/bin/env bash
# Sets agent-sandbox up on this Debian 12 host and runs the main job:
#   1. installs the Debian packages it needs (scripts/install-deps.sh),
#   2. configures a Release build in build/ and builds it with Ninja,
#   3. builds the web console (scripts/build-console.sh) and installs agent-sandbox and sandboxd
#      to /usr/local/bin, the console to /usr/local/share/agent-sandbox/console (cmake --install),
#   4. builds the base template into the data directory (scripts/build-template.sh base),
#   5. runs the demo (scripts/demo.sh).
#
# Usage: bash scripts/setup.sh   (as root, or as a user with sudo: it re-runs itself under sudo)
# Env:   AGENT_SANDBOX_DATA_DIR (default /var/lib/agent-sandbox), ASB_JOBS (default nproc),
#        ASB_PREFIX (install prefix, default /usr/local), ASB_BUILD_DIR (default build/).
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ASB_BUILD_DIR:-$REPO_DIR/build}
JOBS=${ASB_JOBS:-$(nproc)}
PREFIX=${ASB_PREFIX:-/usr/local}
cd "$REPO_DIR"
started=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(($(date +%s) - started))" "$*"; }

# Root is needed (packages, namespaces, cgroups, loop devices): a user with sudo is re-run
# under it, keeping the ASB_* and AGENT_SANDBOX_* settings above.
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo -E bash "$REPO_DIR/scripts/setup.sh" "$@"
  fi
  echo "setup.sh: run as root, or as a user with sudo: sandboxes need namespaces, cgroups" \
    "and loop devices" >&2
  exit 1
fi

step "dependencies"
bash scripts/install-deps.sh

step "configure $BUILD_DIR (Release)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DASB_BUILD_TESTS=OFF -DASB_BUILD_BENCH=OFF >/dev/null

step "build (-j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"

step "web console (scripts/build-console.sh $BUILD_DIR/bin/console)"
# Optional: without Node.js the server runs and its console routes answer 503.
bash scripts/build-console.sh "$BUILD_DIR/bin/console" || [[ $? -eq 77 ]]

step "install to $PREFIX/bin"
cmake --install "$BUILD_DIR" | grep -v '^-- Up-to-date' || true

step "base template"
# One retry: the mirror may drop a connection now and then.
bash scripts/build-template.sh base || { sleep 5; bash scripts/build-template.sh base; }

step "demo"
PATH="$PREFIX/bin:$PATH" bash scripts/demo.sh
