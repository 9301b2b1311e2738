// Network namespace of a sandbox. Default: loopback only (ADR 0013).
#pragma once

#include <cstdint>

#include "common/result.h"
#include "isolation/ns/child_step.h"

namespace asb::isolation::ns {

/// In the child (inside its new network namespace): sets lo up with SIOCSIFFLAGS, the same as
/// `ip link set lo up` (netdevice(7)). Returns 0 or an errno recorded in `*f`.
int BringUpLoopbackInChild(ChildFailure* f);

/// Server side (exposed ports, ADR 0013): a TCP socket made inside the network namespace of
/// process `pid` (a short-lived thread joins it with setns(2); a socket keeps the namespace it
/// was made in), connected to 127.0.0.1:`port` within `timeout_ms`. Returns the blocking,
/// close-on-exec fd, owned by the caller. Errors: kUnavailable "nothing listens on port N"
/// (ECONNREFUSED), kTimeout, kNotFound when the process is gone, FromErrno otherwise.
Result<int> ConnectInNetns(int pid, uint16_t port, int timeout_ms);

}  // namespace asb::isolation::ns
