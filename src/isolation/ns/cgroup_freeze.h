// Pausing a sandbox on the ns backend: its cgroups are frozen, so every process (sandboxd and
// every command) stops where it is and keeps its memory, files, sockets and network, and later
// continues as if nothing happened (Backend::Pause / Resume; ADR 0024).
//
// Two freezers exist and either may be the one a host offers:
//  - cgroup v2's cgroup.freeze (Linux >= 5.2; Documentation/admin-guide/cgroup-v2.rst, "Core
//    Interface Files"): "1" freezes the whole subtree, and cgroup.events reads "frozen 1" once
//    every task has stopped. Frozen tasks can still be killed with SIGKILL.
//  - cgroup v1's freezer controller (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst):
//    freezer.state "FROZEN"; it reads "FREEZING" until every task has stopped. A SIGKILL sent
//    to a frozen task waits until the cgroup is thawed.
// The v2 one is preferred where the sandbox has a v2 directory (hybrid hosts make one too, for
// cgroup.kill); the v1 one otherwise.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "isolation/ns/cgroup.h"

namespace asb::isolation::ns {

/// Whether sandboxes of `layout` can be frozen: a cgroup2 mount (whose non-root cgroups all have
/// cgroup.freeze on Linux >= 5.2) or a v1 freezer hierarchy.
bool CanFreeze(const CgroupLayout& layout);

/// Freezes every process of the sandbox whose cgroups are `paths` and waits up to `timeout_ms`
/// until all have stopped. Idempotent. A task that cannot be stopped in time (one in an
/// uninterruptible sleep on a hung device, for instance) leaves the sandbox thawed again and
/// answers kTimeout. Errors: kUnavailable (no freezer for these paths), kNotFound (its cgroups
/// are gone), kTimeout, kBackend.
Status FreezeCgroups(const CgroupPaths& paths, int64_t timeout_ms);

/// Lets every process of `paths` continue; thaws both freezers where both exist (a sandbox
/// frozen by an older server through the other one is thawed too). Idempotent; missing
/// directories are fine. Errors: kBackend when a freezer file exists but refuses the write.
Status ThawCgroups(const CgroupPaths& paths);

/// Whether the sandbox is frozen (or freezing) by either freezer now. Missing directories: false.
bool CgroupsFrozen(const CgroupPaths& paths);

}  // namespace asb::isolation::ns
