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

// Puts the fds sandboxd needs on fixed numbers (0..4, and 7..8 for the work cgroups), keeps the
// binary and the report socket close-on-exec on 5 and 6, and closes everything else the server
// had open.
int ArrangeFdsInChild(const ChildPlan& p, int* report_fd, ChildFailure* f) {
  const int keep[] = {p.null_fd,           p.log_fd,   p.listen_fd,          p.config_fd,
                      p.sandboxd_fd,       *report_fd, p.work_cgroup_fds[0], p.work_cgroup_fds[1],
                      p.work_cgroup_fds[2]};
  constexpr int kKeep = sizeof keep / sizeof keep[0];
  int high = kSandboxdWorkCgroupFd0 + 3;
  for (int fd : keep) high = std::max(high, fd + 1);
  int moved[kKeep];
  for (int i = 0; i < kKeep; ++i) {
    moved[i] = keep[i] < 0 ? -1 : ::fcntl(keep[i], F_DUPFD_CLOEXEC, high);
    if (keep[i] >= 0 && moved[i] < 0) return Failed(f, "dup fd", errno);
  }
  if (::dup2(moved[0], 0) < 0 || ::dup2(moved[1], 1) < 0 || ::dup2(moved[1], 2) < 0 ||
      ::dup2(moved[2], kSandboxdListenFd) < 0 || ::dup2(moved[3], kSandboxdConfigFd) < 0 ||
      ::dup3(moved[4], 5, O_CLOEXEC) < 0 || ::dup3(moved[5], 6, O_CLOEXEC) < 0) {
    return Failed(f, "dup2", errno);
  }
  *report_fd = 6;
  // The work cgroups' cgroup.procs, inherited by sandboxd (it marks them close-on-exec).
  // (The backend passes them first to last with no gaps.)
  unsigned first_closed = kSandboxdWorkCgroupFd0;
  for (int i = 6; i < kKeep; ++i) {
    if (moved[i] < 0) continue;
    if (::dup2(moved[i], kSandboxdWorkCgroupFd0 + i - 6) < 0) return Failed(f, "dup2", errno);
    first_closed = static_cast<unsigned>(kSandboxdWorkCgroupFd0 + i - 6 + 1);
  }
  if (::syscall(SYS_close_range, first_closed, ~0u, 0u) != 0) {
    return Failed(f, "close_range", errno);
  }
  return 0;
}

// The child: one readable column of steps. Runs between clone and exec: no allocation, no
// exceptions, raw system calls only (the process is a single-threaded copy of a
// multi-threaded server, so libc locks may be held by threads that do not exist here).
// The server's signal handlers must not run in the child (they may write to the server's own
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

[[noreturn]] void ContainInChild(const ChildPlan& p, int report_fd, int parent_end) {
  ResetSignalsInChild();
  ::close(parent_end);
  char go = 0;
  // Wait until the parent has written the id maps.
  if (::read(report_fd, &go, 1) != 1 || go != 'g') ::_exit(126);

  ChildFailure f;
  int fd_report = report_fd;
  // 1. A cgroup namespace rooted at our own cgroups (we were born in them).
  if (::unshare(CLONE_NEWCGROUP) != 0) ReportAndExit(fd_report, {"unshare cgroup", nullptr, errno});
  // 2. Still host uid 0 (with capabilities only over the new namespaces): bind the template
  //    root, the workspace and the hostname file, which live in root-only host directories.
  if (BindHostPathsInChild(p.mounts, &f) != 0) ReportAndExit(fd_report, f);
  // 3. Root of the new user namespace (maps written by the parent): from here on, the host
  //    sees this process as the sandbox's unprivileged uid range.
  const char* step = nullptr;
  if (int e = BecomeRootInChild(&step)) ReportAndExit(fd_report, {step, nullptr, e});
  // 4. Own hostname, loopback up (the only interface in the new net namespace).
  if (::sethostname(p.hostname.data(), p.hostname.size()) != 0) {
    ReportAndExit(fd_report, {"sethostname", nullptr, errno});
  }
  if (BringUpLoopbackInChild(&f) != 0) ReportAndExit(fd_report, f);
  // 5. Fresh /proc /dev /sys /tmp, pivot_root, host tree detached, / read-only.
  if (BuildRootAndPivotInChild(p.mounts, &f) != 0) ReportAndExit(fd_report, f);
  // 6. Only the fds sandboxd needs.
  if (ArrangeFdsInChild(p, &fd_report, &f) != 0) ReportAndExit(fd_report, f);
  // 7. Resource limits, then no privilege gain through exec for anything below sandboxd.
  if (ApplyRlimitsInChild(p.rlimits, &f) != 0) ReportAndExit(fd_report, f);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    ReportAndExit(fd_report, {"PR_SET_NO_NEW_PRIVS", nullptr, errno});
  }
  // 8. sandboxd from the fd opened on the host (the binary is not inside the template).
  ::syscall(SYS_execveat, 5, "", p.argv.data(), p.envp.data(), AT_EMPTY_PATH);
  ReportAndExit(fd_report, {"execveat sandboxd", nullptr, errno});
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
               CLONE_NEWNET | CLONE_PIDFD;
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
  // The child either sends a failure record or execs sandboxd, which closes its end (EOF).
  struct pollfd pfd = {parent_end.get(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&pfd, 1, static_cast<int>(timeout_ms));
  } while (n < 0 && errno == EINTR);
  if (n == 0) return fail(Error::Timeout("sandbox child did not exec sandboxd in time"));
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
  if (got != 0) return fail(Error::Backend("malformed report from sandbox child"));
  return child;
}

}  // namespace asb::isolation::ns
