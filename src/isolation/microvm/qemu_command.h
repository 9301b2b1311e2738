// QEMU's command line for a microVM sandbox (docs/adr/0025-microvm-backend.md), kept apart so
// that every flag has its reason beside it and tests can read it without starting QEMU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isolation/microvm/guest_images.h"

namespace asb::isolation::microvm {

/// Every path as QEMU sees it: inside its jail (qemu_jail.h) when jailed.
struct VmConfig {
  std::string name;  // -name: the sandbox id (what ps shows of the VM)
  GuestKernel kernel;
  std::string initrd;           // initramfs with sandboxd (GuestImages::Initrd)
  std::string rootfs_image;     // the template's EROFS image, attached read-only
  std::string workspace_image;  // the sandbox's ext4 workspace, read-write
  std::string config_image;     // sandboxd's config JSON, NUL-padded (SandboxdConfigJson)
  std::string socket;           // host end of the virtio-serial port (QEMU listens)
  std::string console_socket;   // the guest's serial console: QEMU listens (guest_console.h)
  std::string accel = "tcg";    // "kvm" or "tcg"
  uint64_t memory_mib = 512;    // the guest's RAM: the commands' limit plus kGuestReserveMib
  /// memory.max of the guest's cgroup of commands (the sandbox's memory limit, as on ns; the
  /// guest's tmpfs pages count in it, as the ns backend's do); 0: none (the RAM bounds them).
  uint64_t work_memory_bytes = 0;
  int vcpus = 1;
  std::string hostname = "sandbox";
  uint64_t tmp_bytes = 64ull << 20;  // the guest's /tmp tmpfs
  uint32_t pids_limit = 256;         // pids.max of the guest's cgroup of commands
  /// A networked sandbox: a virtio-net device on the tap device kNetTap of QEMU's network
  /// namespace, and the guest's address ("a.b.c.d/len"), gateway and MAC. Empty: no network.
  std::string net_address;
  std::string net_gateway;
  std::string net_mac;
};

/// The tap device QEMU opens in its network namespace (made there by the backend).
inline constexpr char kNetTap[] = "tap0";

/// TCG's translated-code cache, MiB: bounds that part of QEMU's memory (QEMU 7.2's default
/// reserves 1 GiB for it) so the VM fits its cgroup.
inline constexpr int kTcgCacheMib = 128;

/// The argv of a VM running `vm` (argv[0] is `qemu`).
std::vector<std::string> QemuCommand(const std::string& qemu, const VmConfig& vm);

/// The argv of a test boot: the guest kernel and base initramfs with asb.probe=1, which powers
/// off as soon as the modules load (exit status 0). Proves `accel` boots this kernel.
std::vector<std::string> ProbeCommand(const std::string& qemu, const GuestKernel& k,
                                      const std::string& accel);

}  // namespace asb::isolation::microvm
