#!/usr/bin/env bash
# The whole adversarial suite (ADR 0014) in one command, as root on a host with the
# base template, over an existing build:
#   escapes  tests/adversarial (probe.c from inside real sandboxes, races, shell one-liners)
#   abuse    tests/e2e/test_abuse.py (bombs, floods, storms, argv limit; and a client with no
#            key against the HTTP layer: log injection, slow-loris, dripped heads; real server)
#   crash    tests/e2e/crash_harness.py, 5 SIGKILLs (--long: 100), seed printed
#   fuzz     scripts/fuzz.sh smoke (libFuzzer targets, 12 s each), when that script exists
#   sanitize scripts/sanitize.sh: the unit, privileged and e2e suites built with ASan + UBSan
#            (a second, Debug build in BUILD_DIR-asan: the longest part; skip it with
#            ASB_ADV_SKIP=sanitize when only the product changed)
# and prints ONE table (attempt, expected, seen) of every row of them all, then a summary.
#
# Usage: sudo bash scripts/adversarial.sh [--long] [BUILD_DIR]      (default BUILD_DIR: build)
#   The build needs agent-sandbox, sandboxd, adversarial_test and asb_adv_probe:
#   cmake --build BUILD_DIR --target agent-sandbox sandboxd adversarial_test asb_adv_probe
# Env: ASB_CRASH_SEED (replay a crash schedule), ASB_ADV_SKIP (space-separated parts to skip:
#      escapes abuse crash fuzz sanitize), AGENT_SANDBOX_DATA_DIR (template location).
# Exit status: 0 when every part passed (a part that cannot run here is a SKIP row with the
# reason), 1 otherwise. Not run by CI as such: CI runs the same parts as CTest tests
# (adversarial_test, e2e_abuse, e2e_crash) and the fuzz smoke from scripts/test.sh; the
# sanitizer pass is too long for CI (see scripts/sanitize.sh).
set -uo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KILLS=5
if [[ ${1:-} == --long ]]; then
  KILLS=100
  shift
fi
BUILD_DIR=${1:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$REPO_DIR/$BUILD_DIR"
DATA_DIR=${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}
SKIP=" ${ASB_ADV_SKIP:-} "
WORK=$(mktemp -d /tmp/asb-adversarial.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
ROWS=$WORK/rows.tsv  # attempt \t expected \t seen \t ok|FAIL|SKIP
: >"$ROWS"
status=0

row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ROWS"; }
part() { printf '\n==> %s\n' "$*" >&2; }
skipping() { [[ $SKIP == *" $1 "* ]]; }

export ASB_BIN="$BUILD_DIR/bin/agent-sandbox" ASB_ADV_ROWS="$ROWS" PYTHONDONTWRITEBYTECODE=1
export ASB_TEST_ROOTFS="$DATA_DIR/templates/base/rootfs" ASB_SANDBOXD="$BUILD_DIR/bin/sandboxd"
export ASB_TEMPLATES="$DATA_DIR/templates"

# ---- escapes: parse the test's own tables into rows ------------------------------------------
if ! skipping escapes; then
  part "escapes (tests/adversarial)"
  bin=$(find "$BUILD_DIR/tests" -name adversarial_test -type f -perm -u+x 2>/dev/null | head -1)
  if [[ -z $bin ]]; then
    row "escapes" "the suite runs" "adversarial_test not built in $BUILD_DIR" FAIL
    status=1
  else
    "$bin" >"$WORK/escapes.log" 2>&1
    rc=$?
    python3 - "$WORK/escapes.log" "$rc" >>"$ROWS" <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read().splitlines()
rc = int(sys.argv[2])
probe = False
for line in text:
    if line.startswith("attempt ") and "expected (uid 1000)" in line:
        probe = True
        continue
    if probe:
        m = re.match(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(ok|FAIL)$", line)
        if m:
            print("escape: %s\tuser %s, root %s\tuser %s, root %s\t%s"
                  % (m[1], m[2], m[4], m[3], m[5], m[6]))
            continue
        probe = False
    m = re.match(r"^(.*\S)\s+exit (-?\d+)\s+exit (-?\d+)\s+(ok|FAIL)$", line)
    if m:
        print("escape (shell): %s\tnon-zero exit as user and root\texit %s, exit %s\t%s"
              % (m[1][:60], m[2], m[3], m[4]))
        continue
    m = re.match(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\S+)", line)
    if m:
        ok = {"OK": "ok", "FAILED": "FAIL", "SKIPPED": "SKIP"}[m[1]]
        print("escape test: %s\tpasses\t%s\t%s" % (m[2], m[1].lower(), ok))
if rc not in (0,):
    print("escapes: adversarial_test\texit 0\texit %d\tFAIL" % rc)
PY
    [[ $rc -eq 0 ]] || status=1
  fi
fi

# ---- abuse and crash: the Python tests append their own rows ---------------------------------
run_py() {  # run_py <part> <log> <command...>
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 77 ]] || grep -q '^SKIP: ' "$log"; then
    row "$name" "runs" "$(grep -m1 '^SKIP: ' "$log" || echo skipped)" SKIP
  elif [[ $rc -ne 0 ]]; then
    row "$name" "exit 0" "exit $rc (log: $(tail -3 "$log" | tr '\n\t' '  '))" FAIL
    status=1
  fi
}
if ! skipping abuse; then
  part "abuse (tests/e2e/test_abuse.py)"
  run_py abuse "$WORK/abuse.log" python3 "$REPO_DIR/tests/e2e/test_abuse.py"
fi
if ! skipping crash; then
  part "crash ($KILLS kills)"
  seed=${ASB_CRASH_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
  run_py crash "$WORK/crash.log" python3 "$REPO_DIR/tests/e2e/crash_harness.py" \
    --kills "$KILLS" --seed "$seed"
  grep '^crash harness:' "$WORK/crash.log" >&2
fi

# ---- fuzz smoke (helper fuzz's scripts/fuzz.sh), rows from its JUnit file --------------------
if ! skipping fuzz; then
  part "fuzz smoke"
  if [[ ! -f $REPO_DIR/scripts/fuzz.sh ]]; then
    row "fuzz" "smoke run" "scripts/fuzz.sh not in this tree" SKIP
  else
    ASB_FUZZ_JUNIT="$WORK/fuzz.xml" bash "$REPO_DIR/scripts/fuzz.sh" smoke \
      "$BUILD_DIR-fuzz" >"$WORK/fuzz.log" 2>&1
    rc=$?
    if [[ -f $WORK/fuzz.xml ]]; then
      python3 - "$WORK/fuzz.xml" >>"$ROWS" <<'PY'
import sys
import xml.etree.ElementTree as ET
for tc in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    f, s = tc.find("failure"), tc.find("skipped")
    if f is not None:
        print("fuzz: %s\tno crash, hang or sanitizer report\t%s\tFAIL"
              % (tc.get("name"), f.get("message", "")[:100]))
    elif s is not None:
        print("fuzz: %s\tno crash, hang or sanitizer report\t%s\tSKIP"
              % (tc.get("name"), s.get("message", "")[:100]))
    else:
        print("fuzz: %s\tno crash, hang or sanitizer report\tclean\tok" % tc.get("name"))
PY
    fi
    if [[ $rc -eq 77 ]]; then
      grep -q '^fuzz: ' "$ROWS" || row "fuzz" "smoke run" "skipped (clang/libFuzzer missing)" SKIP
    elif [[ $rc -ne 0 ]]; then
      row "fuzz" "exit 0" "scripts/fuzz.sh exit $rc" FAIL
      status=1
    fi
  fi
fi

# ---- sanitizers: the suites again, built with ASan + UBSan; rows from sanitize.sh's JUnit ------
if ! skipping sanitize; then
  part "sanitizers (scripts/sanitize.sh, $BUILD_DIR-asan)"
  # Without ASB_ADV_ROWS: the sanitized e2e suites would append their rows to the table as if
  # they were the product's; their results come in through the JUnit files below.
  env -u ASB_ADV_ROWS bash "$REPO_DIR/scripts/sanitize.sh" "$BUILD_DIR-asan" \
    >"$WORK/sanitize.log" 2>&1
  rc=$?
  python3 - "$BUILD_DIR-asan/sanitize-logs" "$WORK/sanitize.log" "$rc" >>"$ROWS" <<'PY'
import glob, os, re, sys
import xml.etree.ElementTree as ET
logs, log, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
for path in sorted(glob.glob(logs + "/*.xml")):
    suite = os.path.basename(path)[:-4]
    passed, failed = 0, []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case.get("name"))
        else:
            passed += 1
    for name in failed:
        print("sanitized %s: %s\tpasses under ASan + UBSan\tfailed\tFAIL" % (suite, name))
    print("sanitized %s tests\tall pass under ASan + UBSan\t%d passed, %d failed\t%s"
          % (suite, passed, len(failed), "FAIL" if failed else "ok"))
text = open(log, errors="replace").read()
m = re.search(r"==> \[.*\] sanitizer reports\n(.*?)\n(?:[a-z]+\.xml:|sanitize\.sh:)", text, re.S)
reports = m.group(1).strip() if m else "(sanitize.sh ended before its report step)"
print("sanitizer reports (ASan, LSan, UBSan)\tnone\t%s\t%s"
      % (" / ".join(reports.splitlines())[:200], "ok" if reports == "none" else "FAIL"))
if rc != 0:
    last = [l for l in text.splitlines() if l.strip()][-1:] or ["?"]
    print("sanitize.sh\texit 0\texit %d (%s)\tFAIL" % (rc, last[0][:120]))
PY
  [[ $rc -eq 0 ]] || status=1
  grep '^sanitize.sh:' "$WORK/sanitize.log" >&2
fi

# ---- the one table ---------------------------------------------------------------------------
python3 - "$ROWS" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [r + [""] * (4 - len(r)) for r in rows]
w = [min(max([len(r[i]) for r in rows] + [8]), cap) for i, cap in ((0, 60), (1, 44))]
print()
print("%-*s  %-*s  %s" % (w[0], "attempt", w[1], "expected", "seen"))
for a, e, s, ok in rows:
    mark = "" if ok == "ok" else "  [%s]" % ok
    print("%-*s  %-*s  %s%s" % (w[0], a[:w[0]], w[1], e[:w[1]], s, mark))
n = {k: sum(1 for r in rows if r[3] == k) for k in ("ok", "FAIL", "SKIP")}
print("\nadversarial.sh: %d rows: %d ok, %d failed, %d skipped"
      % (len(rows), n["ok"], n["FAIL"], n["SKIP"]))
sys.exit(1 if n["FAIL"] else 0)
PY
[[ $? -eq 0 ]] || status=1
exit $status
