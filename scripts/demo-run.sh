#!/usr/bin/env bash
# The `agent-sandbox run` demo (the foundation issue's; the main job's demo, with the server, is
# scripts/demo.sh): a few `agent-sandbox run` invocations, each in a fresh, isolated,
# ephemeral sandbox on the base template. Shows streamed output, argv passed as given, exit code
# passthrough, a timeout, and what the command sees of its isolation.
#
# Usage: sudo bash scripts/demo-run.sh       (after scripts/setup.sh; uses agent-sandbox on PATH or
#        $AGENT_SANDBOX_BIN)
set -uo pipefail

ASB=${AGENT_SANDBOX_BIN:-$(command -v agent-sandbox || true)}
if [[ -z $ASB || ! -x $ASB ]]; then
  echo "demo.sh: agent-sandbox not found; run scripts/setup.sh first" >&2
  exit 1
fi
failures=0
bold='' plain=''
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
show() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }
# quote ARG...: the arguments as a reader would type them.
quote() {
  local a out=()
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:@%+-]+$ ]]; then
      out+=("$a")
    else
      out+=("'${a//\'/\'\\\'\'}'")
    fi
  done
  echo "${out[*]}"
}
# expect CODE CMD...: runs CMD, prints its exit code, and counts a mismatch as a failure.
expect() {
  local want=$1
  shift
  show "agent-sandbox $(quote "${@:2}")"
  local t0 t1 code
  t0=$(date +%s%N)
  "$@"
  code=$?
  t1=$(date +%s%N)
  printf '   -> exit %d in %d ms' "$code" $(((t1 - t0) / 1000000))
  if [[ $code -ne $want ]]; then
    printf '  (EXPECTED %d)\n' "$want"
    failures=$((failures + 1))
  else
    printf '\n'
  fi
}

echo "agent-sandbox demo: every command below runs in its own new sandbox, which is destroyed"
echo "when the command ends."
expect 0 "$ASB" version
expect 0 "$ASB" run -- python3 -c 'import sys, platform; print("hello from python", platform.python_version(), "on", platform.node())'
expect 0 "$ASB" run -- sh -c 'echo "who am I: $(id)"; echo "hostname: $(hostname)"; echo "cwd: $(pwd)"; echo "network interfaces: $(ls /sys/class/net | tr "\n" " ")"; echo "processes I can see:"; ps -e -o pid,user,comm'
expect 0 "$ASB" run -- sh -c 'for i in 1 2 3; do echo "tick $i"; sleep 0.3; done'
expect 0 "$ASB" run -- sh -c 'seq 1 100000 | awk "{ s += \$1 } END { print \"sum:\", s }"'
expect 0 "$ASB" run -- printf '%s\n' 'a b' '$HOME'
expect 3 "$ASB" run -- sh -c 'echo "to stderr" >&2; exit 3'
expect 2 "$ASB" run -- sh -c 'echo try writing /etc/passwd; echo x >> /etc/passwd'
expect 124 "$ASB" run --timeout 1 -- sh -c 'echo sleeping; sleep 30; echo never'
expect 127 "$ASB" run -- no-such-program
expect 0 "$ASB" run --env GREETING=hi --workdir /tmp -- sh -c 'echo "$GREETING from $(pwd)"'
expect 0 "$ASB" run --memory-mb 64 -- python3 -c 'print("64 MiB sandbox ok")'
expect 0 "$ASB" run --workspace-mb 32 -- sh -c 'head -c 64M /dev/zero > big || echo "the 32 MiB workspace is full at $(du -m big | cut -f1) MiB"'

echo
if ((failures > 0)); then
  echo "demo: $failures command(s) did not end as expected"
  exit 1
fi
echo "demo: all commands ended as expected"
