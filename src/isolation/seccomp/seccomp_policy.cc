#include "isolation/seccomp/seccomp_policy.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iterator>
#include <memory>

#include "common/unique_fd.h"

namespace asb::isolation {

namespace {

// Groups of calls an unprivileged container never needs, each with the reason Docker's
// default profile blocks it. All fail with EPERM.
constexpr const char* kBlocked[] = {
    // Accounting, clocks and system-wide state owned by the host.
    "acct",
    "clock_adjtime",
    "clock_settime",
    "settimeofday",
    "stime",
    "adjtimex",
    "reboot",
    "swapon",
    "swapoff",
    "sysfs",
    "_sysctl",
    "syslog",
    "vhangup",
    "ustat",
    "uselib",
    "nfsservctl",
    "lookup_dcookie",
    "quotactl",
    "quotactl_fd",
    // Kernel modules and replacing the kernel.
    "create_module",
    "delete_module",
    "init_module",
    "finit_module",
    "get_kernel_syms",
    "query_module",
    "kexec_load",
    "kexec_file_load",
    // The kernel keyring is not namespaced: keys would leak between sandboxes.
    "add_key",
    "keyctl",
    "request_key",
    // eBPF, perf and userfaultfd: large kernel attack surface, used in many exploits.
    "bpf",
    "perf_event_open",
    "userfaultfd",
    // io_uring bypasses this very filter (its operations are not syscalls).
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    // Mounts and namespaces: the sandbox's file-system view and isolation are fixed.
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setns",
    "unshare",
    // File handles bypass path-based checks (the "shocker" container escape).
    "name_to_handle_at",
    "open_by_handle_at",
    // Inspecting or writing other processes' memory; kernel pointer comparison.
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "process_madvise",
    // Raw port I/O and NUMA policy calls (host hardware; NUMA calls are Docker-blocked).
    "iopl",
    "ioperm",
    "get_mempolicy",
    "set_mempolicy",
    "mbind",
    "move_pages",
    "set_mempolicy_home_node",
    // Legacy/obscure calls Docker blocks.
    "vm86",
    "vm86old",
    "afs_syscall",
    "bdflush",
    "break",
    "ftime",
    "gtty",
    "stty",
    "lock",
    "mpx",
    "prof",
    "profil",
    "putpmsg",
    "getpmsg",
    "security",
    "tuxcall",
    "vserver",
};

// Namespace-creating clone flags. CLONE_NEWTIME (0x80) shares its bit with clone's exit-signal
// field, so it cannot be checked on clone(2); clone3 is refused altogether and unshare/setns
// are blocked, which covers it.
constexpr unsigned long kCloneNewFlags[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
};

// personality(2) values Docker allows: the default domain, PER_LINUX32 (for `linux32`),
// UNAME26 variants, and the 0xffffffff query.
constexpr uint32_t kPersonalityAllowed[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

struct CtxDeleter {
  void operator()(scmp_filter_ctx c) const { seccomp_release(c); }
};

Error SeccompError(int rc, std::string_view what) {
  return Error::FromErrno(ErrorCode::kInternal, -rc, std::string("seccomp: ") + std::string(what));
}

}  // namespace

Result<SeccompProgram> SeccompProgram::Compile(const SeccompOptions& options) {
  std::unique_ptr<void, CtxDeleter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return Fail(Error::Internal("seccomp: seccomp_init failed"));
  int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return Fail(SeccompError(rc, "set bad-arch action"));
  // No native-only filters for x32: libseccomp's x86_64 filter already sends syscall numbers
  // with the x32 bit to the bad-arch action.

  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kBlocked) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a syscall on this architecture
    rc = seccomp_rule_add(ctx.get(), eperm, nr, 0);
    if (rc != 0 && rc != -EDOM) return Fail(SeccompError(rc, std::string("block ") + name));
  }

  // clone(2): refuse any namespace flag (flags are the first argument on x86_64).
  for (unsigned long flag : kCloneNewFlags) {
    rc = seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
    if (rc != 0) return Fail(SeccompError(rc, "clone flags rule"));
  }
  // clone3(2): its flags live in memory, out of a filter's reach; ENOSYS makes glibc fall back.
  rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc != 0) return Fail(SeccompError(rc, "clone3 rule"));

  // ioctl(2): TIOCSTI pushes input into a terminal (escapes to the controlling shell) and
  // TIOCLINUX can do the same on a virtual console. Compare the low 32 bits of the request.
  for (unsigned long req :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    rc = seccomp_rule_add(ctx.get(), eperm, SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, req));
    if (rc != 0) return Fail(SeccompError(rc, "ioctl rule"));
  }

  // Export the BPF through a memfd (libseccomp 2.5 exports only to an fd).
  UniqueFd mem(memfd_create("seccomp-bpf", MFD_CLOEXEC));
  if (!mem) return FailErrno("seccomp: memfd_create");
  rc = seccomp_export_bpf(ctx.get(), mem.get());
  if (rc != 0) return Fail(SeccompError(rc, "export bpf"));
  off_t size = lseek(mem.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    return Fail(Error::Internal("seccomp: exported program has a bad size"));
  }
  SeccompProgram p;
  p.insns_.resize(static_cast<size_t>(size) / sizeof(sock_filter));
  if (pread(mem.get(), p.insns_.data(), static_cast<size_t>(size), 0) != size) {
    return FailErrno("seccomp: read exported program");
  }
  p.personality_ = PersonalityFilter();
  p.families_ = SocketFamilyFilter(options);
  return p;
}

// personality(2): only the values Docker allows (e.g. no ADDR_NO_RANDOMIZE, which weakens
// ASLR, and no READ_IMPLIES_EXEC). "Allow only these values" needs several comparisons of one
// argument in one rule, which libseccomp 2.5 refuses (EINVAL), so this rule is a second,
// hand-written filter stacked on the first (seccomp(2): every filter runs, the most
// restrictive action wins). The kernel reads the argument as an unsigned int, so the low 32
// bits are what counts. The first filter already kills non-native architectures.
std::vector<sock_filter> SeccompProgram::PersonalityFilter() {
  constexpr uint32_t kNr = offsetof(seccomp_data, nr);
  constexpr uint32_t kArg0Low = offsetof(seccomp_data, args[0]);  // little-endian low word
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 7),  // not personality: allow
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low),
  };
  // Five equality tests, each jumping to the final ALLOW on a match.
  for (size_t i = 0; i < std::size(kPersonalityAllowed); ++i) {
    uint8_t to_allow = static_cast<uint8_t>(std::size(kPersonalityAllowed) - i);
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kPersonalityAllowed[i]),
                         to_allow, 0));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

// socket(2), socketpair(2): an allow list of address families, which libseccomp 2.5 cannot
// express (several comparisons of one argument in one rule), so hand-written like the
// personality filter. The kernel reads the family as an int: the low 32 bits are compared, so
// high bits set in the register cannot slip a family past the list.
std::vector<sock_filter> SeccompProgram::SocketFamilyFilter(const SeccompOptions& options) {
  constexpr uint32_t kNr = offsetof(seccomp_data, nr);
  constexpr uint32_t kArg0Low = offsetof(seccomp_data, args[0]);
  std::vector<uint32_t> allowed = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};
  if (options.allow_packet_sockets) allowed.push_back(AF_PACKET);
  const auto n = static_cast<uint8_t>(allowed.size());
  std::vector<sock_filter> f = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kNr),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socketpair, 0, static_cast<uint8_t>(n + 2)),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low),
  };
  for (uint8_t i = 0; i < n; ++i) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], static_cast<uint8_t>(n - i), 0));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA)));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

int SeccompProgram::InstallInChild() const {
  for (const auto* insns : {&insns_, &personality_, &families_}) {
    sock_fprog prog{};
    prog.len = static_cast<unsigned short>(insns->size());
    prog.filter = const_cast<sock_filter*>(insns->data());
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) return errno;
  }
  return 0;
}

}  // namespace asb::isolation
