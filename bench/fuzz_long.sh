#!/usr/bin/env bash
# The long fuzz run (ADR 0014): every libFuzzer target (fuzz/) for at least a million
# inputs (ASB_FUZZ_RUNS, default 1000000), one after another, from the seed corpus plus what
# earlier long runs found (kept in BUILD_DIR/corpus/). Prints the table of scripts/fuzz.sh:
# inputs, executions per second, wall time, corpus size and peak RSS per target. Not run by CI
# (it takes tens of minutes on 2 cores; see bench/README.md for the last figures).
#
# Usage: bash bench/fuzz_long.sh [BUILD_DIR]     (default build-fuzz)
set -euo pipefail
REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec bash "$REPO_DIR/scripts/fuzz.sh" long "${1:-build-fuzz}"
