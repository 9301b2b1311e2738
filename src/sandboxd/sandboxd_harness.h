// Test harness: runs the real sandboxd binary on the host (--no-pid1) against a fresh temp
// workspace, with a listening unix socket in a temp dir, and connects the real host client
// (protocol/client.h) to it. The destructor stops sandboxd (SIGTERM: it kills every command it
// started and exits), reaps it and removes the temp dirs.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "protocol/client.h"

namespace asb::sandboxd::testing {

class SandboxdProcess {
 public:
  /// Starts sandboxd; `config_json` (if not empty) is passed through --config-fd. With
  /// `as_pid1`, sandboxd runs as PID 1 of new pid+mount+uts namespaces (unshare(1) --fork
  /// --kill-child), without --no-pid1, as in a real sandbox.
  static Result<std::unique_ptr<SandboxdProcess>> Start(const std::string& config_json = "",
                                                        bool as_pid1 = false);
  ~SandboxdProcess();

  /// A new connection with a completed handshake.
  Result<std::shared_ptr<protocol::Connection>> Connect();

  const std::string& workspace() const { return workspace_; }
  const std::string& socket_path() const { return socket_path_; }
  /// The sandboxd process as seen from the host (for as_pid1: unshare's child).
  pid_t pid() const;
  /// True while the sandboxd process has not exited.
  bool Alive();

 private:
  SandboxdProcess() = default;
  std::string dir_;
  std::string workspace_;
  std::string socket_path_;
  pid_t pid_ = -1;  // the process we forked (sandboxd, or unshare for as_pid1)
  bool as_pid1_ = false;
};

/// A pids cgroup (v1 "pids" hierarchy, or v2 with the pids controller) holding one process,
/// removed again (process moved back to the root) by the destructor.
class PidsCgroup {
 public:
  /// Errors: kUnavailable when no pids controller is mounted.
  static Result<std::unique_ptr<PidsCgroup>> Create(pid_t pid, const std::string& max);
  ~PidsCgroup();
  Status SetMax(const std::string& max);

 private:
  std::string root_, path_;
};

/// Runs `cmd` through /bin/sh -c in the workspace and collects it (convenience for tests).
protocol::ExecRequest ShellRequest(const std::string& cmd);

/// Number of processes (any state) whose session id is `sid`, from /proc.
int CountSession(pid_t sid);
/// Zombie children of `pid`.
int CountZombieChildren(pid_t pid);
/// Live processes on the host whose command line contains `needle` (argv joined by spaces).
int CountProcessesMatching(const std::string& needle);
/// Live processes whose whole command line (argv joined by spaces) is exactly `cmdline`.
int CountProcessesWithCommandLine(const std::string& cmdline);
/// Polls `done` every 10 ms until it returns true or `timeout_ms` passes; returns its last
/// answer. For states a test cannot wait on directly, such as a shell that printed a line
/// before it forked or exec'd the processes a test counts.
bool WaitUntil(const std::function<bool()>& done, int timeout_ms = 5000);

/// Fixture: a fresh sandboxd (config env BASE_VAR=base, OVERRIDE_ME=old) and a connection.
class SandboxdTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  protocol::CollectedExec Run(const protocol::ExecRequest& req, std::string_view stdin_data = {});
  protocol::CollectedExec Sh(const std::string& cmd) { return Run(ShellRequest(cmd)); }
  /// Absolute host path of `rel` inside the workspace.
  std::string Ws(const std::string& rel) const { return proc_->workspace() + "/" + rel; }

  std::unique_ptr<SandboxdProcess> proc_;
  std::shared_ptr<protocol::Connection> conn_;
};

}  // namespace asb::sandboxd::testing
