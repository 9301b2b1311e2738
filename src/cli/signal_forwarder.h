// SignalForwarder: what `agent-sandbox run` does with SIGINT, SIGTERM, SIGHUP and SIGQUIT,
// following `docker run`'s signal proxy: the first one is delivered to the command's process
// group inside the sandbox, a second one cancels the command (sandboxd kills its process group),
// and in every case the caller still destroys the sandbox before exiting. With a terminal
// (`run -t`), SIGWINCH resizes the command's PTY to the size of `tty_fd` instead.
//
// Implementation: async-signal-safe handlers write the signal number to a self-pipe, and a
// watcher thread acts on it. Handlers (unlike a blocked signal mask) are not inherited across
// execve(2), so the sandbox's processes start with default signal dispositions.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "common/result.h"
#include "common/unique_fd.h"
#include "protocol/client.h"

namespace asb::cli {

class SignalForwarder {
 public:
  /// Installs the handlers and starts the watcher thread. At most one may exist at a time.
  /// `tty_fd` >= 0 also handles SIGWINCH by resizing the attached exec's PTY to that
  /// terminal's size. Errors: kInternal when the pipe or sigaction(2) fails.
  static Result<std::unique_ptr<SignalForwarder>> Start(int tty_fd = -1);
  /// Restores the previous handlers and stops the watcher thread.
  ~SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  /// Sets the exec channel that signals go to (nullptr detaches). Signals that arrive while no
  /// channel is attached are only recorded.
  void Attach(std::shared_ptr<protocol::Channel> channel);
  /// The first signal received, or 0.
  int first_signal() const { return first_signal_.load(); }

 private:
  SignalForwarder() = default;
  void Watch();

  UniqueFd read_end_;
  UniqueFd write_end_;
  std::thread watcher_;
  std::mutex mu_;
  std::shared_ptr<protocol::Channel> channel_;  // guarded by mu_
  int delivered_ = 0;                           // guarded by mu_
  std::atomic<int> first_signal_{0};
  int tty_fd_ = -1;
};

}  // namespace asb::cli
