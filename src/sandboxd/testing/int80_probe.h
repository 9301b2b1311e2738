// What this host's kernel does with an i386 system call made through `int $0x80` from a 64-bit
// process, measured without any seccomp filter. Test-only (header-only, no dependencies).
//
// Why the tests need it: the seccomp filter kills a process that makes an i386 system call
// (SIGSYS), but the filter only ever sees the call when the kernel delivers it as a system
// call. Kernels with IA32 emulation do; a kernel booted with `ia32_emulation=0` (Linux 6.7+),
// built without IA32 emulation, or whose hypervisor does not forward the interrupt raises a
// general-protection fault instead, and the process dies of SIGSEGV before any filter runs
// (seen on 6.18.44 here). Either way no i386 call reaches the kernel. A test accepts exactly
// the outcome this kernel produces, and still fails when the call goes through.
#pragma once

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace asb::kernel_probe {

/// Forks a child that calls i386 getpid (eax = 20) through `int $0x80`, with no filter.
/// Returns 0 when the kernel ran it as a system call (it returned the child's pid), the signal
/// number when the child died of one (SIGSEGV on kernels that fault), -1 otherwise.
inline int Int80WithoutFilter() {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
    _exit(ret == static_cast<long>(getpid()) ? 0 : 1);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 0 ? 0 : -1;
  return WIFSIGNALED(st) ? WTERMSIG(st) : -1;
}

/// The signal a process making an i386 call must die of under our filter on this kernel:
/// SIGSYS where the kernel delivers the call to the filter, the fault's own signal where the
/// kernel faults first; -1 when the probe could not tell.
inline int ExpectedI386DeathSignal() {
  int r = Int80WithoutFilter();
  return r == 0 ? SIGSYS : r;
}

}  // namespace asb::kernel_probe
