// ProcessService: background processes and PTYs of a sandbox (docs/ARCHITECTURE.md, "core/";
// ADR 0011). They live in the sandbox's sandboxd, outlive the request that started them and
// end with the sandbox; no lock is held while sandboxd works. Errors of all: kNotFound (sandbox,
// or no such pid), kConflict (sandbox not running; process exited / without stdin / without
// PTY), kInvalidArgument, kLimitExceeded (256 running, a full 1 MiB stdin queue), kBackend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/event_stream.h"
#include "core/sandbox_types.h"

namespace asb::core {

class SandboxRegistry;

/// An attachment to a background process's output (ProcessService::AttachProcess): the caller
/// drains `events` (kOutput stdout/stderr; kInfo skipped_bytes; kEnd; a terminal kDone with the
/// process when it exited, or kError) and Cancel()s it to detach. sandboxd's first event, the
/// process's state, is read by AttachProcess itself to answer a missing pid as an error.
/// `keepalive` marks the sandbox active while held.
struct ProcessAttach {
  std::shared_ptr<EventStream> events;
  std::shared_ptr<void> keepalive;
};

class ProcessService {
 public:
  /// `registry` must outlive the service.
  explicit ProcessService(SandboxRegistry& registry) : reg_(registry) {}

  /// Starts a process and returns once its program runs (pid set).
  Result<ProcessInfo> StartProcess(const std::string& owner, const std::string& id,
                                   const ProcessOptions& opts);
  /// Running and recently exited (the 64 most recent) processes, in start order.
  Result<std::vector<ProcessInfo>> ListProcesses(const std::string& owner, const std::string& id);
  /// Attaches to the output from now on, replaying up to `replay_bytes` of the recent output
  /// first; `stdin` lets the caller Write() the process's stdin on the channel (terminals).
  Result<ProcessAttach> AttachProcess(const std::string& owner, const std::string& id, int pid,
                                      uint64_t replay_bytes, bool stdin);
  /// Writes to its stdin; returns the bytes accepted.
  Result<uint64_t> WriteProcessStdin(const std::string& owner, const std::string& id, int pid,
                                     std::string_view data);
  Status CloseProcessStdin(const std::string& owner, const std::string& id, int pid);
  /// Sends `signal` (a name or number, ParseSignalName) to the process group.
  Status SignalProcess(const std::string& owner, const std::string& id, int pid,
                       std::string_view signal);
  /// cols and rows in [1, kMaxTerminalSize].
  Status ResizeProcess(const std::string& owner, const std::string& id, int pid, int64_t cols,
                       int64_t rows);
  /// Kills its whole tree; returns the final info once nothing of it is left.
  Result<ProcessInfo> KillProcess(const std::string& owner, const std::string& id, int pid);

 private:
  SandboxRegistry& reg_;
};

}  // namespace asb::core
