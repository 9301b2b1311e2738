#!/usr/bin/env bash
# Prepares what every microVM sandbox boots (isolation/microvm/): Debian's cloud kernel, taken
# from its package without installing it on the host (apt-get download + dpkg-deb -x), and the
# base of the guest's initramfs: busybox (busybox-static), the virtio and EROFS modules that
# kernel builds as modules, and our init (src/isolation/microvm/guest-init.sh). The backend
# appends sandboxd to it at run time. Idempotent: a finished directory for the same kernel
# package version is left as it is.
#
# Usage: bash scripts/microvm-guest.sh [DEST]   (as root; DEST default
#        /var/lib/agent-sandbox/microvm; needs apt's access to Debian's archive)
#
# DEST afterwards: vmlinuz, initrd-base.cpio, kernel-release, package-version.
set -euo pipefail

DEST=${1:-/var/lib/agent-sandbox/microvm}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
INIT="$HERE/src/isolation/microvm/guest-init.sh"
META=linux-image-cloud-amd64
# Load order matters: each after what it depends on (modinfo's depends=).
MODULES=(drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_mmio
         drivers/char/virtio_console drivers/block/virtio_blk arch/x86/crypto/crc32c-intel
         lib/libcrc32c fs/erofs/erofs net/core/failover drivers/net/net_failover
         drivers/net/virtio_net)

for tool in apt-get apt-cache dpkg-deb cpio busybox; do
  command -v "$tool" >/dev/null || { echo "microvm-guest: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
BUSYBOX=$(command -v busybox)
if ! file -L "$BUSYBOX" 2>/dev/null | grep -q "statically linked"; then
  [[ -x /bin/busybox ]] && BUSYBOX=/bin/busybox
fi

PKG=$(apt-cache depends "$META" 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [[ -z "$PKG" ]]; then
  apt-get update -qq
  PKG=$(apt-cache depends "$META" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
fi
[[ -n "$PKG" ]] || { echo "microvm-guest: no kernel package behind $META" >&2; exit 1; }
VERSION=$(apt-cache policy "$PKG" | awk '/Candidate:/{print $2}')
STAMP="$PKG $VERSION $(sha256sum "$INIT" | cut -c1-16)"
if [[ -f "$DEST/package-version" && "$(cat "$DEST/package-version")" == "$STAMP" ]]; then
  echo "microvm-guest: $DEST is ready ($STAMP)"
  exit 0
fi

WORK=$(mktemp -d /var/tmp/asb-microvm-guest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
( cd "$WORK" && apt-get download -qq "$PKG" 2>/dev/null ) ||
  ( cd "$WORK" && chmod 777 "$WORK" && apt-get download -qq "$PKG" )
dpkg-deb -x "$WORK"/"$PKG"_*.deb "$WORK/pkg"
RELEASE=$(ls "$WORK/pkg/lib/modules")
mkdir -p "$WORK/initrd"/{bin,dev,proc,sys,modules,newroot}
cp "$BUSYBOX" "$WORK/initrd/bin/busybox"
for a in sh mount insmod cat cp echo mkdir sleep seq tr ip poweroff switch_root hostname; do
  ln -s busybox "$WORK/initrd/bin/$a"
done
for m in "${MODULES[@]}"; do
  f="$WORK/pkg/lib/modules/$RELEASE/kernel/$m.ko"
  [[ -f "$f" ]] || f="$f.xz"
  [[ -f "$f" ]] || { echo "microvm-guest: module $m missing in $PKG" >&2; exit 1; }
  cp "$f" "$WORK/initrd/modules/"
done
install -m 0755 "$INIT" "$WORK/initrd/init"
( cd "$WORK/initrd" && find . | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet ) \
  > "$WORK/initrd-base.cpio"

mkdir -p "$DEST.new"
cp "$WORK/pkg/boot/vmlinuz-$RELEASE" "$DEST.new/vmlinuz"
cp "$WORK/initrd-base.cpio" "$DEST.new/initrd-base.cpio"
echo "$RELEASE" > "$DEST.new/kernel-release"
echo "$STAMP" > "$DEST.new/package-version"
rm -rf "$DEST.old"
[[ -d "$DEST" ]] && mv "$DEST" "$DEST.old"
mv "$DEST.new" "$DEST"
rm -rf "$DEST.old"
echo "microvm-guest: $DEST ready: kernel $RELEASE ($STAMP)"
