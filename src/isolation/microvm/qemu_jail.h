// QEMU's jail (docs/adr/0026-qemu-jail.md), Firecracker's jailer in our terms: the VMM of a
// microVM sandbox runs through the ns backend's containment sequence (isolation/ns/contain.h)
// instead of as root on the host:
//  - a user namespace mapped to a host uid range of its own (ns::UidSlots, shared machine-wide
//    with the ns backend), QEMU as id kQemuIdInJail there: an unprivileged host uid that owns
//    nothing but this VM's files;
//  - new pid, mount, ipc, uts, cgroup and network namespaces (QEMU is PID 1 of its own);
//  - a root of our making, read-only, holding only the host's /usr (QEMU, its libraries and
//    firmware), /etc/ld.so.cache, a minimal /dev, a masked /proc, the guest's kernel, initramfs
//    and template image (read-only, /guest) and the sandbox's directory (read-write, /vm:
//    workspace and config disks, the protocol socket, the console socket);
//  - born into the sandbox's cgroups (memory = guest RAM + QEMU's overhead, pids, cpu);
//  - no_new_privs, a session of its own, then QEMU's own seccomp filter (-sandbox on).
// The host side reaches the VM only through the socket and the files in the sandbox directory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/ns/contain.h"

namespace asb::isolation::microvm {

/// QEMU's uid and gid inside its user namespace (host: the slot's first id + this). Not 0: the
/// process holds no capability even over its own namespaces.
inline constexpr uid_t kQemuIdInJail = 1;

/// Where the jail shows the sandbox's directory and the guest's read-only files.
inline constexpr char kJailVmDir[] = "/vm";
inline constexpr char kJailGuestDir[] = "/guest";

struct JailSpec {
  /// Host directory made into the jail's root (created; it holds only empty mount points).
  std::string root;
  /// Host directory bound read-write at kJailVmDir; must exist, owned by the jail's uid.
  std::string vm_dir;
  /// Host files bound read-only at kJailGuestDir/<name>: (host path, name).
  std::vector<std::pair<std::string, std::string>> guest_files;
  /// The QEMU binary on the host. Under /usr it runs from the bound /usr; elsewhere it is
  /// bound at /qemu (its libraries must then be in /usr).
  std::string qemu_path;
  /// Give the jail /dev/kvm (a node of our own, owned by the jail's uid).
  bool kvm = false;
  /// Give the jail /dev/net/tun (likewise), for the tap device of a networked VM.
  bool tun = false;
  /// First host id of the jail's user namespace range (ns::UidSlots).
  uint32_t host_id_base = 0;
  std::string hostname = "vm";
};

/// The host id QEMU runs as in a jail whose range starts at `host_id_base`.
inline uint32_t JailHostId(uint32_t host_id_base) { return host_id_base + kQemuIdInJail; }

/// Prepares `spec.root` (mount points; /lib, /lib64, /bin, /sbin as the host has them) and
/// returns the plan that starts `argv` (QEMU's, with paths as the jail sees them) in it with
/// stdout and stderr on `log_fd`. The caller starts it with ns::StartContainedChild and
/// writes the id maps (ns::WriteIdMapsFromParent with spec.host_id_base) from the parent.
/// Errors: FromErrno of making the mount points.
Result<ns::ChildPlan> PrepareQemuJail(const JailSpec& spec, std::vector<std::string> argv,
                                      int null_fd, int log_fd);

}  // namespace asb::isolation::microvm
