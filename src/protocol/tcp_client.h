// The host's side of "tcp.connect" (tcp_messages.h): a port inside the sandbox as a local
// socket, for backends whose host cannot reach the sandbox's network itself (a microVM).
#pragma once

#include <cstdint>

#include "common/result.h"
#include "protocol/client.h"

namespace asb::protocol {

/// Connects to 127.0.0.1:`port` inside the sandbox through sandboxd and returns a connected,
/// blocking, close-on-exec unix stream socket that the caller owns; bytes written to it reach
/// the sandbox's socket and the sandbox's bytes are read from it, and each side's close is the
/// other's end of file. Two threads relay (one each way) until both sides have ended, or the
/// caller closed its socket, or the connection is gone. Errors: kUnavailable "nothing listens
/// on port N in the sandbox", kTimeout when sandboxd did not connect within `timeout_ms`, the
/// connection's errors.
Result<int> ConnectTcpThroughSandboxd(Connection& conn, uint16_t port, int64_t timeout_ms);

}  // namespace asb::protocol
