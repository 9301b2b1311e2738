#!/usr/bin/env bash
# Builds sandbox templates into the data directory: a thin wrapper over
# `agent-sandbox template build` (ADR 0012), kept for the scripts and documents that call it.
#
# Usage: sudo bash scripts/build-template.sh [--force] NAME|PATH...
#
# Reads templates/NAME/template.toml of this repository and produces
# $AGENT_SANDBOX_DATA_DIR/templates/NAME/{rootfs,manifest.json,.stamp} (default data dir
# /var/lib/agent-sandbox): mmdebstrap from Debian bookworm, the template's setup commands, its
# smoke test in a real sandbox, then an atomic swap. Unchanged recipe -> no rebuild; a failed
# build leaves the installed template as it was. See `agent-sandbox template build --help`.
#
# The binary: $AGENT_SANDBOX_BIN, else build-ci/ or build/ of this repository, else PATH — the
# first that knows the `template` command.
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=
for c in "${AGENT_SANDBOX_BIN:-}" "$REPO_DIR/build-ci/bin/agent-sandbox" \
  "$REPO_DIR/build/bin/agent-sandbox" "$(command -v agent-sandbox || true)"; do
  if [[ -n $c && -x $c ]] && "$c" template --help >/dev/null 2>&1; then
    BIN=$c
    break
  fi
done
if [[ -z $BIN ]]; then
  echo "build-template: no agent-sandbox binary with the 'template' command; build it first" \
    "(cmake --build build) or set AGENT_SANDBOX_BIN" >&2
  exit 1
fi
exec "$BIN" template build --from "$REPO_DIR/templates" "$@"
