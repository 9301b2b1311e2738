// The microvm backend (docs/adr/0025-microvm-backend.md): every sandbox is a QEMU `-M microvm`
// virtual machine with a kernel of its own. The template's root filesystem is a read-only EROFS
// disk shared by every VM of the template, the workspace is the sandbox's own ext4 image (the
// same kind the ns backend makes) as a second disk, /tmp is the guest's tmpfs, and the same
// statically linked sandboxd is the guest's PID 1, speaking the sandbox protocol over a
// virtio-serial port that QEMU joins to a unix socket on the host.
//
// QEMU takes KVM where a test boot proves it works and TCG (software) otherwise: on these
// machines /dev/kvm accepts only PVM guest kernels or is absent, so the device's presence
// proves nothing. QEMU itself runs jailed (qemu_jail.h, docs/adr/0026-qemu-jail.md): an
// unprivileged uid of its own in its own namespaces and an empty read-only root, born into
// the sandbox's cgroups. A networked VM's virtio-net device is a tap device in QEMU's network
// namespace, joined to the veth the host network gives that namespace, so the ns backend's
// egress policy, resolver and bandwidth limits apply unchanged. VMs outlive the server and are
// adopted by the next one; pause freezes a VM's cgroups. Not yet: pause to disk, memory
// snapshots, workspace image snapshots. A guest that stops answering its heartbeat is ended and
// reported, never waited on.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "isolation/backend.h"
#include "isolation/net/host_network.h"

namespace asb::isolation::microvm {

struct MicrovmOptions {
  /// Per-sandbox state: <state_dir>/<id>/{root/ (QEMU's jail root), vm/ (workspace.img,
  /// config.img, sandboxd.sock, console.sock: the jail's /vm), qemu.log}, and the image caches
  /// in <state_dir>/.images. Created 0700.
  std::string state_dir = "/var/lib/agent-sandbox/microvm-sandboxes";
  /// What scripts/microvm-guest.sh prepared: vmlinuz, initrd-base.cpio.
  std::string guest_dir = "/var/lib/agent-sandbox/microvm";
  /// sandboxd, statically linked: appended to the guest's initramfs.
  std::string sandboxd_path;
  std::string qemu_path = "/usr/bin/qemu-system-x86_64";
  /// "auto" (KVM if a test boot works, else TCG), "kvm" or "tcg".
  std::string accel = "auto";
  /// How long a create waits for the guest's sandboxd to answer; 0 picks by accelerator
  /// (60 s under TCG, 20 s under KVM).
  int64_t start_timeout_ms = 0;
  /// A running guest must answer a heartbeat within this (0 picks by accelerator: 30 s under
  /// TCG, 10 s under KVM) or its VM is ended and the sandbox fails with that reason. Sent
  /// every half of it, at most every 5 s.
  int64_t heartbeat_timeout_ms = 0;
  /// Our cgroup directory name in each hierarchy (the VMs' cgroups are <name>/<id>); differs
  /// from the ns backend's so that neither lists the other's sandboxes.
  std::string cgroup_name = "agent-sandbox-vm";
  /// QEMU's user namespace: a range of ns::kIdsPerSlot host ids per VM from this base, taken
  /// from the machine-wide registry the ns backend uses (ns::UidSlots), max_slots of them.
  uint32_t uid_range_base = 1'000'000'000;
  uint32_t max_slots = 16384;
  /// Networked sandboxes (ADR 0013); null: none. The server's one HostNetwork, the ns
  /// backend's too: addresses and veths go by uid slot, which the machine-wide registry keeps
  /// unique across both backends (they share uid_range_base).
  std::shared_ptr<net::HostNetwork> network;
};

/// Builds the backend: checks QEMU, the guest kernel and mkfs.erofs. The accelerator is picked
/// at first use (accelerator() or the first create; a test boot when KVM may work), so a server
/// that runs this backend beside another pays nothing for it at start. Errors: kUnavailable
/// naming what is missing.
Result<std::unique_ptr<Backend>> MakeMicrovmBackend(const MicrovmOptions& options);

}  // namespace asb::isolation::microvm
