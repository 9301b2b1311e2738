// Network namespace of a sandbox. Default: loopback only (ARCHITECTURE.md, "Isolation").
#pragma once

#include "isolation/ns/child_step.h"

namespace asb::isolation::ns {

/// In the child (inside its new network namespace): sets lo up with SIOCSIFFLAGS, the same as
/// `ip link set lo up` (netdevice(7)). Returns 0 or an errno recorded in `*f`.
int BringUpLoopbackInChild(ChildFailure* f);

}  // namespace asb::isolation::ns
