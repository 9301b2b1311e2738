#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, ADR 0014) with clang in their own build
# directory — only them and the libraries they need, instrumented with
# -fsanitize=fuzzer-no-link,address,undefined — and runs each one from its seed corpus
# (fuzz/corpus/<target>/; new inputs go to BUILD_DIR/corpus/<target>/, never into the repo).
#
# Usage: bash scripts/fuzz.sh [smoke|long|build] [BUILD_DIR]     (default: smoke build-fuzz)
#   smoke  each target for ASB_FUZZ_SECONDS seconds (default 8): scripts/test.sh runs this
#   long   each target for ASB_FUZZ_RUNS inputs (default 1000000): bench/fuzz_long.sh
#   build  configure and build only
# Env: ASB_FUZZ_TARGETS (space-separated subset), ASB_FUZZ_JUNIT (write a JUnit file there),
#      ASB_JOBS (build jobs, default nproc).
# Prints one table row per target (target, expected, seen). Exit status: 0 every target ran
# clean; 1 a target crashed, hung, leaked or tripped a sanitizer (its reproducer is saved in
# BUILD_DIR/artifacts/<target>/ and named in the table; the crash is fixed in the product and
# the input added to fuzz/corpus/<target>/); 77 clang or libFuzzer is missing (skipped).
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=${1:-smoke}
BUILD_DIR=${2:-build-fuzz}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$REPO_DIR/$BUILD_DIR"
JOBS=${ASB_JOBS:-$(nproc)}
TARGETS=(${ASB_FUZZ_TARGETS:-fuzz_frame fuzz_messages fuzz_url fuzz_api_bodies fuzz_http fuzz_e2b})
JUNIT=${ASB_FUZZ_JUNIT:-}

write_junit() {  # write_junit <skipped-reason or ""> <rows "name|ok|message", one a line>
  [[ -n $JUNIT ]] || return 0
  python3 - "$JUNIT" "$1" "$2" <<'PY'
import sys
from xml.sax.saxutils import escape, quoteattr
path, skip = sys.argv[1], sys.argv[2]
rows = [l.split("|", 2) for l in sys.argv[3].splitlines() if l.strip()]
out = ['<?xml version="1.0" encoding="UTF-8"?>', '<testsuite name="fuzz">']
for name, ok, msg in rows:
    out.append(f'  <testcase classname="fuzz" name={quoteattr(name)}>')
    if skip:
        out.append(f'    <skipped message={quoteattr(skip)}/>')
    elif ok != "1":
        out.append(f'    <failure message={quoteattr(msg)}>{escape(msg)}</failure>')
    out.append('  </testcase>')
out.append('</testsuite>')
open(path, "w").write("\n".join(out) + "\n")
PY
}

skip() {
  echo "fuzz.sh: SKIPPED: $1"
  write_junit "$1" "$(printf '%s|0|\n' "${TARGETS[@]}")"
  exit 77
}

case $MODE in
  smoke | long | build) ;;
  *) echo "usage: bash scripts/fuzz.sh [smoke|long|build] [BUILD_DIR]" >&2; exit 2 ;;
esac

CLANGXX=$(command -v clang++ || command -v clang++-14 || true)
CLANG=$(command -v clang || command -v clang-14 || true)
[[ -n $CLANGXX && -n $CLANG ]] || skip "clang is not installed (scripts/install-deps.sh installs clang)"
if ! ls "$("$CLANG" -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  skip "libFuzzer is not installed (libclang-rt-14-dev)"
fi

started=$(date +%s)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$REPO_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="$CLANGXX" -DASB_FUZZ=ON \
  -DASB_BUILD_TESTS=OFF -DASB_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}"
built=$(date +%s)
echo "fuzz.sh: built ${#TARGETS[@]} targets in $((built - started)) s"
[[ $MODE == build ]] && exit 0

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rows=()
junit_rows=""
failed=0
for t in "${TARGETS[@]}"; do
  work="$BUILD_DIR/corpus/$t"
  art="$BUILD_DIR/artifacts/$t/"
  log="$BUILD_DIR/logs/$t.log"
  mkdir -p "$work" "$art" "$(dirname "$log")"
  args=(-timeout=10 -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$art")
  if [[ $MODE == smoke ]]; then
    args+=(-max_total_time="${ASB_FUZZ_SECONDS:-8}")
  else
    args+=(-runs="${ASB_FUZZ_RUNS:-1000000}")
  fi
  t0=$(date +%s)
  rc=0
  (cd "$BUILD_DIR" && "$BUILD_DIR/fuzz/$t" "${args[@]}" "$work" "$REPO_DIR/fuzz/corpus/$t") \
    >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - t0))
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  runs=$(stat number_of_executed_units)
  eps=$(stat average_exec_per_sec)
  rss=$(stat peak_rss_mb)
  if ((rc == 0)); then
    seen="clean: ${runs:-?} inputs in ${secs} s (${eps:-?}/s), corpus $(ls "$work" | wc -l), peak RSS ${rss:-?} MB"
    junit_rows+="$t|1|$seen"$'\n'
  else
    failed=1
    crash=$(ls -t "$art" 2>/dev/null | head -1)
    why=$(grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|fuzz invariant' "$log" || true)
    seen="FAILED (exit $rc) after ${runs:-?} inputs: ${why:-see $log}; reproducer ${art}${crash}"
    junit_rows+="$t|0|$seen"$'\n'
    echo "---- $t: tail of $log"
    tail -40 "$log"
  fi
  rows+=("$t|no crash, hang, leak or sanitizer report|$seen")
done

printf '\n%-16s | %-40s | %s\n' "target" "expected" "seen"
printf '%s\n' "-----------------+------------------------------------------+------------------------"
for r in "${rows[@]}"; do
  IFS='|' read -r a b c <<<"$r"
  printf '%-16s | %-40s | %s\n' "$a" "$b" "$c"
done
echo "fuzz.sh: $MODE run of ${#TARGETS[@]} targets, build $((built - started)) s, total $(($(date +%s) - started)) s"
write_junit "" "$junit_rows"
exit "$failed"
