// The host's side of the small guest operations: "stats" (stats_messages.h), "clock.set"
// (clock_messages.h) and "env.set" (env_messages.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"
#include "protocol/client.h"
#include "protocol/stats_messages.h"

namespace asb::protocol {

/// Asks sandboxd for its figures, waiting at most `timeout_ms` for the answer (a usage read
/// must not hang on a guest that stopped answering). Errors: kTimeout (the channel is
/// cancelled), the connection's errors, sandboxd's error (kInvalidArgument "unknown op" from a
/// sandboxd older than the operation), kBackend on a malformed answer.
Result<SandboxStats> ReadSandboxStats(Connection& conn, int64_t timeout_ms);

/// Sets a microVM guest's wall clock to `unix_ns`, waiting at most `timeout_ms`. Errors as
/// ReadSandboxStats; kInvalidArgument where sandboxd is not a VM's PID 1.
Status SetGuestClock(Connection& conn, int64_t unix_ns, int64_t timeout_ms);

/// Replaces the environment every later command of the sandbox starts from (the defaults
/// overlaid with `env`), waiting at most `timeout_ms`. Errors as ReadSandboxStats;
/// kInvalidArgument for a bad name or value.
Status SetSandboxEnv(Connection& conn, const std::map<std::string, std::string>& env,
                     int64_t timeout_ms);

}  // namespace asb::protocol
