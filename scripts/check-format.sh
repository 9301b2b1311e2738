#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ file differs from what clang-format makes of it
# with the repository's .clang-format (Google style, 100 columns). CTest runs it as
# `format_check`; fix with: clang-format -i $(bash scripts/check-format.sh --list)
# Usage: bash scripts/check-format.sh [--list]    (--list: print the differing files only)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (Debian package clang-format)" >&2; exit 2; }
# The tracked files; a tree without git (an archive, as fresh-check.sh unpacks) takes the
# sources under the repository's own top-level folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find src fuzz bench tests sdk examples -path '*/node_modules' -prune -o \
    \( -name '*.cc' -o -name '*.h' \) -type f -print 2>/dev/null | sort)
fi
# One clang-format for all files: --dry-run names each differing line as "file:line:col:".
mapfile -t bad < <(clang-format --dry-run --style=file "${files[@]}" 2>&1 |
  sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: .*-Wclang-format-violations.*/\1/p' | sort -u)
if [[ ${1:-} == --list ]]; then
  printf '%s\n' "${bad[@]}"
  exit 0
fi
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: clang-format -i \$(bash scripts/check-format.sh --list)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
