// Daemon: sandboxd's process-wide state and PID-1 duties. It owns the event loop, the listen
// socket and the host connections, reaps every child (SIGCHLD via signalfd, waitpid(-1)
// loop; children nobody watches, such as adopted orphans, are reaped and ignored), handles
// SIGTERM/SIGINT, and keeps background clean-up going after an operation is gone: pipes still
// held by a command's background children are drained into the void until EOF, and sessions
// that must die are re-scanned and SIGKILLed until empty.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "isolation/seccomp/seccomp_policy.h"
#include "sandboxd/event_loop.h"
#include "sandboxd/options.h"

namespace asb::sandboxd {

class Connection;
class ProcTable;
class SpareChild;
class SudoServer;

class Daemon {
 public:
  Daemon(Options options, std::unique_ptr<EventLoop> loop, isolation::SeccompProgram seccomp,
         UniqueFd workspace_fd);
  ~Daemon();

  /// Sets up signals (signalfd for SIGCHLD, SIGTERM, SIGINT), the child subreaper flag and the
  /// listen socket. Errors: those of the system calls.
  Status Init();
  /// Runs the event loop until asked to stop (SIGTERM/SIGINT without --pid1... see .cc).
  Status Run();

  EventLoop& loop() { return *loop_; }
  const Options& options() const { return options_; }
  /// The env.set operation (protocol/env_messages.h): every later command starts from
  /// DefaultEnv() overlaid with `env`. Errors: kInvalidArgument for an empty name, a name with
  /// '=' or NUL, or a value with NUL; nothing changes then.
  Status ReplaceEnv(const std::map<std::string, std::string>& env);
  const isolation::SeccompProgram& seccomp() const { return seccomp_; }
  /// O_PATH fd of the workspace directory. Re-opened (and the old one closed) when the
  /// directory at options().workspace is no longer the one it names: the host swapped another
  /// file system onto /workspace (an image rollback, docs/adr/0009), and file operations must
  /// reach the new one. Callers use the fd within the call, never keep it.
  int workspace_fd();

  /// Calls `on_exit(wait_status)` when child `pid` is reaped.
  void WatchChild(pid_t pid, std::function<void(int status)> on_exit);
  /// Stops watching `pid`; it is still reaped (and ignored) when it exits.
  void ForgetChild(pid_t pid);
  /// Keeps reading `fd` (a pipe read end) and discarding until EOF, then closes it.
  void DrainIntoVoid(UniqueFd fd);
  /// SIGKILLs session `sid` now and again every few ms until no live process of it is left.
  void KillSessionUntilGone(pid_t sid);

  /// The background processes (proc.* operations; proc_table.h).
  ProcTable& procs() { return *procs_; }
  /// The next command's pre-forked child (spare_child.h), or nullptr where commands have no
  /// work cgroups to join ahead of time.
  SpareChild* spare() { return spare_.get(); }

  /// Called by a connection that closed itself; it is destroyed after the current batch.
  void ConnectionClosed(Connection* conn);

 private:
  void OnSignal();
  void ReapChildren();
  void OnAccept();
  // Serves options_.port (a microVM's virtio-serial port) as the one connection, once the
  // host side is there; until then (a server restarting, which adopts the VM when it is back)
  // the port is tried again every kPortRetryMs.
  Status OpenPort();
  void OnPortTimer();
  void ArmPortTimer();
  static constexpr int kPortRetryMs = 200;
  void OnKillTimer();
  void ArmKillTimer();

  Options options_;
  std::unique_ptr<EventLoop> loop_;
  isolation::SeccompProgram seccomp_;
  UniqueFd workspace_fd_;
  UniqueFd signal_fd_;
  UniqueFd kill_timer_fd_;
  UniqueFd port_timer_fd_;           // microVM: when to try the port again
  Connection* port_conn_ = nullptr;  // microVM: the port's connection while it is served
  bool stop_ = false;
  std::unordered_map<pid_t, std::function<void(int)>> watched_;
  std::map<Connection*, std::unique_ptr<Connection>> connections_;
  std::map<int, UniqueFd> void_drains_;
  std::set<pid_t> doomed_sessions_;
  std::unique_ptr<ProcTable> procs_;
  std::unique_ptr<SudoServer> sudo_;  // with --sudo
  std::unique_ptr<SpareChild> spare_;
};

}  // namespace asb::sandboxd
