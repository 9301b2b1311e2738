// Resource limits of a sandbox's processes (setrlimit(2)). The cgroup pids limit is the real
// bound; RLIMIT_NPROC at the same value is a second guard (counted per uid in the sandbox's
// user namespace), RLIMIT_CORE 0 keeps core dumps out of the workspace.
#pragma once

#include <sys/resource.h>

#include "isolation/ns/child_step.h"

namespace asb::isolation::ns {

struct RlimitPlan {
  rlim_t nofile = 4096;
  rlim_t nproc = 256;
};

/// In the child: applies the limits. A value above the current hard limit is clamped to it
/// (raising a hard limit needs CAP_SYS_RESOURCE in the initial user namespace, which the
/// child does not have). Returns 0 or an errno recorded in `*f`.
int ApplyRlimitsInChild(const RlimitPlan& plan, ChildFailure* f);

}  // namespace asb::isolation::ns
