#!/usr/bin/env bash
# The main job's demo (ADR 0007): starts `agent-sandbox serve` on this machine with the
# default (ns) backend, then drives it the way an agent would, only through the REST API and the
# CLI's client verbs:
#   1. a short CLI tour: create, ls, exec (streamed, exit code passed through), cp in and out,
#      timeout, rm;
#   2. examples/demo_agent.py: uploads the multi-file Python project examples/wordstats, runs its
#      tests inside the sandbox with the output streamed, uses it, fetches a result file, then
#      runs part of CPython's own test suite (Debian's libpython3.11-testsuite in the base
#      template) and prints what ran and how long each step took;
#   3. stops the server with SIGTERM and shows its request log.
# The server gets a temporary data directory (its templates/ points at the real one) and a free
# loopback port, so the demo never touches another server's sandboxes; everything is removed at
# the end, also on Ctrl-C. The `agent-sandbox run` demo of the foundation issue is
# scripts/demo-run.sh.
#
# Usage: sudo bash scripts/demo.sh      (after scripts/setup.sh)
# Env:   AGENT_SANDBOX_BIN (default: agent-sandbox on PATH), AGENT_SANDBOX_DATA_DIR (where the
#        base template was built; default /var/lib/agent-sandbox), ASB_DEMO_PORT (default: free),
#        ASB_DEMO_CPYTHON_TESTS (space-separated test modules to run instead of the default set).
set -uo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ASB=${AGENT_SANDBOX_BIN:-$(command -v agent-sandbox || true)}
TEMPLATES="${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}/templates"
if [[ -z $ASB || ! -x $ASB ]]; then
  echo "demo.sh: agent-sandbox not found; run scripts/setup.sh first (or set AGENT_SANDBOX_BIN)" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "demo.sh: run as root (sandboxes need namespaces, cgroups and loop devices)" >&2
  exit 1
fi
if [[ ! -d $TEMPLATES/base/rootfs ]]; then
  echo "demo.sh: no base template in $TEMPLATES; run scripts/build-template.sh base" >&2
  exit 1
fi

started=$(date +%s%N)
elapsed() { printf '%.1f' "$(( ($(date +%s%N) - started) / 1000000 ))e-3"; }
step() { printf '\n\033[1;34m==> [%ss] %s\033[0m\n' "$(elapsed)" "$*"; }
show() { printf '\033[1m$ %s\033[0m\n' "$*"; }
failures=0
# expect CODE CMD...: runs CMD, shows its exit code, counts a mismatch as a failure.
expect() {
  local want=$1 code
  shift
  show "$(printf '%q ' "$@" | sed "s|$ASB|agent-sandbox|")"
  "$@"
  code=$?
  if [[ $code -ne $want ]]; then
    printf '   -> exit %d (EXPECTED %d)\n' "$code" "$want"
    failures=$((failures + 1))
  else
    printf '   -> exit %d\n' "$code"
  fi
}

DATA_DIR=$(mktemp -d /var/tmp/agent-sandbox-demo.XXXXXX)
ln -s "$TEMPLATES" "$DATA_DIR/templates"
LOG="$DATA_DIR/serve.log"
PORT=${ASB_DEMO_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
export AGENT_SANDBOX_URL="http://127.0.0.1:$PORT"
SERVER_PID=
SANDBOX=

cleanup() {
  trap - EXIT INT TERM
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    [[ -n $SANDBOX ]] && "$ASB" rm "$SANDBOX" >/dev/null 2>&1
    # Whatever is still there (an interrupted demo) goes before the server stops.
    for id in $("$ASB" ls --json 2>/dev/null | python3 -c \
        'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)["sandboxes"]]' 2>/dev/null); do
      "$ASB" rm "$id" >/dev/null 2>&1
    done
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  rm -f "$DATA_DIR/templates"
  rm -rf "$DATA_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "start the server: agent-sandbox serve --insecure-no-auth on $AGENT_SANDBOX_URL"
echo "   data dir $DATA_DIR (templates -> $TEMPLATES), log $LOG"
AGENT_SANDBOX_HOST=127.0.0.1 AGENT_SANDBOX_PORT=$PORT AGENT_SANDBOX_DATA_DIR=$DATA_DIR \
  "$ASB" serve --insecure-no-auth >"$LOG" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 200); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen('$AGENT_SANDBOX_URL/healthz', timeout=1)" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo.sh: the server did not start:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.05
done
echo "   up after $(elapsed) s: $(python3 -c "import urllib.request; print(urllib.request.urlopen('$AGENT_SANDBOX_URL/healthz').read().decode())")"

step "a tour of the CLI's client verbs"
show "agent-sandbox create --cpus 1 --memory-mb 256 --timeout 300 -e GREETING=hello"
SANDBOX=$("$ASB" create --cpus 1 --memory-mb 256 --timeout 300 -e GREETING=hello)
echo "$SANDBOX"
[[ $SANDBOX =~ ^sb_[0-9a-f]{16}$ ]] || { echo "create failed" >&2; failures=$((failures + 1)); }
expect 0 "$ASB" ls
expect 0 "$ASB" exec "$SANDBOX" -- sh -c 'echo "$GREETING from $(hostname) as $(id -un) in $(pwd)"; for i in 1 2 3; do echo "tick $i"; sleep 0.3; done'
expect 3 "$ASB" exec "$SANDBOX" -- sh -c 'echo "exit codes pass through" >&2; exit 3'
printf 'line one\nline two\n' >"$DATA_DIR/local.txt"
expect 0 "$ASB" cp "$DATA_DIR/local.txt" "$SANDBOX:/workspace/in/local.txt"
expect 0 "$ASB" exec "$SANDBOX" -- sh -c 'wc -l in/local.txt | tee in/count.txt'
expect 0 "$ASB" cp "$SANDBOX:in/count.txt" "$DATA_DIR/count.txt"
show "cat count.txt  # fetched back from the sandbox"
cat "$DATA_DIR/count.txt"
expect 0 "$ASB" timeout "$SANDBOX" 600
expect 0 "$ASB" rm "$SANDBOX"
expect 125 "$ASB" inspect "$SANDBOX"
SANDBOX=

step "an agent workload through the REST API: examples/demo_agent.py"
agent_args=(--url "$AGENT_SANDBOX_URL" --project "$REPO_DIR/examples/wordstats")
[[ -n ${ASB_DEMO_CPYTHON_TESTS:-} ]] && agent_args+=(--cpython-tests "$ASB_DEMO_CPYTHON_TESTS")
show "python3 examples/demo_agent.py --url $AGENT_SANDBOX_URL"
python3 "$REPO_DIR/examples/demo_agent.py" "${agent_args[@]}"
code=$?
printf '   -> exit %d\n' "$code"
((code == 0)) || failures=$((failures + 1))

step "stop the server (SIGTERM: graceful)"
kill -TERM "$SERVER_PID"
wait "$SERVER_PID"
code=$?
SERVER_PID=
printf '   server exited with %d; %d requests served. The last lines of its log:\n' "$code" \
  "$(grep -c 'http out' "$LOG")"
tail -n 6 "$LOG" | sed 's/^/   | /'
((code == 0)) || failures=$((failures + 1))

echo
if ((failures > 0)); then
  echo "demo: $failures step(s) did not end as expected (after $(elapsed) s)"
  exit 1
fi
echo "demo: all steps ended as expected in $(elapsed) s"
