// The host's side of the "stats" operation (stats_messages.h).
#pragma once

#include <cstdint>

#include "common/result.h"
#include "protocol/client.h"
#include "protocol/stats_messages.h"

namespace asb::protocol {

/// Asks sandboxd for its figures, waiting at most `timeout_ms` for the answer (a usage read
/// must not hang on a guest that stopped answering). Errors: kTimeout (the channel is
/// cancelled), the connection's errors, sandboxd's error (kInvalidArgument "unknown op" from a
/// sandboxd older than the operation), kBackend on a malformed answer.
Result<SandboxStats> ReadSandboxStats(Connection& conn, int64_t timeout_ms);

}  // namespace asb::protocol
