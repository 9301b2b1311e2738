#!/usr/bin/env bash
# Installs every Debian 12 package that agent-sandbox's build, tests, benchmark and base
# template need. Idempotent and quiet: when dpkg-query reports all of them installed, apt is
# not touched at all, so repeated runs of scripts/test.sh cost a fraction of a second.
#
# Usage: sudo bash scripts/install-deps.sh
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config make git
  # libraries (headers + static archives; sandboxd links statically)
  libboost1.81-dev libspdlog-dev libfmt-dev libcli11-dev libsqlite3-dev libseccomp-dev
  libcap-dev libarchive-dev libzstd-dev libssl-dev libexpected-dev
  # template.toml parser (ADR 0012)
  libtoml11-dev
  # libarchive's own dependencies, for the static link of sandboxd
  libacl1-dev liblz4-dev libicu-dev libbz2-dev liblzma-dev zlib1g-dev nettle-dev libxml2-dev
  # tests and benchmark
  libgtest-dev libgmock-dev libbenchmark-dev
  # libFuzzer targets and their ASan/UBSan runtimes (scripts/fuzz.sh; fuzz/)
  clang libclang-rt-14-dev
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
  # networked sandboxes (issue 10): nft for our tables; tests/e2e/test_network.py runs dnsmasq
  # (the binary only, no system service) as the test internet's DNS server
  nftables dnsmasq-base
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages (${missing[*]}); run as root" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
echo "install-deps: done"
