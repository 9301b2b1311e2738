#include "isolation/ns/contain.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "isolation/ns/child_step.h"
#include "isolation/ns/net.h"
#include "isolation/ns/user.h"

namespace asb::isolation::ns {

void ChildPlan::SetArgs(std::vector<std::string> args, std::vector<std::string> env) {
  argv_storage = std::move(args);
  envp_storage = std::move(env);
  argv.clear();
  envp.clear();
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envp_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
}

namespace {

// The failure record on the socketpair (SOCK_SEQPACKET: one record per message).
struct FailureRecord {
  char step[48];
  char path[200];
  int32_t err;
};

void CopyBounded(char* dst, size_t cap, const char* src) {
  size_t i = 0;
  if (src != nullptr) {
    for (; i + 1 < cap && src[i] != '\0'; ++i) dst[i] = src[i];
  }
  dst[i] = '\0';
}

[[noreturn]] void ReportAndExit(int report_fd, const ChildFailure& f) {
  FailureRecord rec;
  std::memset(&rec, 0, sizeof rec);
  CopyBounded(rec.step, sizeof rec.step, f.step);
  CopyBounded(rec.path, sizeof rec.path, f.path);
  rec.err = f.err;
  (void)!::write(report_fd, &rec, sizeof rec);
  ::_exit(127);
}

// Puts the planned fds on fixed numbers (0..4, and 7..9 for the work cgroups), keeps the
// program and the report socket close-on-exec on 5 and 6, and closes everything else the
// parent had open (a slot the plan leaves empty is closed too).
int ArrangeFdsInChild(const ChildPlan& p, int* report_fd, ChildFailure* f) {
  const int keep[] = {p.stdin_fd,           p.stdout_fd,         p.stderr_fd, p.listen_fd,
                      p.config_fd,          p.exec_fd,           *report_fd,  p.work_cgroup_fds[0],
                      p.work_cgroup_fds[1], p.work_cgroup_fds[2]};
  constexpr int kKeep = sizeof keep / sizeof keep[0];
  constexpr int kFirstWork = 7;  // index of work_cgroup_fds[0] in keep
  int high = kSandboxdWorkCgroupFd0 + 3;
  for (int fd : keep) high = std::max(high, fd + 1);
  int moved[kKeep];
  for (int i = 0; i < kKeep; ++i) {
    moved[i] = keep[i] < 0 ? -1 : ::fcntl(keep[i], F_DUPFD_CLOEXEC, high);
    if (keep[i] >= 0 && moved[i] < 0) return Failed(f, "dup fd", errno);
  }
  // Slots 0..6: the inherited ones (0..4) stay open across exec, 5 and 6 are close-on-exec.
  for (int slot = 0; slot < kFirstWork; ++slot) {
    if (moved[slot] < 0) {
      ::close(slot);
      continue;
    }
    const int flags = slot >= 5 ? O_CLOEXEC : 0;
    if (::dup3(moved[slot], slot, flags) < 0) return Failed(f, "dup2", errno);
  }
  *report_fd = 6;
  // The work cgroups' `tasks`, inherited by sandboxd (it marks them close-on-exec).
  // (The backend passes them first to last with no gaps.)
  unsigned first_closed = kSandboxdWorkCgroupFd0;
  for (int i = kFirstWork; i < kKeep; ++i) {
    if (moved[i] < 0) continue;
    const int target = kSandboxdWorkCgroupFd0 + i - kFirstWork;
    if (::dup2(moved[i], target) < 0) return Failed(f, "dup2", errno);
    first_closed = static_cast<unsigned>(target + 1);
  }
  if (::syscall(SYS_close_range, first_closed, ~0u, 0u) != 0) {
    return Failed(f, "close_range", errno);
  }
  return 0;
}

// The child: one readable column of steps. Runs between clone and exec: no allocation, no
// exceptions, raw system calls only (the process is a single-threaded copy of a
// multi-threaded server, so libc locks may be held by threads that do not exist here).
// The parent's signal handlers must not run in the child (they may write to the server's own
// wake-up fds): all signals arrive blocked from the parent; reset every handler to the
// default, then unblock (sigaction(2), sigprocmask(2): both async-signal-safe).
void ResetSignalsInChild() {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) (void)::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// The credentials of the planned user (setgroups first: it needs the namespace's root).
int SetIdsInChild(const ChildPlan& p, ChildFailure* f) {
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return Failed(f, "setgroups", errno);
  if (::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0) return Failed(f, "setresgid", errno);
  if (::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) return Failed(f, "setresuid", errno);
  return 0;
}

// The program: from the fd opened on the host, or the first of exec_paths that exists.
int ExecInChild(const ChildPlan& p, ChildFailure* f) {
  if (p.exec_fd >= 0) {
    ::syscall(SYS_execveat, 5, "", p.argv.data(), p.envp.data(), AT_EMPTY_PATH);
    return Failed(f, "execveat", errno, p.argv[0]);
  }
  int err = ENOENT;
  for (const auto& path : p.exec_paths) {
    ::execve(path.c_str(), p.argv.data(), p.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
    if (err != ENOENT) break;
  }
  return Failed(f, "exec", err, p.argv[0]);
}

[[noreturn]] void ContainInChild(const ChildPlan& p, int report_fd, int parent_end) {
  ResetSignalsInChild();
  ::close(parent_end);
  if (p.die_with_parent) (void)::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (p.new_session) (void)::setsid();
  char go = 0;
  // Wait until the parent has written the id maps.
  if (::read(report_fd, &go, 1) != 1 || go != 'g') ::_exit(126);

  ChildFailure f;
  int fd_report = report_fd;
  // 1. A cgroup namespace rooted at our own cgroups (we were born in them).
  if (::unshare(CLONE_NEWCGROUP) != 0) ReportAndExit(fd_report, {"unshare cgroup", nullptr, errno});
  // 2. Still host uid 0 (with capabilities only over the new namespaces): bind the root and
  //    the workspace, which live in root-only host directories.
  if (BindHostPathsInChild(p.mounts, &f) != 0) ReportAndExit(fd_report, f);
  // 3. Root of the new user namespace (maps written by the parent): from here on, the host
  //    sees this process as the ids the parent mapped.
  const char* step = nullptr;
  if (int e = BecomeRootInChild(&step)) ReportAndExit(fd_report, {step, nullptr, e});
  // 4. Own hostname; loopback up (the only interface of a new net namespace).
  if (::sethostname(p.hostname.data(), p.hostname.size()) != 0) {
    ReportAndExit(fd_report, {"sethostname", nullptr, errno});
  }
  if (p.own_network && BringUpLoopbackInChild(&f) != 0) ReportAndExit(fd_report, f);
  // 5. Fresh /proc /dev (/sys /tmp), pivot_root, host tree detached, / read-only if planned.
  if (BuildRootAndPivotInChild(p.mounts, &f) != 0) ReportAndExit(fd_report, f);
  // 6. The working directory, then the planned user.
  if (::chdir(p.workdir.c_str()) != 0)
    ReportAndExit(fd_report, {"chdir", p.workdir.c_str(), errno});
  if (p.set_ids && SetIdsInChild(p, &f) != 0) ReportAndExit(fd_report, f);
  // 7. Only the planned fds.
  if (ArrangeFdsInChild(p, &fd_report, &f) != 0) ReportAndExit(fd_report, f);
  // 8. Resource limits, then no privilege gain through exec, then the syscall filter.
  if (ApplyRlimitsInChild(p.rlimits, &f) != 0) ReportAndExit(fd_report, f);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ReportAndExit(fd_report, {"PR_SET_NO_NEW_PRIVS", nullptr, errno});
  }
  if (p.install_seccomp) {
    if (int e = p.install_seccomp()) ReportAndExit(fd_report, {"seccomp", nullptr, e});
  }
  // 9. The program.
  ExecInChild(p, &f);
  ReportAndExit(fd_report, f);
}

void KillAndReap(pid_t pid, int pidfd) {
  if (pidfd >= 0) {
    ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  } else {
    ::kill(pid, SIGKILL);
  }
  while (::waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<ChildProcess> StartContainedChild(const ChildPlan& plan, CloneIntoCgroups& cgroups,
                                         const std::function<Status(pid_t)>& prepare_from_parent,
                                         int64_t timeout_ms) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return FailErrno("socketpair");
  }
  UniqueFd parent_end(sv[0]);
  UniqueFd child_end(sv[1]);

  int pidfd = -1;
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS |
               CLONE_PIDFD | (plan.own_network ? CLONE_NEWNET : 0);
  args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroups.cgroup2_fd() >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroups.cgroup2_fd());
  }
  ASB_TRY_CTX(cgroups.Enter(), "enter cgroups");
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);  // no handler may run in the child
  long rc = ::syscall(SYS_clone3, &args, sizeof args);
  if (rc == 0) ContainInChild(plan, child_end.get(), parent_end.get());
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  cgroups.Leave();  // the parent thread goes back at once, whatever happened
  if (rc < 0) return Fail(Error::FromErrno(ErrorCode::kBackend, clone_errno, "clone3"));

  ChildProcess child;
  child.pid = static_cast<pid_t>(rc);
  child.pidfd.Reset(pidfd);
  child_end.Reset();
  auto fail = [&](Error e) -> Result<ChildProcess> {
    KillAndReap(child.pid, child.pidfd.get());
    return Fail(std::move(e));
  };

  if (auto st = prepare_from_parent(child.pid); !st) return fail(st.error());
  if (::write(parent_end.get(), "g", 1) != 1) {
    return fail(Error::FromErrno(ErrorCode::kBackend, errno, "release child"));
  }
  // The child either sends a failure record or execs, which closes its end (EOF).
  struct pollfd pfd = {parent_end.get(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&pfd, 1, static_cast<int>(timeout_ms));
  } while (n < 0 && errno == EINTR);
  if (n == 0) return fail(Error::Timeout("contained child did not exec in time"));
  if (n < 0) return fail(Error::FromErrno(ErrorCode::kBackend, errno, "poll child"));
  FailureRecord rec;
  ssize_t got;
  do {
    got = ::read(parent_end.get(), &rec, sizeof rec);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof rec)) {
    rec.step[sizeof rec.step - 1] = '\0';
    rec.path[sizeof rec.path - 1] = '\0';
    std::string what = rec.step;
    if (rec.path[0] != '\0') what += std::string(" ") + rec.path;
    return fail(Error::FromErrno(ErrorCode::kBackend, rec.err, what));
  }
  if (got != 0) return fail(Error::Backend("malformed report from contained child"));
  return child;
}

Result<int> WaitChildExit(const ChildProcess& child) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  while (::waitid(P_PIDFD, static_cast<id_t>(child.pidfd.get()), &info, WEXITED) != 0) {
    if (errno != EINTR) return FailErrno("waitid");
  }
  if (info.si_code == CLD_EXITED) return info.si_status;
  return 128 + info.si_status;  // CLD_KILLED, CLD_DUMPED
}

}  // namespace asb::isolation::ns
