// state.json: what the backend records about a running sandbox so that a later server process
// can adopt or destroy it. Written temp + rename (files.h, WriteFileAtomic), without fsync:
// it describes processes, which a machine crash ends, while a crash of the server process
// keeps the page cache. After a machine crash a missing or torn state.json only means "not
// running": Adopt answers kNotFound and Destroy works from names alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace asb::isolation::ns {

struct SandboxState {
  std::string id;
  int pid = -1;                      // host pid of sandboxd (PID 1 of the sandbox)
  uint64_t start_time = 0;           // field 22 of /proc/<pid>/stat: defeats pid reuse
  uint32_t slot = 0;                 // uid range slot
  uint32_t uid_base = 0;             // first host uid of the range
  std::string loop_device;           // "/dev/loopN" at create time (informational)
  std::string cgroup_mode;           // "v1" or "v2"
  std::vector<std::string> cgroups;  // every cgroup directory of the sandbox (informational)
  int64_t created_unix_ms = 0;
  /// The workspace image stores canonical ids (1000 = the sandbox user) and is mounted through
  /// an idmapped mount (idmap.h). False for sandboxes made before that: their image holds host
  /// ids of their own range and cannot be cloned for another sandbox.
  bool canonical_ids = false;
};

std::string EncodeSandboxState(const SandboxState& s);
/// Errors: kBackend for malformed JSON.
Result<SandboxState> DecodeSandboxState(std::string_view json);

/// Start time of `pid` in clock ticks since boot (proc(5), /proc/pid/stat field 22).
/// Errors: kNotFound when the process does not exist.
Result<uint64_t> ProcessStartTime(int pid);

/// True if `pid` exists and is not a zombie or dead (proc(5), /proc/pid/stat field 3 is neither
/// 'Z' nor 'X'). A killed sandboxd can stay a zombie until its parent reaps it; it no longer runs.
bool ProcessIsRunning(int pid);

}  // namespace asb::isolation::ns
