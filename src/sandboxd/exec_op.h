// ExecOp: the "exec" operation (docs/ARCHITECTURE.md, "Running a command";
// docs/design/sandbox-protocol.md, section 7).
//
// Life of an exec:
//   Start      validate, build argv/env/cwd, create pipes, fork; the child runs RunExecChild.
//   starting   wait on the CLOEXEC error pipe: EOF = the program was exec'd (send INFO pid and
//              start pumping output); a ChildFailure = ERROR (e.g. not_found for a missing cwd).
//   running    stdout/stderr -> DATA under window and caps; host stdin -> pipe; SIGNAL -> the
//              process group; timeout -> SIGTERM to the group, SIGKILL to the whole session
//              after kill_grace_ms (or as soon as the leader is gone), repeated until empty.
//   finishing  once the leader is reaped and the output it left in the pipes is sent, EOF both
//              streams and send RESULT. Pipes still held open by background children are
//              drained into the void by the daemon (closing them would SIGPIPE a server).
// CANCEL or a lost connection SIGKILLs the whole session. Both kills also reach the sessions
// that the command's still-attached descendants created with setsid(2) (found by walking the
// leader's process tree while it lives); an orphan that left the tree before the kill (double
// fork + setsid) is not reached.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "protocol/messages.h"
#include "sandboxd/operation.h"
#include "sandboxd/pipes.h"
#include "sandboxd/stats_op.h"

namespace asb::sandboxd {

class ExecOp final : public Operation, public OutputPipe::Owner {
 public:
  ExecOp(Daemon& daemon, Connection& conn, uint32_t channel, protocol::ExecRequest req);
  ~ExecOp() override;

  void Start() override;
  void OnData(std::string&& bytes) override;
  void OnEof() override;
  void OnWindow(protocol::Stream stream, uint32_t bytes) override;
  void OnSignal(int signo) override;
  void OnResize(uint16_t cols, uint16_t rows) override;
  void OnCancel() override;
  void Abandon() override;

 private:
  enum class Phase { kIdle, kStarting, kRunning, kDone };
  enum class TimerStage { kNone, kTimeout, kGrace, kRescan };

  // OutputPipe::Owner
  uint64_t Keepable(protocol::Stream stream) override;
  void Deliver(protocol::Stream stream, std::string_view kept, size_t read) override;
  void Closed(protocol::Stream stream) override;

  Status Launch();
  void OnErrorPipe();
  void OnLeaderExit(int status);
  void OnTimer();
  void ArmTimer(uint64_t ms, TimerStage stage);
  void KillSessionNow();
  /// Adds the sessions the leader's descendants created (setsid) to escaped_sessions_; only
  /// while the leader lives (afterwards its tree is gone).
  void NoteEscapedSessions();
  void TryFinish();
  /// TryFinish after the current batch (at most one pending).
  void ScheduleTryFinish();
  /// CANCEL / lost connection: kill the session for good and hand pipes to the daemon.
  void KillAndDetach();
  /// Sends granted stdin window in batches.
  void GrantStdin(uint32_t bytes);

  protocol::ExecRequest req_;
  Phase phase_ = Phase::kIdle;
  pid_t pid_ = -1;
  int64_t start_ms_ = 0;
  // In a microVM (the kernel is the sandbox's own): the limit counters as the command started,
  // compared at its end for the result's oom_killed and pids_limited, so the host needs no
  // round trips of its own around the exec.
  bool counts_limits_ = false;
  LimitCounters limits_at_start_;
  bool leader_exited_ = false;
  int wait_status_ = 0;
  bool timed_out_ = false;
  bool session_gone_ = false;
  std::vector<pid_t> escaped_sessions_;  // killed together with the exec's own session
  TimerStage timer_stage_ = TimerStage::kNone;

  UniqueFd error_fd_;
  UniqueFd timer_fd_;
  UniqueFd pty_master_;                 // PTY execs: the master, shared by output and input
  UniqueFd stdout_read_, stderr_read_;  // parked until the start is confirmed
  std::unique_ptr<OutputPipe> out_[3];  // indexed by Stream (1 stdout, 2 stderr)
  std::unique_ptr<InputPipe> in_;
  bool eof_sent_[3] = {};
  uint64_t kept_[3] = {};
  uint64_t total_[3] = {};
  bool truncated_[3] = {};
  // Bytes that were in each pipe when the leader was reaped; once read, the stream is settled
  // even if a background child keeps writing.
  bool budgets_set_ = false;
  int64_t budget_[3] = {};
  uint32_t ungranted_stdin_ = 0;
  bool finish_scheduled_ = false;
};

}  // namespace asb::sandboxd
