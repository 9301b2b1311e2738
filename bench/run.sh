#!/bin/bash
# The benchmarks of the create path ("Performance, part 1"), one command: each row beside its
# yardstick from the same run (bubblewrap, a host spawn), the ratio, the goal and a verdict.
# Not part of CI. Needs root, the base template and bwrap (scripts/install-deps.sh).
#
#   sudo ASB_BIN=build/bin/agent-sandbox bash bench/run.sh [--runs 30] [--bursts 200,500]
#
# Arguments are passed to bench/bench_create.py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${ASB_BIN:=$here/../build/bin/agent-sandbox}"
export ASB_BIN
echo "bench/run.sh: $("$ASB_BIN" version 2>/dev/null | head -1), $(date -u +%FT%TZ)"
exec python3 "$here/bench_create.py" "$@"
