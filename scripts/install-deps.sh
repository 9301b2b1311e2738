#!/usr/bin/env bash
# Installs every Debian 12 package that agent-sandbox's build, tests, benchmark and base
# template need. Idempotent and quiet: when dpkg-query reports all of them installed, apt is
# not touched at all, so repeated runs of scripts/test.sh cost a fraction of a second.
#
# Usage: bash scripts/install-deps.sh   (as root, or as a user with sudo: it re-runs itself
#        under sudo when something is missing)
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config make git
  # libraries (headers + static archives; sandboxd links statically)
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libspdlog-dev libfmt-dev libcli11-dev libsqlite3-dev libseccomp-dev
  libcap-dev libarchive-dev libzstd-dev libssl-dev libexpected-dev
  # template.toml parser (ADR 0012)
  libtoml11-dev
  # libarchive's own dependencies, for the static link of sandboxd
  libacl1-dev liblz4-dev libicu-dev libbz2-dev liblzma-dev zlib1g-dev nettle-dev libxml2-dev
  # tests and benchmark
  libgtest-dev libgmock-dev libbenchmark-dev
  # libFuzzer targets and their ASan/UBSan runtimes (scripts/fuzz.sh; fuzz/)
  clang libclang-rt-14-dev
  # the format check of every C++ file against .clang-format (scripts/check-format.sh, ctest)
  clang-format
  # run time: template builder, workspace images, namespaces/network tools, comparisons
  bubblewrap mmdebstrap debian-archive-keyring e2fsprogs xfsprogs util-linux mount iproute2 procps
  python3 curl zstd xz-utils ca-certificates
  # /metrics is parsed with the Prometheus client's text-format parser (tests/e2e/test_auth.py)
  python3-prometheus-client
  # every e2e response is validated against api/openapi.json (tests/e2e/openapi_check.py);
  # scripts/openapi-yaml.py writes api/openapi.yaml from it
  python3-jsonschema python3-yaml
  # the process terminal WebSocket is driven by a real client (tests/e2e/test_processes.py)
  python3-websockets
  # networked sandboxes (ADR 0013): nft for our tables; tests/e2e/test_network.py runs dnsmasq
  # (the binary only, no system service) as the test internet's DNS server
  nftables dnsmasq-base
  # the microvm backend (isolation/microvm/): QEMU, the template as an EROFS disk, the guest's
  # initramfs (busybox, cpio); the guest kernel is Debian's too (scripts/microvm-guest.sh)
  qemu-system-x86 erofs-utils busybox-static cpio
  # the Python SDK's wheel (scripts/build-sdks.sh) and its offline installs into a venv: built
  # by Debian's pip with setuptools+wheel, no build isolation, nothing from PyPI
  python3-pip python3-venv python3-setuptools python3-wheel
  # the TypeScript SDK's suite and the MCP suite (the official MCP client from npm)
  nodejs
  # preview URLs are opened in a real browser, headless (tests/e2e/test_preview.py)
  chromium
)
# Needed only when the command is missing: another packaging of Node.js (NodeSource's nodejs,
# which conflicts with Debian's npm) already provides it.
COMMAND_PACKAGES=(
  npm:npm
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done
for cp in "${COMMAND_PACKAGES[@]}"; do
  if ! command -v "${cp%%:*}" >/dev/null 2>&1; then
    PACKAGES+=("${cp#*:}")
    missing+=("${cp#*:}")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    echo "install-deps: installing ${missing[*]} with sudo"
    exec sudo bash "${BASH_SOURCE[0]}" "$@"
  fi
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
echo "install-deps: done"
