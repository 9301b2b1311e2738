#include "sandboxd/spare_child.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "sandboxd/fd_passing.h"

namespace asb::sandboxd {

namespace {

constexpr uint32_t kPlanMagic = 0x41535031;  // "ASP1"
constexpr int kPlanFds = 4;                  // stdin, stdout, stderr, error_fd

struct PlanHeader {
  uint32_t magic = kPlanMagic;
  uint32_t argc = 0;
  uint32_t envc = 0;
  uint8_t as_root = 0;
  uint8_t controlling_tty = 0;
};

char* g_argv_start = nullptr;
size_t g_argv_bytes = 0;

// Closes every fd from 3 up except those in `keep`.
void CloseAllBut(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned next = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > next) syscall(SYS_close_range, next, fd - 1u, 0u);
    next = static_cast<unsigned>(fd) + 1;
  }
  syscall(SYS_close_range, next, ~0u, 0u);
}

}  // namespace

void SetProcessArgv(int argc, char** argv) {
  if (argc <= 0 || argv == nullptr || argv[0] == nullptr) return;
  // The strings of argv are contiguous (execve(2) lays them out so): rename within them.
  g_argv_start = argv[0];
  g_argv_bytes = static_cast<size_t>(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]) + 1;
}

namespace {
void KillByPidfd(int pidfd) {
  if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0u);
}
}  // namespace

SpareChild::~SpareChild() {
  KillByPidfd(pidfd_.get());  // reaped (and ignored) by the daemon
}

void SpareChild::Refill() {
  if (pid_ > 0) return;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return;
  UniqueFd ours(sv[0]), theirs(sv[1]);
  const pid_t pid = fork();
  if (pid < 0) return;  // e.g. EAGAIN: the next command is forked directly
  if (pid == 0) {
    ours.Reset();
    RunSpare(theirs.get());
  }
  control_ = std::move(ours);
  pidfd_.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0u)));
  pid_ = pid;
}

std::optional<pid_t> SpareChild::Take(const ChildPlan& plan) {
  if (pid_ <= 0) return std::nullopt;
  if (!ready_) {
    // Ready once it says it has moved. Until then a fork is as fast (back-to-back commands keep
    // the kernel's cgroup lock in its fast state) and waits for nothing: leave the spare be.
    char byte;
    const ssize_t got = recv(control_.get(), &byte, 1, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {  // it died
      control_.Reset();
      pidfd_.Reset();
      pid_ = -1;
      return std::nullopt;
    }
    if (got < 0) return std::nullopt;
    ready_ = true;
  }
  PlanHeader h;
  h.as_root = plan.as_root;
  h.controlling_tty = plan.controlling_tty;
  std::string body(reinterpret_cast<const char*>(&h), sizeof h);
  body.append(plan.cwd).push_back('\0');
  for (char* const* a = plan.argv; *a != nullptr; ++a, ++h.argc) body.append(*a).push_back('\0');
  for (char* const* e = plan.envp; *e != nullptr; ++e, ++h.envc) body.append(*e).push_back('\0');
  if (body.size() > kMaxPlanBytes) return std::nullopt;  // the spare stays for the next one
  memcpy(body.data(), &h, sizeof h);

  const pid_t pid = std::exchange(pid_, -1);
  ready_ = false;
  UniqueFd sock = std::move(control_);
  UniqueFd pidfd = std::move(pidfd_);
  if (SendWithFds(sock.get(), body, {plan.stdin_fd, plan.stdout_fd, plan.stderr_fd, plan.error_fd},
                  MSG_DONTWAIT) != static_cast<ssize_t>(body.size())) {
    KillByPidfd(pidfd.get());  // gone already (EPIPE), or unable to take it: never half-used
    return std::nullopt;
  }
  return pid;
}

void SpareChild::RunSpare(int control_fd) {
  // Not sandboxd in ps (tests and tools look for sandboxd by its command line).
  prctl(PR_SET_NAME, "sandboxd-spare", 0, 0, 0);
  if (g_argv_start != nullptr && g_argv_bytes > 0) {
    static constexpr char kName[] = "sandboxd-spare";
    memset(g_argv_start, 0, g_argv_bytes);
    memcpy(g_argv_start, kName, std::min(sizeof kName - 1, g_argv_bytes - 1));
  }
  std::vector<int> keep = {control_fd};
  for (int i = 0; i < shared_.work_cgroup_fd_count; ++i) keep.push_back(shared_.work_cgroup_fds[i]);
  CloseAllBut(keep);
  // The slow part, off every command's path (see the header).
  for (int i = 0; i < shared_.work_cgroup_fd_count; ++i) {
    if (write(shared_.work_cgroup_fds[i], "0", 1) != 1) _exit(125);
    close(shared_.work_cgroup_fds[i]);
  }
  if (send(control_fd, "r", 1, MSG_NOSIGNAL) != 1) _exit(0);  // ready; sandboxd gone: done

  // Also off the path, though after "ready" (a request that comes meanwhile waits in the socket
  // for what the command would have done anyway, and a sandbox's first exec, right after its
  // start, still finds this spare rather than forking beside it): what needs no request (the
  // seccomp filters' JIT most of all), and the plan's buffer, zero-filled here rather than
  // page-faulted in after the request came. A failed step is taken again, and reported, by
  // RunExecChild.
  const bool confined = ConfineAhead(shared_.seccomp) == 0;
  static std::vector<char> buf(kMaxPlanBytes + 1);
  std::vector<UniqueFd> fds;
  const ssize_t n = RecvWithFds(control_fd, buf.data(), buf.size(), &fds, 0);
  if (n <= 0) _exit(0);  // sandboxd let this spare go (or is gone)
  PlanHeader h;
  if (static_cast<size_t>(n) < sizeof h || fds.size() != kPlanFds) _exit(125);
  memcpy(&h, buf.data(), sizeof h);
  close(control_fd);
  if (h.magic != kPlanMagic || buf[static_cast<size_t>(n) - 1] != '\0') _exit(125);

  // The strings follow the header, NUL-terminated: cwd, argv..., envp...
  std::vector<char*> strings;
  for (size_t at = sizeof h; at < static_cast<size_t>(n); at += strlen(&buf[at]) + 1) {
    strings.push_back(&buf[at]);
  }
  if (strings.size() != 1 + size_t{h.argc} + h.envc || h.argc == 0) _exit(125);
  std::vector<char*> argv(strings.begin() + 1, strings.begin() + 1 + h.argc);
  argv.push_back(nullptr);
  std::vector<char*> envp(strings.begin() + 1 + h.argc, strings.end());
  envp.push_back(nullptr);

  ChildPlan p = shared_;
  p.argv = argv.data();
  p.envp = envp.data();
  p.cwd = strings[0];
  p.as_root = h.as_root != 0;
  p.controlling_tty = h.controlling_tty != 0;
  p.stdin_fd = fds[0].get();  // kept open by `fds` until the exec (close-on-exec)
  p.stdout_fd = fds[1].get();
  p.stderr_fd = fds[2].get();
  p.error_fd = fds[3].get();
  p.work_cgroup_fds = nullptr;  // already there
  p.work_cgroup_fd_count = 0;
  p.confined_ahead = confined;
  RunExecChild(p);
}

}  // namespace asb::sandboxd
