#include "isolation/seccomp/seccomp_policy.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandboxd/testing/int80_probe.h"

namespace asb::isolation {
namespace {

// Runs `probe` in a child under the filter; returns its exit status (0 = all checks passed,
// else the number of the failed check).
int RunFiltered(const SeccompProgram& prog, int (*probe)()) {
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(100);
    if (prog.InstallInChild() != 0) _exit(101);
    _exit(probe());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(SeccompPolicyTest, Compiles) {
  auto p = SeccompProgram::Compile();
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_GT(p->instruction_count(), 50u);
}

TEST(SeccompPolicyTest, BlocksWhatDockerBlocksAndAllowsTheRest) {
  auto p = SeccompProgram::Compile();
  ASSERT_TRUE(p);
  int rc = RunFiltered(*p, [] {
    if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM) return 1;
    if (unshare(CLONE_NEWNS) != -1 || errno != EPERM) return 2;
    if (syscall(SYS_clone3, nullptr, 0) != -1 || errno != ENOSYS) return 3;
    if (syscall(SYS_keyctl, 0, 0, 0, 0, 0) != -1 || errno != EPERM) return 4;
    if (syscall(SYS_bpf, 0, nullptr, 0) != -1 || errno != EPERM) return 5;
    if (syscall(SYS_ptrace, 0, 0, 0, 0) != -1 || errno != EPERM) return 6;
    if (syscall(SYS_mount, "none", "/mnt", "tmpfs", 0, nullptr) != -1 || errno != EPERM) return 7;
    if (syscall(SYS_io_uring_setup, 1, nullptr) != -1 || errno != EPERM) return 8;
    char c = 'x';
    if (ioctl(0, TIOCSTI, &c) != -1 || errno != EPERM) return 9;
    if (personality(ADDR_NO_RANDOMIZE) != -1 || errno != EPERM) return 10;
    if (personality(0xffffffff) == -1) return 11;  // query: allowed
    if (personality(PER_LINUX) == -1) return 12;   // allowed
    // clone(2) with a namespace flag is refused; a plain fork still works.
    if (syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, 0) != -1 ||
        errno != EPERM) {
      return 13;
    }
    pid_t child = fork();
    if (child == 0) _exit(0);
    if (child < 0) return 14;
    int st;
    waitpid(child, &st, 0);
    if (getpid() <= 0) return 15;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed";
}

// ADR 0014: socket families no sandbox needs fail with EAFNOSUPPORT (the answer of
// a kernel without them), whatever the caller's privileges; the everyday ones still open.
int ProbeFamilies(bool packet_allowed) {
  auto refused = [](int family, int type) {
    errno = 0;
    int fd = socket(family, type | SOCK_CLOEXEC, 0);
    if (fd >= 0) close(fd);
    return fd < 0 && errno == EAFNOSUPPORT;
  };
  if (!refused(AF_VSOCK, SOCK_STREAM)) return 1;
  if (!refused(AF_XDP, SOCK_RAW)) return 2;
  if (!refused(AF_KEY, SOCK_RAW)) return 3;
  if (!refused(AF_ALG, SOCK_SEQPACKET)) return 4;
  if (!refused(AF_BLUETOOTH, SOCK_STREAM)) return 5;
  if (!refused(AF_TIPC, SOCK_RDM)) return 6;
  if (!refused(AF_UNSPEC, SOCK_STREAM)) return 7;
  if (!refused(46, SOCK_STREAM) || !refused(1000, SOCK_STREAM)) return 8;  // past AF_MAX
  // The kernel reads an int: high bits in the register do not smuggle AF_VSOCK through.
  errno = 0;
  long fd = syscall(SYS_socket, (1ul << 32) | AF_VSOCK, SOCK_STREAM, 0);
  if (fd >= 0 || errno != EAFNOSUPPORT) return 9;
  int sv[2];
  errno = 0;
  if (socketpair(AF_VSOCK, SOCK_STREAM, 0, sv) == 0 || errno != EAFNOSUPPORT) return 10;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return 11;
  close(sv[0]);
  close(sv[1]);
  for (int family : {AF_UNIX, AF_INET, AF_INET6}) {
    int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 && errno != EAFNOSUPPORT) return 12;  // (a host without IPv6 answers that)
    if (s < 0 && family != AF_INET6) return 12;
    if (s >= 0) close(s);
  }
  int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (nl < 0) return 13;
  close(nl);
  // AF_PACKET: refused by the filter unless allowed; allowed, the kernel decides (EPERM
  // without CAP_NET_RAW).
  errno = 0;
  int pk = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (pk >= 0) close(pk);
  if (!packet_allowed && (pk >= 0 || errno != EAFNOSUPPORT)) return 14;
  if (packet_allowed && pk < 0 && errno == EAFNOSUPPORT) return 15;
  return 0;
}

TEST(SeccompPolicyTest, SocketFamiliesOutsideTheAllowListFail) {
  auto p = SeccompProgram::Compile();
  ASSERT_TRUE(p) << p.error().ToString();
  int rc = RunFiltered(*p, [] { return ProbeFamilies(false); });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed";
  auto with_packet = SeccompProgram::Compile({.allow_packet_sockets = true});
  ASSERT_TRUE(with_packet);
  rc = RunFiltered(*with_packet, [] { return ProbeFamilies(true); });
  EXPECT_EQ(rc, 0) << "check " << rc << " failed (packet sockets allowed)";
}

TEST(SeccompPolicyTest, NonNativeAbisAreKilled) {
  auto p = SeccompProgram::Compile();
  ASSERT_TRUE(p);
  // x32: a native syscall number with the x32 bit set.
  int x32 = RunFiltered(*p, [] {
    syscall(0x40000000 | SYS_getpid);
    return 0;
  });
  EXPECT_EQ(x32, 200 + SIGSYS);
  // i386 through int 0x80 (getpid is 20 there). Where the kernel delivers it as a system call
  // the filter must kill with SIGSYS; where the kernel faults first (no IA32 emulation, as on
  // 6.18.44 here) the process dies of that fault. Exiting at all means the call went through.
  const int expected = asb::kernel_probe::ExpectedI386DeathSignal();
  ASSERT_GT(expected, 0) << "could not tell what this kernel does with int 0x80";
  int i386 = RunFiltered(*p, [] {
    long ret;
    asm volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    return 0;
  });
  EXPECT_EQ(i386, 200 + expected) << "int 0x80 without a filter: "
                                  << (expected == SIGSYS ? "a system call" : strsignal(expected));
  EXPECT_NE(i386, 0) << "an i386 system call went through the filter";
}

// The filter's i386 rule must hold where the kernel delivers i386 calls; a kernel that faults
// on int 0x80 cannot show it, and says so rather than passing silently.
TEST(SeccompPolicyTest, I386CallsReachTheFilterOnThisKernel) {
  int r = asb::kernel_probe::Int80WithoutFilter();
  if (r != 0) {
    GTEST_SKIP() << "this kernel does not deliver int 0x80 as a system call (the child died of "
                 << (r > 0 ? strsignal(r) : "an unknown cause")
                 << "), so no i386 call can reach the filter here";
  }
  auto p = SeccompProgram::Compile();
  ASSERT_TRUE(p);
  int i386 = RunFiltered(*p, [] {
    long ret;
    asm volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
    return 0;
  });
  EXPECT_EQ(i386, 200 + SIGSYS);
}

}  // namespace
}  // namespace asb::isolation
