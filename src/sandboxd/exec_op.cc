#include "sandboxd/exec_op.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "common/clock.h"
#include "sandboxd/daemon.h"
#include "sandboxd/launch.h"
#include "sandboxd/proc_scan.h"

namespace asb::sandboxd {

using protocol::Stream;

namespace {
constexpr uint64_t kRescanMs = 10;
constexpr uint32_t kStdinGrantBatch = 32 * 1024;

int Index(Stream s) { return static_cast<int>(s); }

int64_t NowMs() { return SystemClock::Instance().MonotonicMs(); }
}  // namespace

ExecOp::ExecOp(Daemon& daemon, Connection& conn, uint32_t channel, protocol::ExecRequest req)
    : Operation(daemon, conn, channel), req_(std::move(req)) {}

ExecOp::~ExecOp() {
  if (pid_ > 0 && !leader_exited_) daemon_.ForgetChild(pid_);
  if (error_fd_) daemon_.loop().Remove(error_fd_.get());
  if (timer_fd_) daemon_.loop().Remove(timer_fd_.get());
  // Pipes still owned here (an early failure) are closed by their destructors.
}

void ExecOp::Start() {
  if (auto st = Launch(); !st) {
    if (pid_ > 0) KillAndDetach();  // failed after fork: the child must not run unwatched
    phase_ = Phase::kDone;
    FailWith(st.error());
  }
}

void ExecOp::ScheduleTryFinish() {
  if (finish_scheduled_) return;
  finish_scheduled_ = true;
  daemon_.loop().Defer([this] {
    finish_scheduled_ = false;
    TryFinish();
  });
}

Status ExecOp::Launch() {
  start_ms_ = NowMs();
  counts_limits_ = !daemon_.options().port.empty();
  if (counts_limits_) limits_at_start_ = ReadLimitCounters(daemon_.options().work_cgroup_fds);
  ASB_ASSIGN_OR_RETURN(LaunchedCommand l, LaunchCommand(daemon_, req_));
  pid_ = l.pid;
  phase_ = Phase::kStarting;
  daemon_.WatchChild(pid_, [this](int status) { OnLeaderExit(status); });
  error_fd_ = std::move(l.error_fd);
  stdout_read_ = std::move(l.stdout_read);
  stderr_read_ = std::move(l.stderr_read);
  pty_master_ = std::move(l.pty_master);
  if (l.stdin_write) {
    in_ = std::make_unique<InputPipe>(daemon_.loop(), std::move(l.stdin_write),
                                      [this](uint32_t n) { GrantStdin(n); });
  }
  ASB_TRY(daemon_.loop().Add(error_fd_.get(), EPOLLIN, [this](uint32_t) { OnErrorPipe(); }));
  if (req_.timeout_ms > 0) ArmTimer(req_.timeout_ms, TimerStage::kTimeout);
  return {};
}

void ExecOp::OnErrorPipe() {
  if (phase_ != Phase::kStarting) return;
  std::optional<Error> failure = ReadChildFailure(error_fd_.get());
  daemon_.loop().Remove(error_fd_.get());
  error_fd_.Reset();
  if (failure) {
    // The child failed before exec and exits on its own; it is reaped and ignored.
    phase_ = Phase::kDone;
    if (in_) in_->CloseNow();
    FailWith(*failure);
    return;
  }
  // EOF: execve succeeded (or the child died before reporting; its status tells).
  phase_ = Phase::kRunning;
  SendInfo("{\"pid\":" + std::to_string(pid_) + "}");
  if (stdout_read_) {
    out_[1] = std::make_unique<OutputPipe>(daemon_.loop(), Stream::kStdout, std::move(stdout_read_),
                                           this);
    if (auto st = out_[1]->Start(); !st) out_[1].reset();
  }
  if (stderr_read_) {
    out_[2] = std::make_unique<OutputPipe>(daemon_.loop(), Stream::kStderr, std::move(stderr_read_),
                                           this);
    if (auto st = out_[2]->Start(); !st) out_[2].reset();
  }
  TryFinish();
}

uint64_t ExecOp::Keepable(Stream s) {
  int i = Index(s);
  uint64_t k = std::numeric_limits<uint64_t>::max();
  uint64_t per = s == Stream::kStdout ? req_.max_stdout_bytes : req_.max_stderr_bytes;
  if (per > 0) k = per > kept_[i] ? per - kept_[i] : 0;
  if (req_.max_output_bytes > 0) {
    uint64_t both = kept_[1] + kept_[2];
    k = std::min(k, req_.max_output_bytes > both ? req_.max_output_bytes - both : 0);
  }
  return k;
}

void ExecOp::Deliver(Stream s, std::string_view kept, size_t read) {
  int i = Index(s);
  kept_[i] += kept.size();
  total_[i] += read;
  if (kept.size() < read) truncated_[i] = true;
  if (budgets_set_) budget_[i] -= static_cast<int64_t>(read);
  SendData(s, kept);
  if (leader_exited_) ScheduleTryFinish();
}

void ExecOp::Closed(Stream s) {
  int i = Index(s);
  if (!eof_sent_[i]) {
    eof_sent_[i] = true;
    SendEof(s);
  }
  if (leader_exited_) ScheduleTryFinish();
}

void ExecOp::OnData(std::string&& bytes) {
  if (in_ && phase_ != Phase::kDone) {
    in_->Write(std::move(bytes));
  } else {
    Operation::OnData(std::move(bytes));  // discard and credit
  }
}

void ExecOp::OnEof() {
  if (!in_) return;
  if (req_.pty) {
    in_->Write(std::string(1, '\x04'));  // ^D: end of input on a terminal
  } else {
    in_->CloseWhenDrained();
  }
}

void ExecOp::GrantStdin(uint32_t bytes) {
  ungranted_stdin_ += bytes;
  if (ungranted_stdin_ >= kStdinGrantBatch || !in_ || in_->closed()) {
    SendWindow(ungranted_stdin_);
    ungranted_stdin_ = 0;
  } else {
    // Flush small remainders after this batch so a slow trickle is never stranded.
    daemon_.loop().Defer([this] {
      if (ungranted_stdin_ > 0 && !finished()) {
        SendWindow(ungranted_stdin_);
        ungranted_stdin_ = 0;
      }
    });
  }
}

void ExecOp::OnWindow(Stream s, uint32_t bytes) {
  if (auto& p = out_[Index(s)]) p->AddWindow(bytes);
  if (leader_exited_) TryFinish();
}

void ExecOp::OnSignal(int signo) {
  if (pid_ > 0 && phase_ != Phase::kDone) kill(-pid_, signo);
}

void ExecOp::OnResize(uint16_t cols, uint16_t rows) {
  if (!pty_master_) return;
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = rows;
  ioctl(pty_master_.get(), TIOCSWINSZ, &ws);
}

void ExecOp::ArmTimer(uint64_t ms, TimerStage stage) {
  if (!timer_fd_) {
    timer_fd_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!timer_fd_) return;
    if (!daemon_.loop().Add(timer_fd_.get(), EPOLLIN, [this](uint32_t) { OnTimer(); })) {
      timer_fd_.Reset();
      return;
    }
  }
  itimerspec its{};
  if (ms == 0) ms = 1;
  its.it_value.tv_sec = static_cast<time_t>(ms / 1000);
  its.it_value.tv_nsec = static_cast<long>((ms % 1000) * 1'000'000);
  timerfd_settime(timer_fd_.get(), 0, &its, nullptr);
  timer_stage_ = stage;
}

void ExecOp::OnTimer() {
  uint64_t ticks;
  while (read(timer_fd_.get(), &ticks, sizeof ticks) > 0) {
  }
  if (phase_ == Phase::kDone) return;
  switch (timer_stage_) {
    case TimerStage::kTimeout:
      timed_out_ = true;
      NoteEscapedSessions();
      kill(-pid_, SIGTERM);
      for (pid_t sid : escaped_sessions_) SignalSession(sid, SIGTERM);
      if (leader_exited_) {
        KillSessionNow();
      } else {
        ArmTimer(req_.kill_grace_ms, TimerStage::kGrace);
      }
      break;
    case TimerStage::kGrace:
    case TimerStage::kRescan:
      KillSessionNow();
      break;
    case TimerStage::kNone:
      break;
  }
}

// SIGKILL the group and every process of the session; re-arm until nothing is left.
void ExecOp::KillSessionNow() {
  NoteEscapedSessions();
  kill(-pid_, SIGKILL);
  int left = SignalSession(pid_, SIGKILL);
  for (pid_t sid : escaped_sessions_) left += SignalSession(sid, SIGKILL);
  if (left == 0 && leader_exited_) {
    session_gone_ = true;
    timer_stage_ = TimerStage::kNone;
    TryFinish();
  } else {
    ArmTimer(kRescanMs, TimerStage::kRescan);
  }
}

void ExecOp::NoteEscapedSessions() {
  if (pid_ <= 0 || leader_exited_) return;
  for (pid_t sid : DescendantSessions(pid_, pid_)) {
    bool known = false;
    for (pid_t s : escaped_sessions_) known = known || s == sid;
    if (!known) escaped_sessions_.push_back(sid);
  }
}

void ExecOp::OnLeaderExit(int status) {
  leader_exited_ = true;
  wait_status_ = status;
  if (timed_out_) KillSessionNow();
  TryFinish();
}

void ExecOp::TryFinish() {
  if (phase_ != Phase::kRunning || !leader_exited_ || finished()) return;
  if (timed_out_ && !session_gone_) return;
  if (!budgets_set_) {
    // What the leader left in each pipe: read at most that much more before finishing, so a
    // background child that keeps writing cannot hold the exec open.
    budgets_set_ = true;
    for (int i = 1; i <= 2; ++i) {
      budget_[i] = out_[i] && !out_[i]->closed() ? static_cast<int64_t>(out_[i]->Available()) : 0;
    }
  }
  for (int i = 1; i <= 2; ++i) {
    auto& p = out_[i];
    if (!p || p->closed()) continue;
    p->Pump();
    if (finished() || !p) return;
    if (p->closed()) continue;
    if (budget_[i] <= 0 || p->Empty()) continue;  // settled
    return;  // output still to send: wait for window or the next readiness
  }
  // Settled: hand still-open pipes (held by background children) to the daemon.
  for (int i = 1; i <= 2; ++i) {
    if (out_[i] && !out_[i]->closed()) daemon_.DrainIntoVoid(out_[i]->Detach());
    out_[i].reset();
    if (!eof_sent_[i]) {
      eof_sent_[i] = true;
      SendEof(static_cast<Stream>(i));
    }
  }
  if (in_) in_->CloseNow();
  if (ungranted_stdin_ > 0) {
    SendWindow(ungranted_stdin_);
    ungranted_stdin_ = 0;
  }
  protocol::ExecResult r;
  if (WIFEXITED(wait_status_)) {
    r.exit_code = WEXITSTATUS(wait_status_);
  } else if (WIFSIGNALED(wait_status_)) {
    r.signal = WTERMSIG(wait_status_);
    r.exit_code = 128 + r.signal;
  }
  r.timed_out = timed_out_;
  r.stdout_truncated = truncated_[1];
  r.stderr_truncated = truncated_[2];
  r.stdout_bytes = total_[1];
  r.stderr_bytes = total_[2];
  r.duration_ms = static_cast<uint64_t>(NowMs() - start_ms_);
  if (counts_limits_) {
    const LimitCounters now = ReadLimitCounters(daemon_.options().work_cgroup_fds);
    r.oom_killed = now.oom_kills > limits_at_start_.oom_kills;
    r.pids_limited = now.pids_limit_hits > limits_at_start_.pids_limit_hits;
  }
  phase_ = Phase::kDone;
  Succeed(protocol::EncodeExecResult(r));
}

void ExecOp::KillAndDetach() {
  if (pid_ > 0) {
    NoteEscapedSessions();
    if (!leader_exited_) daemon_.ForgetChild(pid_);
    leader_exited_ = true;  // no callback will come any more
    daemon_.KillSessionUntilGone(pid_);
    for (pid_t sid : escaped_sessions_) daemon_.KillSessionUntilGone(sid);
  }
  for (int i = 1; i <= 2; ++i) {
    if (out_[i] && !out_[i]->closed()) daemon_.DrainIntoVoid(out_[i]->Detach());
    out_[i].reset();
  }
  if (in_) in_->CloseNow();
  // Nothing of this operation may run again: no error pipe, no timer, no parked pipes.
  if (error_fd_) daemon_.loop().Remove(error_fd_.get());
  error_fd_.Reset();
  if (timer_fd_) daemon_.loop().Remove(timer_fd_.get());
  timer_fd_.Reset();
  stdout_read_.Reset();
  stderr_read_.Reset();
  phase_ = Phase::kDone;
}

void ExecOp::OnCancel() {
  if (finished()) return;
  KillAndDetach();
  FailWith(Error::Cancelled("exec cancelled; its session was killed"));
}

void ExecOp::Abandon() { KillAndDetach(); }

}  // namespace asb::sandboxd
