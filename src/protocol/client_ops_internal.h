// Internal to protocol/: the knobs behind ExecCollect(), exposed so that tests can exercise the
// host-side deadline without waiting for the production slack.
#pragma once

#include <cstdint>
#include <string_view>

#include "protocol/client.h"

namespace asb::protocol::internal {

/// How long the host waits for sandboxd to end an exec on its own.
struct ExecDeadline {
  /// Extra milliseconds beyond timeout_ms + kill_grace_ms before the host sends CANCEL.
  int64_t slack_ms = 10'000;
  /// Milliseconds the host then waits for the terminal frame before giving up with kTimeout.
  int64_t cancel_wait_ms = 2'000;
  /// Polled every kAbandonPollMs when set: true cancels the exec (the caller went away).
  const std::atomic<bool>* abandoned = nullptr;
};

inline constexpr int64_t kAbandonPollMs = 200;

/// ExecCollect() with explicit deadline knobs (ExecCollect uses the defaults).
Result<CollectedExec> ExecCollectWithDeadline(Connection& conn, const ExecRequest& req,
                                              std::string_view stdin_data,
                                              const ExecDeadline& deadline);

}  // namespace asb::protocol::internal
