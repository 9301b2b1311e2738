#!/usr/bin/env bash
# Builds the SDK packages that another project installs (neither SDK is on a registry):
#   dist/agent_sandbox-X.Y.Z-py3-none-any.whl   pip install it in a venv (sdk/python/README.md)
#   dist/agent-sandbox-sdk-X.Y.Z.tgz            npm install it (sdk/typescript/README.md)
# The wheel needs no network: Debian's pip builds it with python3-setuptools and python3-wheel
# (no build isolation, --no-index: nothing from PyPI). The tarball is compiled by the SDK's
# pinned typescript (npm ci from package-lock.json: npm's registry or its cache). Each SDK is
# built in a temporary copy, so the source tree gets nothing but the output directory.
#
# Usage: bash scripts/build-sdks.sh [--out DIR] [python] [typescript]
#        (default: both, into dist/ at the repository root)
set -euo pipefail

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$REPO_DIR/dist
want_py=0 want_ts=0
while (($#)); do
  case $1 in
    --out) OUT=${2:?--out needs a directory}; shift ;;
    python) want_py=1 ;;
    typescript) want_ts=1 ;;
    *) echo "usage: bash scripts/build-sdks.sh [--out DIR] [python] [typescript]" >&2; exit 2 ;;
  esac
  shift
done
((want_py || want_ts)) || want_py=1 want_ts=1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# Debian's interpreter, where python3-setuptools and python3-wheel live (another python3 may
# come first in PATH: pyenv, a virtualenv).
PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)

work=$(mktemp -d "${TMPDIR:-/tmp}/asb-build-sdks.XXXXXX")
trap 'rm -rf "$work"' EXIT

build_python() {
  local missing wheel
  missing=$("$PY" -c '
import importlib.util as u
print(" ".join(m for m in ("pip", "setuptools", "wheel") if u.find_spec(m) is None))')
  if [[ -n $missing ]]; then
    echo "build-sdks: $PY lacks $missing (Debian: apt install python3-pip python3-setuptools" \
      "python3-wheel, or bash scripts/install-deps.sh)" >&2
    exit 1
  fi
  cp -r "$REPO_DIR/sdk/python" "$work/python"
  rm -rf "$work/python/build" "$work/python"/*.egg-info "$work/python/tests"
  find "$work/python" -name __pycache__ -prune -exec rm -rf {} +
  "$PY" -m pip wheel --quiet --no-deps --no-index --no-build-isolation -w "$work/wheel" \
    "$work/python"
  wheel=$(basename "$work"/wheel/agent_sandbox-*-py3-none-any.whl)
  mv -f "$work/wheel/$wheel" "$OUT/$wheel"
  echo "build-sdks: $OUT/$wheel"
}

build_typescript() {
  local p f tgz
  for p in node npm; do
    if ! command -v "$p" >/dev/null; then
      echo "build-sdks: $p not found (Debian: nodejs, npm)" >&2
      exit 1
    fi
  done
  mkdir "$work/typescript"
  for f in package.json package-lock.json tsconfig.json README.md src; do
    cp -r "$REPO_DIR/sdk/typescript/$f" "$work/typescript/"
  done
  (
    cd "$work/typescript"
    npm ci --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
    npm run --silent build
    npm pack --silent --pack-destination "$work" >/dev/null
  )
  tgz=$(basename "$work"/agent-sandbox-sdk-*.tgz)
  mv -f "$work/$tgz" "$OUT/$tgz"
  echo "build-sdks: $OUT/$tgz"
}

((want_py == 0)) || build_python
((want_ts == 0)) || build_typescript
