#include "sandboxd/launch.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include "sandboxd/daemon.h"
#include "sandboxd/exec_child.h"
#include "sandboxd/pipes.h"
#include "sandboxd/spare_child.h"

namespace asb::sandboxd {

namespace {
constexpr char kCanonicalWorkspace[] = "/workspace";
}  // namespace

Result<LaunchedCommand> LaunchCommand(Daemon& daemon, const protocol::ExecRequest& req,
                                      const int* inherited_stdio) {
  const Options& opt = daemon.options();
  // ---- validate and build everything the child needs (the child only reads it) ----
  std::vector<std::string> args;
  if (req.command.has_value() == !req.argv.empty()) {
    return Fail(Error::InvalidArgument("exec: exactly one of argv and command is required"));
  }
  if (req.command) {
    args = {"/bin/sh", "-c", *req.command};
  } else {
    args = req.argv;
  }
  bool as_root;
  if (req.user == protocol::kUserSandbox) {
    as_root = false;
  } else if (req.user == protocol::kUserRoot) {
    as_root = true;
  } else {
    return Fail(
        Error::InvalidArgument("exec: unknown user \"" + req.user + "\" (sandbox or root)"));
  }
  for (const auto& a : args) {
    if (a.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("exec: argument contains a NUL byte"));
    }
  }
  std::map<std::string, std::string> env = opt.env;
  // USER names the identity the command runs as (environ(7)); HOME stays /workspace for root
  // too, because /root is on the template's read-only rootfs. The request's env still wins.
  if (as_root) env["USER"] = "root";
  if (req.pty && !inherited_stdio) env["TERM"] = "xterm-256color";
  for (const auto& [k, v] : req.env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
        v.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("exec: invalid environment variable name or value"));
    }
    env[k] = v;
  }
  std::string cwd = req.cwd;
  if (cwd.empty() || cwd == ".") {
    cwd = opt.workspace;
  } else if (cwd[0] != '/') {
    cwd = opt.workspace + "/" + cwd;
  } else if (cwd == kCanonicalWorkspace ||
             cwd.rfind(std::string(kCanonicalWorkspace) + "/", 0) == 0) {
    // The canonical in-sandbox path; differs from opt.workspace only in host-side tests.
    cwd = opt.workspace + cwd.substr(sizeof kCanonicalWorkspace - 1);
  }

  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv_ptrs, env_ptrs;
  for (auto& a : args) argv_ptrs.push_back(a.data());
  argv_ptrs.push_back(nullptr);
  for (auto& e : env_strings) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);

  // ---- fds ----
  LaunchedCommand out;
  UniqueFd child_in, child_out, child_err;
  if (inherited_stdio) {
    // Used as they are; the child dup2()s them onto 0-2 (ChildPlan).
  } else if (req.pty) {
    UniqueFd master(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!master) return FailErrno("exec: open /dev/ptmx");
    if (grantpt(master.get()) != 0 || unlockpt(master.get()) != 0) {
      return FailErrno("exec: unlockpt");
    }
    char name[128];
    if (ptsname_r(master.get(), name, sizeof name) != 0) return FailErrno("exec: ptsname");
    UniqueFd slave(open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave) return FailErrno("exec: open pty slave");
    winsize ws{};
    ws.ws_col = req.pty->cols;
    ws.ws_row = req.pty->rows;
    ioctl(master.get(), TIOCSWINSZ, &ws);
    out.stdout_read.Reset(fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
    out.stdin_write.Reset(fcntl(master.get(), F_DUPFD_CLOEXEC, 3));
    if (!out.stdout_read || !out.stdin_write) return FailErrno("exec: dup pty master");
    out.pty_master = std::move(master);
    child_out.Reset(fcntl(slave.get(), F_DUPFD_CLOEXEC, 3));
    child_err.Reset(fcntl(slave.get(), F_DUPFD_CLOEXEC, 3));
    child_in = std::move(slave);
    if (!child_out || !child_err) return FailErrno("exec: dup pty slave");
  } else {
    if (!MakePipe(&out.stdout_read, &child_out)) return FailErrno("exec: pipe");
    if (!MakePipe(&out.stderr_read, &child_err)) return FailErrno("exec: pipe");
    if (req.stdin_pipe) {
      if (!MakePipe(&child_in, &out.stdin_write)) return FailErrno("exec: pipe");
    } else {
      child_in.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!child_in) return FailErrno("exec: open /dev/null");
    }
  }
  UniqueFd child_error_write;
  if (!MakePipe(&out.error_fd, &child_error_write)) return FailErrno("exec: pipe");

  ChildPlan plan;
  plan.argv = argv_ptrs.data();
  plan.envp = env_ptrs.data();
  plan.cwd = cwd.c_str();
  plan.as_root = as_root;
  plan.stdin_fd = inherited_stdio ? inherited_stdio[0] : child_in.get();
  plan.stdout_fd = inherited_stdio ? inherited_stdio[1] : child_out.get();
  plan.stderr_fd = inherited_stdio ? inherited_stdio[2] : child_err.get();
  // An inherited terminal is the controlling terminal of the caller's session already.
  plan.controlling_tty = req.pty.has_value() && !inherited_stdio;
  plan.error_fd = child_error_write.get();
  plan.seccomp = &daemon.seccomp();
  plan.work_cgroup_fds = opt.work_cgroup_fds.data();
  plan.work_cgroup_fd_count = static_cast<int>(opt.work_cgroup_fds.size());

  // The spare, already in the work cgroups, becomes the command (spare_child.h); a new one is
  // forked after this batch of the event loop, off the command's path.
  std::optional<pid_t> spare;
  if (SpareChild* s = daemon.spare()) {
    spare = s->Take(plan);
    daemon.loop().Defer([&daemon] {
      if (SpareChild* again = daemon.spare()) again->Refill();
    });
  }
  pid_t pid = spare ? *spare : fork();
  if (pid < 0) {
    // EAGAIN: the sandbox's pids limit (or RLIMIT_NPROC) is exhausted -> limit_exceeded.
    return Fail(Error::FromErrno(errno, "fork"));
  }
  if (pid == 0) RunExecChild(plan);  // never returns
  out.pid = pid;
  // The child's ends close here (our copies), so EOF follows the child's last close.
  return out;
}

std::optional<Error> ReadChildFailure(int error_fd) {
  ChildFailure f;
  ssize_t n;
  do {
    n = read(error_fd, &f, sizeof f);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof f)) return std::nullopt;  // EOF: execve succeeded
  f.message[sizeof f.message - 1] = '\0';
  return Error(static_cast<ErrorCode>(f.code), f.message, f.sys_errno);
}

}  // namespace asb::sandboxd
