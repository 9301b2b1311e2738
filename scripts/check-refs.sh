#!/usr/bin/env bash
# Fails, listing file:line, when a tracked file cites something the repository does not hold:
# a planning issue by number ("issue 4", "Issue 17 item 6") or a planning document
# (ACCEPTANCE.md, PLAN.md, STYLE.md). Cite an ADR (docs/adr/NNNN) or a file under docs/
# instead, or say what the case is. The ADRs and a changelog are history and may name issues.
# CTest runs this as `refs_check`.
# Usage: bash scripts/check-refs.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pattern='\b[Ii]ssues? [0-9]+|ACCEPTANCE\.md|PLAN\.md|STYLE\.md'
# The tracked files; a tree without git (an archive, as fresh-check.sh unpacks) takes every file
# outside build output and node_modules.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files)
else
  mapfile -t files < <(find . \( -name .git -o -name node_modules -o -name 'build*' \) -prune \
    -o -type f -print | sed 's|^\./||' | sort)
fi
keep=()
for f in "${files[@]}"; do
  case "$f" in
    docs/adr/* | CHANGELOG* | */CHANGELOG* | scripts/check-refs.sh) ;;
    *) [[ -f $f ]] && keep+=("$f") ;;
  esac
done
# -I: binary files (fuzz corpora) are not text and are skipped.
rc=0
hits=$(grep -InE "$pattern" -- "${keep[@]}") || rc=$?
if ((rc > 1)); then
  echo "check-refs: grep failed ($rc)" >&2
  exit 2
fi
if ((rc == 0)); then
  echo "check-refs: these lines cite issues or planning files that are not in the repository;" >&2
  echo "cite docs/adr/NNNN or docs/ instead:" >&2
  echo "$hits" | cut -c1-200 >&2
  exit 1
fi
echo "check-refs: ${#keep[@]} files, no references to issues or planning files"
