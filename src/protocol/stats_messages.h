// The "stats" operation (docs/design/sandbox-protocol.md, section 7): sandboxd's own figures of
// the sandbox it runs in. A microVM's host sees only QEMU (its RAM, its threads), not the
// guest's processes, so the guest reports them itself; any backend may ask.
//
//   stats   OPEN {}; RESULT SandboxStats.
//
// Kept apart from messages.h so that adding it did not touch every user of the other messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::protocol {

/// What sandboxd sees of its sandbox. Counters run from the sandbox's start. Zero where the
/// sandbox's kernel offers no such figure.
struct SandboxStats {
  /// Memory of the sandbox's commands (their cgroup's memory.current / memory.peak), bytes.
  uint64_t memory_bytes = 0;
  uint64_t memory_peak_bytes = 0;
  /// Memory the kernel can give out at all (MemTotal of /proc/meminfo), bytes: in a microVM,
  /// its RAM.
  uint64_t memory_total_bytes = 0;
  /// Processes of the commands' cgroup now (pids.current).
  uint64_t pids = 0;
  /// CPU time of the commands' cgroup (cpu.stat usage_usec), nanoseconds.
  uint64_t cpu_usage_ns = 0;
  /// Processes ended by the kernel's OOM killer (/proc/vmstat oom_kill: in a microVM every
  /// kill is the sandbox's, as the kernel is its own).
  uint64_t oom_kills = 0;
  /// Forks the pids limit refused (pids.events "max" of the commands' cgroup).
  uint64_t pids_limit_hits = 0;
};

std::string EncodeSandboxStats(const SandboxStats& m);
/// Errors: kBackend on malformed JSON or a member of the wrong type.
Result<SandboxStats> DecodeSandboxStats(std::string_view json);

}  // namespace asb::protocol
