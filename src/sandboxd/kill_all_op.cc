#include "sandboxd/kill_all_op.h"

#include <signal.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <vector>

#include "sandboxd/daemon.h"
#include "sandboxd/proc_scan.h"

namespace asb::sandboxd {

namespace {
constexpr long kSweepNs = 5'000'000;  // 5 ms between sweeps
constexpr int kMaxRounds = 2000;      // ~10 s: then report what is left
}  // namespace

KillAllOp::~KillAllOp() {
  if (timer_fd_) daemon_.loop().Remove(timer_fd_.get());
}

void KillAllOp::Start() {
  timer_fd_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_fd_) {
    FailWith(Error::FromErrno(errno, "kill.all: timerfd_create"));
    return;
  }
  if (auto st = daemon_.loop().Add(timer_fd_.get(), EPOLLIN, [this](uint32_t) { OnTimer(); });
      !st) {
    FailWith(st.error());
    return;
  }
  itimerspec its{};
  its.it_value.tv_nsec = kSweepNs;
  its.it_interval.tv_nsec = kSweepNs;
  timerfd_settime(timer_fd_.get(), 0, &its, nullptr);
  Sweep();
}

void KillAllOp::Sweep() {
  std::vector<pid_t> pids;
  SignalDescendants(getpid(), SIGKILL, &pids);
  killed_.insert(pids.begin(), pids.end());
  if (daemon_.options().pid1) kill(-1, SIGKILL);
}

void KillAllOp::OnTimer() {
  uint64_t ticks;
  while (read(timer_fd_.get(), &ticks, sizeof ticks) > 0) {
  }
  if (finished()) return;
  // Zombies are reaped by the daemon's SIGCHLD handler between sweeps.
  if (!HasDescendants(getpid())) {
    Succeed("{\"killed\":" + std::to_string(killed_.size()) + "}");
    return;
  }
  if (++rounds_ > kMaxRounds) {
    FailWith(Error::Internal("kill.all: processes still alive after 10 s"));
    return;
  }
  Sweep();
}

}  // namespace asb::sandboxd
