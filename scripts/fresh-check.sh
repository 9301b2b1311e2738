#!/usr/bin/env bash
# The fresh-machine check: proves that the README's two commands work on a Debian 12 machine
# that has nothing but Debian's minbase variant, so that no package installed by hand on a
# developer's or CI's machine can hide a missing install step.
#
#   1. mmdebstrap makes a new Debian 12 (bookworm) minbase root in a temporary directory;
#   2. a clean `git archive` of HEAD is unpacked in it (/src/agent-sandbox; uncommitted changes
#      are not part of the check);
#   3. /proc, /sys (with the cgroup mounts under it) and /dev are bound in, so that real
#      sandboxes can run, and the host's resolv.conf is copied for the package mirror;
#   4. as root, with the fresh root as the root of a new mount namespace (pivot_root), the
#      README's "Quick start" commands run exactly as written (they
#      are read from README.md, not repeated here): the first must end with the demo's success
#      line, the second with "N passed, 0 failed".
# Every mount, loop device, process and file it made is removed on exit, also on failure or
# Ctrl-C. Each step prints how long it took.
#
# Usage: sudo bash scripts/fresh-check.sh [--ci]
#   --ci  the cheap part only, which .ci/run runs before the tests: the minbase root,
#         scripts/install-deps.sh, and CMake's configure step (which checks every library,
#         program and Python module the build, the tests and the benchmarks need, and names
#         what is missing). A few minutes.
# Env:  ASB_FRESH_DIR (parent of the temporary root; default /var/tmp),
#       ASB_FRESH_APT_CACHE (downloaded .debs kept between runs so that a rerun does not fetch
#       them again; the packages are still installed afresh; default
#       /var/cache/agent-sandbox/fresh-check-debs; "none" to keep nothing),
#       ASB_FRESH_KEEP=1 (leave the root in place for a look; mounts are still removed),
#       ASB_DEBIAN_MIRROR, ASB_DEBIAN_SECURITY_MIRROR (default deb.debian.org's).
# Exit status: 0 when every step passed, 1 when one failed (the step is named), 2 on misuse.
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=full
case "${1:-}" in
  --ci) MODE=ci ;;
  "") ;;
  *)
    echo "usage: sudo bash scripts/fresh-check.sh [--ci]" >&2
    exit 2
    ;;
esac
if [[ $(id -u) -ne 0 ]]; then
  echo "fresh-check: run as root (mmdebstrap --mode=root, bind mounts, pivot_root)" >&2
  exit 2
fi
for tool in mmdebstrap git unshare pivot_root mount umount losetup; do
  if ! command -v "$tool" >/dev/null; then
    echo "fresh-check: $tool is missing (scripts/install-deps.sh installs it)" >&2
    exit 2
  fi
done

MIRROR=${ASB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${ASB_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
APT_CACHE=${ASB_FRESH_APT_CACHE:-/var/cache/agent-sandbox/fresh-check-debs}
PARENT=${ASB_FRESH_DIR:-/var/tmp}
mkdir -p "$PARENT"
ROOT=$(mktemp -d "$PARENT/asb-fresh.XXXXXX")
SRC=/src/agent-sandbox
LOGS=$ROOT.logs
mkdir -p "$LOGS"

started=$(date +%s)
step_started=$started
current_step=
step() {
  local now
  now=$(date +%s)
  if [[ -n $current_step ]]; then
    printf 'fresh-check:   %s: %d s\n' "$current_step" "$((now - step_started))"
  fi
  current_step=$1
  step_started=$now
  printf '\n==> [%4ss] %s\n' "$((now - started))" "$1"
}
fail() {
  echo "fresh-check: FAILED at \"$current_step\": $*" >&2
  exit 1
}

# ---- cleanup: processes, loop devices, mounts, files -----------------------------------------
# Everything is found by where it lives (under $ROOT), never by name.
# The README's commands run in mount namespaces of their own (in_root below), recorded in
# $LOGS/mntns.*: their processes are those in one of these namespaces, or rooted in $ROOT.
processes_in_root() {
  local p ns
  local -A ours=()
  for ns in "$LOGS"/mntns.*; do
    [[ -r $ns ]] && ours[$(cat "$ns")]=1
  done
  for p in /proc/[0-9]*; do
    ns=$(readlink "$p/ns/mnt" 2>/dev/null) || continue
    if [[ -n ${ours[$ns]:-} || $(readlink "$p/root" 2>/dev/null) == "$ROOT" ]]; then
      echo "${p#/proc/}"
    fi
  done
  return 0
}
cleanup() {
  local rc=$? pids loop back mp
  set +e
  pids=$(processes_in_root)
  if [[ -n $pids ]]; then
    echo "fresh-check: ending processes left in the root: $(echo $pids)" >&2
    kill -TERM $pids 2>/dev/null
    sleep 2
    pids=$(processes_in_root)
    [[ -n $pids ]] && kill -KILL $pids 2>/dev/null && sleep 1
  fi
  # Mounts under the root, deepest first (the workspace pool, sandboxes' mounts made in the
  # host's namespace, then our binds). --make-rslave below keeps these from reaching the host.
  for mp in $(awk -v r="$ROOT" '$5 == r || index($5, r "/") == 1 { print $5 }' \
    /proc/self/mountinfo | sort -r); do
    umount -l "$mp" 2>/dev/null
  done
  # Loop devices over files of the root: their backing path is the root's own view of it
  # (as set up inside the namespace) or the host's; the inode tells them from anyone else's.
  while read -r loop ino back; do
    [[ -n $back ]] || continue
    if [[ $back == "$ROOT"/* ]] ||
      [[ -e $ROOT$back && $(stat -c %i "$ROOT$back" 2>/dev/null) == "$ino" ]]; then
      losetup -d "$loop" 2>/dev/null
    fi
  done < <(losetup -l -n -O NAME,BACK-INO,BACK-FILE 2>/dev/null)
  if [[ ${ASB_FRESH_KEEP:-} == 1 ]]; then
    echo "fresh-check: kept the root at $ROOT (ASB_FRESH_KEEP=1); logs in $LOGS" >&2
  else
    rm -rf --one-file-system "$ROOT"
    if ((rc == 0)); then rm -rf "$LOGS"; else echo "fresh-check: logs kept in $LOGS" >&2; fi
  fi
  printf 'fresh-check: total %d s\n' "$(($(date +%s) - started))"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the minbase root ---------------------------------------------------------------------
step "mmdebstrap: Debian 12 minbase root in $ROOT"
hooks=()
if [[ $APT_CACHE != none ]]; then
  mkdir -p "$APT_CACHE"
  # The same download cache idiom as the template builder (mmdebstrap(1), EXAMPLES).
  hooks=(--setup-hook='mkdir -p "$1"/var/cache/apt/archives/'
    --setup-hook="sync-in $APT_CACHE /var/cache/apt/archives/"
    --customize-hook="sync-out /var/cache/apt/archives $APT_CACHE")
fi
mmdebstrap --variant=minbase --mode=root --format=directory \
  --aptopt='Acquire::Retries "3"' "${hooks[@]}" bookworm "$ROOT" \
  "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
  "deb $SECURITY_MIRROR bookworm-security main" >"$LOGS/mmdebstrap.log" 2>&1 ||
  fail "mmdebstrap (log: $LOGS/mmdebstrap.log): $(tail -n 3 "$LOGS/mmdebstrap.log")"
# A throwaway root needs no fsync after every file dpkg unpacks (most of install-deps.sh's
# time on a loaded machine); what gets installed is the same.
echo force-unsafe-io >"$ROOT/etc/dpkg/dpkg.cfg.d/asb-fresh-check-unsafe-io"

# ---- 2. the source ---------------------------------------------------------------------------
step "git archive HEAD -> $SRC"
mkdir -p "$ROOT$SRC"
git -C "$REPO_DIR" archive --format=tar HEAD | tar -x -C "$ROOT$SRC"
echo "fresh-check: HEAD is $(git -C "$REPO_DIR" rev-parse --short HEAD)"

# ---- 3. binds --------------------------------------------------------------------------------
step "bind /proc, /sys (cgroups), /dev; resolv.conf"
for d in proc sys dev; do
  mkdir -p "$ROOT/$d"
  mount --rbind "/$d" "$ROOT/$d"
  mount --make-rslave "$ROOT/$d"
done
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
# The machine's network trust, like its resolver: the local CA certificates this host adds to
# Debian's (a TLS-inspecting egress proxy signs with one; the ca-certificates package that
# install-deps.sh installs takes them into the system bundle), and npm's machine-wide config
# (its `cafile`), without which `npm ci` in the root failed with SELF_SIGNED_CERT_IN_CHAIN.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp -L /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
[[ -f /etc/npmrc ]] && cp -L /etc/npmrc "$ROOT/etc/npmrc"
if [[ $APT_CACHE != none ]]; then
  # install-deps.sh's apt-get downloads into the same cache (bound, so nothing is copied).
  mount --bind "$APT_CACHE" "$ROOT/var/cache/apt/archives"
fi

# Runs a command line in the fresh root as a fresh root login would: a clean environment, and
# the root as the root of a mount namespace of its own (pivot_root, not chroot: the kernel
# refuses to make a user namespace, which every sandbox needs, from inside a chroot).
in_root() {
  unshare --mount --propagation private -- /bin/sh -ec '
    readlink /proc/self/ns/mnt >"$3"
    mount --rbind "$1" "$1"
    cd "$1"
    mkdir -p .fresh-check-old-root
    pivot_root . .fresh-check-old-root
    cd /
    umount -l /.fresh-check-old-root
    rmdir /.fresh-check-old-root
    exec /usr/bin/env -i HOME=/root USER=root LOGNAME=root TERM=dumb LANG=C.UTF-8 \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      /bin/bash -c "cd $4 && $2"
  ' fresh-check "$ROOT" "$1" "$LOGS/mntns.$BASHPID.$RANDOM" "$SRC" </dev/null
}

if [[ $MODE == ci ]]; then
  # ---- the cheap part: dependencies and the configure step -----------------------------------
  step "scripts/install-deps.sh in the fresh root"
  in_root "bash scripts/install-deps.sh" >"$LOGS/install-deps.log" 2>&1 ||
    fail "install-deps.sh (log: $LOGS/install-deps.log): $(tail -n 5 "$LOGS/install-deps.log")"
  step "cmake configure (build, tests and benchmarks) in the fresh root"
  if ! in_root "cmake -S . -B build-fresh -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DASB_WERROR=ON -DASB_BUILD_TESTS=ON -DASB_BUILD_BENCH=ON" >"$LOGS/configure.log" 2>&1; then
    # CMake's own words name the missing package, program or module.
    grep -E -A4 'CMake Error|Could NOT find|Could not find|missing' "$LOGS/configure.log" |
      head -n 30 >&2
    fail "cmake configure: a dependency is missing from scripts/install-deps.sh (above)"
  fi
  step "done"
  echo "fresh-check: the CI part passed: install-deps.sh and configure on a minbase root"
  exit 0
fi

# ---- 4. the README's commands, exactly as written --------------------------------------------
# The first two ```sh blocks under "## Quick start" hold one command each.
mapfile -t commands < <(python3 - "$REPO_DIR/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
for block in blocks[:2]:
    lines = [l for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    if len(lines) != 1:
        sys.exit("README.md: a Quick start block must hold exactly one command")
    print(lines[0].strip())
PY
)
((${#commands[@]} == 2)) || fail "README.md's Quick start does not hold two commands"

# Runs README command N (1 or 2) in the root, showing its output, and fails unless it exits 0
# with a last line that matches the extended regex `want` (described as `what`).
readme_command() {
  local n=$1 want=$2 what=$3 cmd=${commands[$(($1 - 1))]} rc
  # `last` stays global: the closing line quotes the second command's.
  step "README command $n: $cmd"
  set +e
  in_root "$cmd" 2>&1 | tee "$LOGS/command$n.log" | sed -u 's/^/   | /'
  rc=${PIPESTATUS[0]}
  set -e
  last=$(grep -v '^\s*$' "$LOGS/command$n.log" | tail -n 1)
  ((rc == 0)) || fail "\"$cmd\" exited with $rc; last line: $last"
  [[ $last =~ $want ]] || fail "\"$cmd\" did not end with $what; it ended with: $last"
}
readme_command 1 '^demo: all steps ended as expected' "the demo's success line"
readme_command 2 '^test\.sh: [0-9]+ passed, 0 failed' '"N passed, 0 failed"'

step "done"
echo "fresh-check: passed: both README commands on a fresh Debian 12 minbase root ($last)"
