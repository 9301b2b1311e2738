// The seccomp filter every user command runs under: a deny list at least as strict as Docker's
// default profile for an unprivileged container (moby/profiles/seccomp/default.json), compiled
// once at start-up with libseccomp into classic BPF and applied in each exec child with
// prctl(PR_SET_SECCOMP) after PR_SET_NO_NEW_PRIVS (seccomp(2), prctl(2)).
//
// Blocked calls fail with EPERM, except clone3, which fails with ENOSYS so that libc falls back
// to clone(2), whose flags (a register, unlike clone3's struct in memory) the filter can check.
// A syscall from a non-native ABI (i386 via int 0x80, x32) kills the process.
//
// socket(2) and socketpair(2) open only the families ordinary programs use: AF_UNIX, AF_INET,
// AF_INET6 and AF_NETLINK (ip, getifaddrs); AF_PACKET only when the operator allows raw packet
// capture (SeccompOptions). Every other family (AF_VSOCK: the hypervisor's agents on a VM host;
// AF_XDP, AF_KEY, AF_ALG, AF_BLUETOOTH, AF_TIPC, ... and families added by later kernels) fails
// with EAFNOSUPPORT, what a kernel built without that family answers, so programs that probe
// for one fall back as they would there (ADR 0014).
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace asb::isolation {

/// What an operator may allow beyond the default policy.
struct SeccompOptions {
  /// AF_PACKET sockets (tcpdump, arping); they still need CAP_NET_RAW, which only the
  /// sandbox's root holds, and see only the sandbox's own network namespace.
  bool allow_packet_sockets = false;
};

/// A compiled filter. Copyable; the program points into `insns`.
class SeccompProgram {
 public:
  /// Compiles the policy. Errors: kInternal naming the libseccomp call that failed.
  static Result<SeccompProgram> Compile(const SeccompOptions& options = {});

  /// Installs the filter on the calling thread (PR_SET_NO_NEW_PRIVS must already be set, or
  /// the caller must have CAP_SYS_ADMIN). Async-signal-safe: no allocation; for use between
  /// fork and exec. Returns 0 or an errno value.
  int InstallInChild() const;

  size_t instruction_count() const {
    return insns_.size() + personality_.size() + families_.size();
  }

 private:
  static std::vector<sock_filter> PersonalityFilter();
  static std::vector<sock_filter> SocketFamilyFilter(const SeccompOptions& options);

  std::vector<sock_filter> insns_;        // libseccomp's program
  std::vector<sock_filter> personality_;  // the personality(2) value check (see .cc)
  std::vector<sock_filter> families_;     // socket(2)/socketpair(2) family allow list
};

}  // namespace asb::isolation
