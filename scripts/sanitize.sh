#!/usr/bin/env bash
# The sanitizer suite (ADR 0014): builds the product and its tests with the `asan`
# preset (ASan + UBSan, Debug, build dir build-asan), then runs the unit tests and the
# privileged/e2e suites (real sandboxes; needs root, skipped otherwise) with every host-side
# binary sanitized: agent-sandbox, the test programs, and sandboxd where it runs on the host
# (sandboxd_test, core_test and api_handlers_test start it outside any sandbox).
#
# Inside a real sandbox, sandboxd must be the static production binary: the sanitizer runtimes
# are shared libraries that a template's rootfs does not have (and ASan cannot be linked
# statically), so the ns backend is pointed at a static sandboxd built from the same sources in
# BUILD_DIR-static (only that target). See docs/adr/0014-adversarial-suite.md.
#
# Any ASan/LSan/UBSan report fails the run: halt_on_error=1 for both, and a summary line of
# every report found in the logs is printed at the end.
#
# Usage: sudo bash scripts/sanitize.sh [BUILD_DIR]     (default build-asan). Not run by CI: it
#        is a second full build (Debug, sanitized: the larger part of its time) and every suite
#        runs several times slower under ASan; it prints its build and test times at the end.
# Env: ASB_JOBS (build jobs, default nproc), ASB_CTEST_ARGS (extra ctest arguments, e.g.
#      "-R api"), ASB_SANITIZE_SKIP_PRIVILEGED=1 (unit tests only).
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build-asan}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$REPO_DIR/$BUILD_DIR"
STATIC_DIR="$BUILD_DIR-static"
JOBS=${ASB_JOBS:-$(nproc)}
cd "$REPO_DIR"
started=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(($(date +%s) - started))" "$*"; }

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

step "configure $BUILD_DIR (preset asan: Debug, -fsanitize=address,undefined)"
cmake --preset asan -B "$BUILD_DIR" -DASB_BUILD_TESTS=ON "${launcher[@]}" >/dev/null
step "build (-j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"
step "static sandboxd for real sandboxes ($STATIC_DIR)"
cmake -S . -B "$STATIC_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASB_BUILD_TESTS=OFF \
  -DASB_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$STATIC_DIR" -j "$JOBS" --target sandboxd
built=$(date +%s)

logs="$BUILD_DIR/sanitize-logs"
rm -rf "$logs"
mkdir -p "$logs"
chmod 1777 "$logs"  # sandboxd reports while its fs identity is the sandbox user's
# log_path: every report also lands in a file, whichever process (server, sandboxd) made it.
# quarantine_size_mb: ASan holds freed memory back (256 MiB by default) to catch use after free;
# 64 MiB still covers every test's working set and keeps the e2e RSS bounds (tests/e2e/
# test_abuse.py) about the product rather than the quarantine.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:quarantine_size_mb=64"
ASAN_OPTIONS+=":log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
export AGENT_SANDBOX_BIN="$BUILD_DIR/bin/agent-sandbox"
export AGENT_SANDBOX_DATA_DIR=${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}
# Real sandboxes get the static sandboxd (the ns tests read ASB_SANDBOXD, the server
# AGENT_SANDBOX_SANDBOXD).
export ASB_SANDBOXD="$STATIC_DIR/bin/sandboxd"
export AGENT_SANDBOX_SANDBOXD="$STATIC_DIR/bin/sandboxd"

rc=0
read -r -a extra <<<"${ASB_CTEST_ARGS:-}"
step "ctest: unit tests, sanitized (-j$JOBS)"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -j "$JOBS" -LE 'privileged|templates' \
  --output-junit "$logs/unit.xml" "${extra[@]}" || rc=1
unit_done=$(date +%s)
if [[ ${ASB_SANITIZE_SKIP_PRIVILEGED:-0} != 1 ]]; then
  step "ctest: privileged and e2e tests, sanitized server (serial)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 1800 -L privileged \
    --output-junit "$logs/privileged.xml" "${extra[@]}" || rc=1
fi

step "sanitizer reports"
reports=$(cat "$logs"/asan.* "$logs"/ubsan.* 2>/dev/null | grep -E '^(SUMMARY|ERROR): |: runtime error: ' || true)
if [[ -n $reports ]]; then
  echo "$reports" | sort | uniq -c
  echo "full reports: $logs/asan.* $logs/ubsan.*"
  rc=1
else
  echo "none"
fi
python3 - "$logs" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
counts = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.xml")):
    p = f = s = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            s += 1
        elif case.find("failure") is not None or case.find("error") is not None:
            f += 1
        else:
            p += 1
    print(f"{path.rsplit('/', 1)[1]}: {p} passed, {f} failed, {s} skipped")
PY
echo "sanitize.sh: build $((built - started)) s, unit tests $((unit_done - built)) s," \
  "total $(($(date +%s) - started)) s; $([[ $rc == 0 ]] && echo clean || echo FAILED)"
exit "$rc"
