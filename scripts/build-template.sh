#!/usr/bin/env bash
# Builds a sandbox template's root filesystem from Debian bookworm packages.
#
# Usage: sudo bash scripts/build-template.sh [--force] NAME
#
# Reads templates/NAME/packages.list (one package per line, # comments) and
# templates/NAME/template.json (display_name, description, tools) from this repository and
# produces, in the data directory (env AGENT_SANDBOX_DATA_DIR, default /var/lib/agent-sandbox):
#
#   templates/NAME/rootfs/         the root filesystem (mounted read-only by the backends)
#   templates/NAME/manifest.json   name, display_name, description, tools, packages, built_at,
#                                  size_bytes, recipe_hash
#   templates/NAME/.stamp          hash of the recipe (this script + packages.list + template.json)
#
# The template is rebuilt only when the recipe hash changes (or with --force). The build happens
# in a temporary directory beside the target and is swapped into place atomically
# (renameat2(RENAME_EXCHANGE)), so a failed build leaves the previous template untouched and a
# reader never sees a half-built one. The previous version is removed, or set aside while
# running sandboxes still use it (and removed by a later build once they are gone). Concurrent
# runs for the same NAME serialise on a lock.
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPT_PATH="$REPO_DIR/scripts/build-template.sh"
DATA_DIR=${AGENT_SANDBOX_DATA_DIR:-/var/lib/agent-sandbox}
MIRROR=${AGENT_SANDBOX_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${AGENT_SANDBOX_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm

force=0
if [[ ${1:-} == --force ]]; then
  force=1
  shift
fi
NAME=${1:-}
if [[ ! $NAME =~ ^[a-z0-9][a-z0-9_-]{0,62}$ ]]; then
  echo "usage: $0 [--force] NAME   (NAME: lowercase letters, digits, '-' and '_')" >&2
  exit 2
fi
SRC_DIR="$REPO_DIR/templates/$NAME"
PKG_LIST="$SRC_DIR/packages.list"
META="$SRC_DIR/template.json"
for f in "$PKG_LIST" "$META"; do
  [[ -f $f ]] || { echo "build-template: missing $f" >&2; exit 2; }
done
if [[ $(id -u) -ne 0 ]]; then
  echo "build-template: must run as root (mmdebstrap --mode=root)" >&2
  exit 1
fi

log() { printf '[build-template %s] %s\n' "$NAME" "$*"; }

mapfile -t PACKAGES < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$PKG_LIST" | grep -v '^$' | sort -u)
RECIPE_HASH=$(cat "$SCRIPT_PATH" "$PKG_LIST" "$META" | sha256sum | cut -d' ' -f1)

TEMPLATES_DIR="$DATA_DIR/templates"
DEST="$TEMPLATES_DIR/$NAME"
install -d -m 0711 "$DATA_DIR"
install -d -m 0755 "$TEMPLATES_DIR"

# One build per template at a time; a second caller waits, then finds the stamp current.
exec 9>"$TEMPLATES_DIR/.$NAME.lock"
flock 9

# Removes a build directory safely: first every mount below it (mmdebstrap mounts /proc, /sys
# and /dev into the target while it runs), then the files, never crossing into another
# filesystem.
remove_tree() {
  local dir=$1
  [[ -d $dir ]] || return 0
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -rf --one-file-system "$dir"
}

# True when a mount anywhere on the host (any process's mount namespace: running sandboxes
# bind-mount their template's rootfs) shows directory $1 or something below it as its root.
# mountinfo's 4th field is the path within the mounted filesystem, which follows renames.
in_use() {
  local dir mnt rel
  dir=$(realpath "$1")
  mnt=$(findmnt -n -o TARGET -T "$dir")
  rel=${dir#"${mnt%/}"}
  { cat /proc/[0-9]*/mountinfo 2>/dev/null || true; } |
    awk -v r="$rel" '$4 == r || index($4, r "/") == 1 { found = 1 } END { exit !found }'
}

# A build killed outright (SIGKILL skips the trap) leaves its directory; we hold the lock, so
# no build of NAME is running now.
for stale in "$TEMPLATES_DIR"/.build-"$NAME".*; do
  [[ -e $stale ]] || continue
  log "removing the leftover of an interrupted build: $stale"
  if [[ -d $stale ]]; then remove_tree "$stale"; else rm -f "$stale"; fi
done
# Old versions still used by running sandboxes were set aside by earlier builds; remove those
# that no sandbox uses any more.
for old in "$TEMPLATES_DIR"/.retired-"$NAME"-*; do
  [[ -d $old ]] || continue
  if in_use "$old"; then
    log "keeping $old: still in use"
  else
    remove_tree "$old"
  fi
done

if ((force == 0)) && [[ -f $DEST/.stamp && -x $DEST/rootfs/bin/sh && -f $DEST/manifest.json ]] &&
  [[ $(cat "$DEST/.stamp") == "$RECIPE_HASH" ]]; then
  log "up to date ($DEST, recipe ${RECIPE_HASH:0:12})"
  exit 0
fi

WORK=$(mktemp -d "$TEMPLATES_DIR/.build-$NAME.XXXXXX")
trap 'remove_tree "$WORK"' EXIT

start=$(date +%s)
log "building ${#PACKAGES[@]} packages from $SUITE into $WORK (log: $WORK.log)"
include=$(IFS=,; echo "${PACKAGES[*]}")
if ! mmdebstrap --variant=minbase --mode=root --format=directory \
  --include="$include" \
  --aptopt='Acquire::Retries "3"' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  "$SUITE" "$WORK/rootfs" \
  "deb $MIRROR $SUITE main" \
  "deb $MIRROR $SUITE-updates main" \
  "deb $SECURITY_MIRROR $SUITE-security main" >"$WORK.log" 2>&1; then
  tail -n 30 "$WORK.log" >&2
  echo "build-template: mmdebstrap failed (full log: $WORK.log); the old template is kept" >&2
  exit 1
fi
rm -f "$WORK.log"
log "mmdebstrap done in $(($(date +%s) - start)) s; post-processing"

R="$WORK/rootfs"
chmod 0755 "$R"
# Mount points and the sandbox's own directories.
install -d -m 0755 "$R/workspace"
install -d -m 1777 "$R/tmp"
install -d -m 0755 "$R/proc" "$R/sys" "$R/dev"
printf 'sandbox\n' >"$R/etc/hostname"
cat >"$R/etc/hosts" <<'HOSTS'
127.0.0.1	localhost sandbox
::1	localhost ip6-localhost ip6-loopback
HOSTS
# Networked sandboxes get their resolver bind-mounted here; the file must exist as a target.
rm -f "$R/etc/resolv.conf"
: >"$R/etc/resolv.conf"
: >"$R/etc/machine-id"

# The unprivileged user every command runs as (protocol/messages.h kSandboxUid/kSandboxGid).
if grep -q '^[^:]*:[^:]*:1000:' "$R/etc/passwd" || grep -q '^[^:]*:[^:]*:1000:' "$R/etc/group"; then
  echo "build-template: uid/gid 1000 already taken in the rootfs" >&2
  exit 1
fi
echo 'sandbox:x:1000:1000:sandbox:/workspace:/bin/bash' >>"$R/etc/passwd"
echo 'sandbox:x:1000:' >>"$R/etc/group"
echo 'sandbox:*:19000:0:99999:7:::' >>"$R/etc/shadow"
echo 'sandbox:!::' >>"$R/etc/gshadow"

# Caches, package lists, logs and documentation: nothing an agent needs at run time.
rm -rf "$R"/var/cache/apt/* "$R"/var/lib/apt/lists/* "$R"/var/log/* \
  "$R"/usr/share/man/* "$R"/usr/share/info/* "$R"/var/cache/debconf/*-old \
  "$R"/var/lib/dpkg/*-old
find "$R/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true

size_bytes=$(du -sb --one-file-system "$R" | cut -f1)
python3 - "$META" "$WORK/manifest.json" "$NAME" "$size_bytes" "$RECIPE_HASH" "${PACKAGES[@]}" <<'PY'
import datetime, json, sys
meta_path, out_path, name, size, recipe = sys.argv[1:6]
packages = sys.argv[6:]
with open(meta_path) as f:
    meta = json.load(f)
manifest = {
    "name": name,
    "display_name": meta.get("display_name", name),
    "description": meta.get("description", ""),
    "tools": meta.get("tools", []),
    "packages": packages,
    "built_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "size_bytes": int(size),
    "recipe_hash": recipe,
}
with open(out_path, "w") as f:
    json.dump(manifest, f, indent=2)
    f.write("\n")
PY
printf '%s\n' "$RECIPE_HASH" >"$WORK/.stamp"
chmod 0755 "$WORK"
sync -f "$WORK/manifest.json"

# Swap the new template into place in one step; the old one (if any) ends up at $WORK and is
# removed by the exit trap.
if [[ -e $DEST ]]; then
  python3 - "$WORK" "$DEST" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
if libc.renameat2(AT_FDCWD, sys.argv[1].encode(), AT_FDCWD, sys.argv[2].encode(),
                  RENAME_EXCHANGE) != 0:
    err = ctypes.get_errno()
    sys.exit(f"renameat2 {sys.argv[1]} <-> {sys.argv[2]}: {os.strerror(err)}")
PY
else
  mv -T "$WORK" "$DEST"
fi
# The previous version is now at $WORK. Sandboxes running from it keep it until they end.
if [[ -d $WORK/rootfs ]] && in_use "$WORK/rootfs"; then
  retired="$TEMPLATES_DIR/.retired-$NAME-$(date +%s)"
  mv -T "$WORK" "$retired"
  log "the previous version is still used by running sandboxes; kept at $retired"
fi
log "installed $DEST ($((size_bytes / 1048576)) MiB, ${#PACKAGES[@]} packages, $(($(date +%s) - start)) s)"
