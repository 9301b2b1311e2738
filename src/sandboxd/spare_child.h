// SpareChild: one child of sandboxd forked ahead of the next command, already moved into the
// work cgroups, waiting for that command's ChildPlan.
//
// Why: a command must run in the work cgroups (exec_child.h, step 1b). That move was a write
// to cgroup.procs, which takes the kernel's cgroup_threadgroup_rwsem for writing and first waits
// for an RCU grace period (~11.5 ms here after a quiet moment). Commands now move themselves
// through `tasks` instead, which skips that lock (ADR 0029, update); the spare still saves the
// fork and the move, and keeps the wait away where a kernel or host takes the lock anyway. The
// spare is made right after the previous command took the last one, and the command is then
// its fork-free continuation.
//
// The spare keeps nothing of sandboxd's: right after fork it closes every fd but its control
// socket and the work cgroups' fds (a copy of another command's pipe end would hold that
// pipe open), moves itself, says so, takes the steps that need no request (ConfineAhead:
// signals, no_new_privs, the seccomp filter), then blocks on the socket. It is sandboxd's own
// child, so sandboxd watches and reaps the command exactly as one it forked. A spare killed
// meanwhile (a root command's kill -1, a files-only pause) is noticed at the next Take, which
// then answers nullopt: the caller forks as before.
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/unique_fd.h"
#include "sandboxd/exec_child.h"

namespace asb::sandboxd {

class SpareChild {
 public:
  /// `shared` gives what every command shares (seccomp program, work cgroup fds); the
  /// fds must outlive this object.
  explicit SpareChild(const ChildPlan& shared) : shared_(shared) {}
  ~SpareChild();
  SpareChild(const SpareChild&) = delete;
  SpareChild& operator=(const SpareChild&) = delete;

  /// Forks a spare when there is none. Failure (EAGAIN at the pids limit...) leaves none:
  /// commands are then forked as before.
  void Refill();

  /// Hands `plan` (argv, envp, cwd, user, the four fds) to the spare, which becomes the
  /// command. Returns its pid, or nullopt when there is no live spare, it has not yet said it
  /// is in the work cgroups (then a fork waits for nothing either), or the plan is too large
  /// for one message (kMaxPlanBytes): the caller forks as before. Call Refill afterwards (off
  /// the hot path); it does nothing while a spare is left.
  std::optional<pid_t> Take(const ChildPlan& plan);

  /// The largest argv + environment + cwd handed to a spare; larger ones are forked directly.
  static constexpr size_t kMaxPlanBytes = 64 * 1024;

 private:
  [[noreturn]] void RunSpare(int control_fd);

  ChildPlan shared_;
  UniqueFd control_;  // sandboxd's end of the spare's socket pair
  UniqueFd pidfd_;    // signals reach the spare, never a process that reused its pid
  pid_t pid_ = -1;
  bool ready_ = false;  // the spare said it is in the work cgroups
};

/// Remembers main's argv so that a spare can rename itself ("sandboxd-spare" in ps: it is not
/// sandboxd, and tools that look for sandboxd by its command line must not find it).
void SetProcessArgv(int argc, char** argv);

}  // namespace asb::sandboxd
