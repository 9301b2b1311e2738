#!/usr/bin/env bash
# The long run of the crash harness (ADR 0014): 100 SIGKILLs of the real
# server at random points of create, snapshot, rollback, fork and destroy, each followed by a
# restart and the checks of tests/e2e/crash_harness.py (no record lost or half-made; no state
# dir, mount, loop device, cgroup or process leaked). Not run by CI (e2e_crash runs 5 kills).
# Prints one line per kill and the figures: restart time to /healthz (median, max), how many
# kills cut an operation short, the seed (ASB_CRASH_SEED replays it).
#
# Usage: sudo bash bench/crash_long.sh [BUILD_DIR] [KILLS]     (defaults: build 100)
set -euo pipefail
REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$REPO_DIR/$BUILD_DIR"
seed=${ASB_CRASH_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
ASB_BIN="$BUILD_DIR/bin/agent-sandbox" exec python3 "$REPO_DIR/tests/e2e/crash_harness.py" \
  --kills "${2:-100}" --seed "$seed"
