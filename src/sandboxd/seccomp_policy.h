// The seccomp filter every user command runs under: a deny list at least as strict as Docker's
// default profile for an unprivileged container (moby/profiles/seccomp/default.json), compiled
// once at start-up with libseccomp into classic BPF and applied in each exec child with
// prctl(PR_SET_SECCOMP) after PR_SET_NO_NEW_PRIVS (seccomp(2), prctl(2)).
//
// Blocked calls fail with EPERM, except clone3, which fails with ENOSYS so that libc falls back
// to clone(2), whose flags (a register, unlike clone3's struct in memory) the filter can check.
// A syscall from a non-native ABI (i386 via int 0x80, x32) kills the process.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace asb::sandboxd {

/// A compiled filter. Copyable; the program points into `insns`.
class SeccompProgram {
 public:
  /// Compiles the policy. Errors: kInternal naming the libseccomp call that failed.
  static Result<SeccompProgram> Compile();

  /// Installs the filter on the calling thread (PR_SET_NO_NEW_PRIVS must already be set, or
  /// the caller must have CAP_SYS_ADMIN). Async-signal-safe: no allocation; for use between
  /// fork and exec. Returns 0 or an errno value.
  int InstallInChild() const;

  size_t instruction_count() const { return insns_.size() + personality_.size(); }

 private:
  static std::vector<sock_filter> PersonalityFilter();

  std::vector<sock_filter> insns_;        // libseccomp's program
  std::vector<sock_filter> personality_;  // the personality(2) value check (see .cc)
};

}  // namespace asb::sandboxd
