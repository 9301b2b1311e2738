#!/bin/sh
# PID 1 of a microVM guest's initramfs (busybox sh; scripts/microvm-guest.sh packs it with the
# guest kernel's modules, the backend appends sandboxd). It loads the virtio modules (Debian's
# cloud kernel has them as modules), mounts the template's read-only EROFS disk as the new root,
# the workspace disk on /workspace and fresh /tmp, /proc, /sys, /dev, brings up loopback, and
# hands PID 1 to sandboxd on the virtio-serial port with its config from the config disk.
# Disks are found by their serial (asbroot, asbws, asbcfg), not by probe order. On any failure it says why on the console and powers the VM off, so the host
# sees the VM end instead of a silent hang. Kernel command line: asb.probe=1 only proves a boot.
export PATH=/bin
fail() {
  echo "asb-init: $*" > /dev/console
  poweroff -f
}
mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sys /sys || fail "mount /sys"
mount -t devtmpfs dev /dev || fail "mount /dev"
for m in virtio_ring virtio virtio_mmio virtio_console virtio_blk crc32c-intel libcrc32c erofs \
         failover net_failover virtio_net; do
  # crc32c-intel needs SSE4.2, which TCG's CPU lacks: its refusal is expected there.
  [ -e "/modules/$m.ko" ] && insmod "/modules/$m.ko" 2>/dev/null
done
case " $(cat /proc/cmdline) " in
  *" asb.probe=1 "*)
    echo "asb-init: probe ok" > /dev/console
    poweroff -f
    ;;
esac
disk() {  # the /dev node of the virtio disk whose serial is $1
  for i in $(seq 1 100); do
    for s in /sys/block/vd*/serial; do
      [ -e "$s" ] || continue
      if [ "$(cat "$s")" = "$1" ]; then
        d=${s%/serial}
        echo "/dev/${d##*/}"
        return 0
      fi
    done
    sleep 0.02
  done
  return 1
}
port() {  # the /dev node of the virtio-serial port named $1 (no udev here to link it); ports
          # appear a moment after the driver loads
  for i in $(seq 1 100); do
    for n in /sys/class/virtio-ports/*/name; do
      [ -e "$n" ] || continue
      if [ "$(cat "$n")" = "$1" ]; then
        d=${n%/name}
        [ -e "/dev/${d##*/}" ] || continue
        echo "/dev/${d##*/}"
        return 0
      fi
    done
    sleep 0.02
  done
  return 1
}
root=$(disk asbroot) || fail "no root disk"
channel=$(port asb0) || fail "no virtio-serial port asb0"
ws=$(disk asbws) || fail "no workspace disk"
cfg=$(disk asbcfg) || fail "no config disk"
mkdir -p /newroot
mount -t erofs -o ro "$root" /newroot || fail "mount root $root"
# Mount points a read-only root cannot gain now (templates get them when built).
for d in workspace tmp run proc sys dev; do
  [ -d "/newroot/$d" ] || fail "the template's root has no directory $d: build or import it again"
done
mount -t ext4 -o nosuid,nodev "$ws" /newroot/workspace || fail "mount workspace $ws"
mount -t tmpfs -o nosuid,nodev,mode=1777,size=${ASB_TMP_SIZE:-64m} tmpfs /newroot/tmp || fail "mount /tmp"
mount -t tmpfs -o nosuid,nodev,mode=0755,size=16m tmpfs /newroot/run || fail "mount /run"
mkdir -p /newroot/run/asb /newroot/run/lock
cp /sandboxd /newroot/run/asb/sandboxd || fail "copy sandboxd"
# The sandbox's sudo is sandboxd under that name (ADR 0028), over the template's placeholder.
if [ -f /newroot/usr/bin/sudo ] && [ ! -L /newroot/usr/bin/sudo ]; then
  mount --bind /newroot/run/asb/sandboxd /newroot/usr/bin/sudo || fail "bind sudo"
fi
# sandboxd's config (env, hostname): the disk's JSON without its NUL padding, read on fd 3.
tr -d '\000' < "$cfg" > /newroot/run/asb/config.json || fail "read the config disk"
ip link set lo up || fail "loopback"
# A networked sandbox (ASB_NET_ADDR=a.b.c.d/len, ASB_NET_GW): its virtio-net interface as eth0,
# its address and default route, the gateway's resolver in /etc/resolv.conf (the host's egress
# policy applies to that address, as to an ns sandbox's).
if [ -n "$ASB_NET_ADDR" ]; then
  ip link set eth0 up || fail "eth0"
  ip addr add "$ASB_NET_ADDR" dev eth0 || fail "eth0 address"
  ip route add default via "$ASB_NET_GW" || fail "default route"
  echo "nameserver $ASB_NET_GW" > /newroot/run/asb/resolv.conf
  if [ -f /newroot/etc/resolv.conf ] && [ ! -L /newroot/etc/resolv.conf ]; then
    mount --bind /newroot/run/asb/resolv.conf /newroot/etc/resolv.conf || fail "resolv.conf"
  fi
fi
mount --move /proc /newroot/proc || fail "move /proc"
mount --move /sys /newroot/sys || fail "move /sys"
mount --move /dev /newroot/dev || fail "move /dev"
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o nosuid,noexec,newinstance,ptmxmode=0666,mode=0620 devpts /newroot/dev/pts
mount -t tmpfs -o nosuid,nodev,size=64m tmpfs /newroot/dev/shm
# Commands run in a cgroup of their own below sandboxd, with the sandbox's pids and memory
# limits (the VM's RAM is that limit plus what the guest itself needs): sandboxd moves each
# command there before exec (fd 4). A command past the limit is OOM-killed inside that cgroup;
# sandboxd, outside it, lives on and reports it.
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /newroot/sys/fs/cgroup || fail "mount cgroup2"
mkdir /newroot/sys/fs/cgroup/work || fail "work cgroup"
echo +pids > /newroot/sys/fs/cgroup/cgroup.subtree_control || fail "pids controller"
echo +memory > /newroot/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
echo "${ASB_PIDS_MAX:-256}" > /newroot/sys/fs/cgroup/work/pids.max || fail "pids.max"
if [ -n "$ASB_MEMORY_MAX" ]; then
  if [ -e /newroot/sys/fs/cgroup/work/memory.max ]; then
    echo "$ASB_MEMORY_MAX" > /newroot/sys/fs/cgroup/work/memory.max || fail "memory.max"
  else
    # A kernel without the memory controller: the VM's RAM alone bounds the commands.
    echo "asb-init: no memory controller; the commands share the VM's RAM" > /dev/console
  fi
fi
hostname "${ASB_HOSTNAME:-sandbox}"
exec 3< /newroot/run/asb/config.json
exec 4> /newroot/sys/fs/cgroup/work/cgroup.procs
exec switch_root /newroot /run/asb/sandboxd --port="$channel" --workspace=/workspace \
  --config-fd=3 --work-cgroup-fd=4 --sudo
