#!/usr/bin/env bash
# Runs every test of agent-sandbox: installs the Debian packages, configures a warnings-as-errors
# build, builds everything (benchmarks are built, never run), builds the base template (reused
# when its recipe is unchanged), then runs CTest: unit tests in parallel, tests labelled
# `privileged` (real sandboxes; they need root) one at a time. Tests that need something this
# host lacks (root, KVM, runsc) skip with a reason.
#
# Usage: bash scripts/test.sh [BUILD_DIR]      (default BUILD_DIR: build-ci; as root, or as a
#        user with sudo: it re-runs itself under sudo; ASB_NO_SUDO=1 runs it unprivileged)
# Env:   AGENT_SANDBOX_DATA_DIR (template location), ASB_JOBS (parallel jobs, default nproc),
#        ASB_CI_TEMPLATE (built beside base; default go, the quickest; python and node are
#        always built too: the code interpreter's tests run real kernels in them), ASB_TEMPLATES=all
#        (also build and smoke-test every bundled template: ctest -L templates, minutes),
#        ASB_SLOW=1 (also the suites labelled slow: the abuse, acceptance, code interpreter,
#        network, pause and custom template suites on microVMs, ~20 min), ASB_CTEST_ARGS (extra
#        ctest arguments, e.g. "-R cli").
# The last line is a summary: "test.sh: N passed, N failed, N skipped".
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${1:-build-ci}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$REPO_DIR/$BUILD_DIR"
JOBS=${ASB_JOBS:-$(nproc)}
cd "$REPO_DIR"
# The privileged tests need root: a user with sudo is re-run under it (keeping the ASB_* and
# AGENT_SANDBOX_* settings); without sudo the tests that need root skip and say so.
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null 2>&1 && [[ -z ${ASB_NO_SUDO:-} ]]; then
  exec sudo -E bash "$REPO_DIR/scripts/test.sh" "$@"
fi
started=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(($(date +%s) - started))" "$*"; }

step "dependencies"
bash scripts/install-deps.sh

# -g1 (functions and line tables: backtraces still name file and line) rather than -g: full
# debug info made the build a third slower (gcc 12, src/api/server.cc: 38 s against 26 s),
# and the build is CI's longest step.
step "configure $BUILD_DIR (RelWithDebInfo with -g1, -DASB_WERROR=ON)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASB_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DASB_BUILD_TESTS=ON -DASB_BUILD_BENCH=ON >/dev/null

step "build (-j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"

step "web console (scripts/build-console.sh $BUILD_DIR/bin/console)"
bash scripts/build-console.sh "$BUILD_DIR/bin/console" || [[ $? -eq 77 ]]  # 77: no node

step "templates: base, python, node and ${ASB_CI_TEMPLATE:=go}"
if [[ $(id -u) -eq 0 ]]; then
  # Incremental (0 s when the recipe is unchanged); mmdebstrap is retried once inside when the
  # mirror drops a connection. Every bundled template: ASB_TEMPLATES=all (label `templates`).
  ci_templates=(base python node)
  [[ " ${ci_templates[*]} " == *" $ASB_CI_TEMPLATE "* ]] || ci_templates+=("$ASB_CI_TEMPLATE")
  "$BUILD_DIR/bin/agent-sandbox" template build --from templates "${ci_templates[@]}"
else
  echo "not root: skipping the templates; privileged tests will skip"
fi

step "microVM guest (scripts/microvm-guest.sh: Debian's cloud kernel, busybox, our init)"
if [[ $(id -u) -eq 0 ]]; then
  # Reused while the kernel package and our init are unchanged. Without it (no archive access)
  # the microvm tests skip and say so; nothing else needs it.
  bash scripts/microvm-guest.sh "${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}/microvm" ||
    echo "microVM guest not prepared: the microvm tests will skip"
fi
export AGENT_SANDBOX_MICROVM_GUEST="${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}/microvm"

# The tests find the binaries and the template through these.
export AGENT_SANDBOX_BIN="$BUILD_DIR/bin/agent-sandbox"
export AGENT_SANDBOX_SANDBOXD="$BUILD_DIR/bin/sandboxd"
export AGENT_SANDBOX_DATA_DIR=${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}

junit_dir="$BUILD_DIR/test-results"
rm -rf "$junit_dir"
mkdir -p "$junit_dir"
rc=0
read -r -a extra <<<"${ASB_CTEST_ARGS:-}"
step "ctest: unit tests (-j$JOBS)"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 -j "$JOBS" -LE 'privileged|templates|slow' \
  --output-junit "$junit_dir/unit.xml" "${extra[@]}" || rc=1

step "fuzz smoke: scripts/fuzz.sh smoke (clang build of the fuzz targets only, ~8 s each)"
fuzz_rc=0
ASB_FUZZ_JUNIT="$junit_dir/fuzz.xml" ASB_JOBS="$JOBS" bash scripts/fuzz.sh smoke \
  "$BUILD_DIR-fuzz" || fuzz_rc=$?
((fuzz_rc == 0 || fuzz_rc == 77)) || rc=1

step "ctest: privileged tests (serial)"
ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 900 -L privileged \
  --output-junit "$junit_dir/privileged.xml" "${extra[@]}" || rc=1

if [[ ${ASB_SLOW:-} == 1 ]]; then
  step "ctest: slow suites (label slow: abuse, acceptance and code suites on microVMs, serial)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L slow \
    --output-junit "$junit_dir/slow.xml" "${extra[@]}" || rc=1
fi

if [[ ${ASB_TEMPLATES:-} == all ]]; then
  step "ctest: every bundled template (label templates)"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L templates \
    --output-junit "$junit_dir/templates.xml" || rc=1
fi

step "summary ($(($(date +%s) - started)) s)"
python3 - "$junit_dir" "$rc" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
passed = failed = skipped = 0
for path in glob.glob(sys.argv[1] + "/*.xml"):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        continue
    for case in root.iter("testcase"):
        status = case.get("status", "run")
        if case.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        elif case.find("failure") is not None or case.find("error") is not None or status == "fail":
            failed += 1
        else:
            passed += 1
if sys.argv[2] != "0" and failed == 0:
    failed = 1  # ctest itself failed (e.g. a test binary crashed during discovery)
print(f"test.sh: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit "$rc"
