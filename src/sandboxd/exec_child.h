// The child side of an exec: what runs between fork() and execve() (nsjail's "...InChild"
// naming). sandboxd is single-threaded, so the child may allocate; it never returns.
//
// Order, and why (each step needs the privileges the later ones drop):
//   1. default signal dispositions and an empty mask (sandboxd blocks SIGCHLD/SIGTERM/SIGINT
//      and ignores SIGPIPE; a command must not inherit that);
//   1b. into the work cgroups (ChildPlan::work_cgroup_fds), so the command counts against the
//      sandbox's limits and never against sandboxd's headroom;
//      PR_SET_CHILD_SUBREAPER, so that orphans of the command (a double fork + setsid) stay
//      its descendants while it runs and its timeout or cancel reaches them;
//   2. setsid(): the command leads its own session and process group, so timeouts, SIGNAL and
//      CANCEL can reach all of it (and the session id finds processes that left the group);
//   3. stdin/stdout/stderr onto the pipes (or the PTY); every other fd is close-on-exec;
//   4. /proc/self/oom_score_adj = 0: sandboxd runs at -1000, its commands must be killable;
//   5. credentials: supplementary groups, gid, capability bounding set, ambient set, uid, then
//      the remaining capability sets (capabilities(7), "Effect of user ID changes");
//   6. chdir(cwd) as the target user, so a directory it cannot enter is refused;
//   7. PR_SET_NO_NEW_PRIVS, then the seccomp filter (seccomp(2) requires no_new_privs without
//      CAP_SYS_ADMIN);
//   8. execvp() with the command's environment; on failure "sandboxd: <prog>: command not found"
//      (exit 127) or "...: Permission denied" (126) on stderr, like a shell.
// A failure in steps 1-7 is written to `error_fd` as a ChildFailure and the child exits 125;
// the parent turns it into the exec's ERROR. A successful exec closes error_fd (O_CLOEXEC).
#pragma once

#include <cstdint>

#include "isolation/seccomp/seccomp_policy.h"

namespace asb::sandboxd {

struct ChildPlan {
  char* const* argv = nullptr;  // NULL-terminated
  char* const* envp = nullptr;  // NULL-terminated
  const char* cwd = "/";
  bool as_root = false;  // uid 0 with Docker's default capabilities; else uid/gid 1000
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool controlling_tty = false;  // stdin_fd is a PTY slave: make it the controlling terminal
  int error_fd = -1;
  const isolation::SeccompProgram* seccomp = nullptr;
  const int* work_cgroup_fds = nullptr;  // v1 `tasks` fds: "0" moves this thread
  int work_cgroup_fd_count = 0;
  /// The steps that need no request were done ahead (ConfineAhead, by a spare): signals,
  /// subreaper, no_new_privs and `seccomp`.
  bool confined_ahead = false;
};

/// The steps of RunExecChild that depend on no request, for a spare to take while it waits
/// (spare_child.h): default signal dispositions and an empty mask, PR_SET_CHILD_SUBREAPER,
/// no_new_privs, then `seccomp` (its filters are JIT-compiled as they are installed, a third of
/// a spare's time on the command's path before). The rest of RunExecChild needs no call the
/// filter blocks. Returns 0 or the errno of the failed step; async-signal-safe.
int ConfineAhead(const isolation::SeccompProgram* seccomp);

/// What the child reports through error_fd when it fails before exec.
struct ChildFailure {
  int32_t code = 0;  // an asb::ErrorCode
  int32_t sys_errno = 0;
  char message[240] = {};
};

[[noreturn]] void RunExecChild(const ChildPlan& plan);

/// Records the RLIMIT_NOFILE soft limit commands get back (sandboxd raises its own soft limit
/// to the hard limit at start-up so many concurrent execs never run out of fds; commands keep
/// the limit the backend gave the sandbox). Call once from main before anything forks.
void SetCommandNofileLimit(unsigned long soft);

}  // namespace asb::sandboxd
