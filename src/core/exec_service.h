// ExecService: commands run in a sandbox, to completion or streamed (docs/ARCHITECTURE.md,
// "core/"). A command runs in the sandbox's sandboxd; no lock is held while it runs, so a
// Destroy of the same sandbox proceeds at once and ends it (the command's stream then ends with
// a kBackend error event). Every call touches the sandbox's last activity.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "core/event_stream.h"
#include "core/sandbox_types.h"

namespace asb::core {

class SandboxRegistry;

/// A started streaming exec: the caller drains `events` (kOutput stdout/stderr, kEnd, then one
/// terminal kDone with exec_result, or kError) and Cancel()s it to stop the command early (the
/// client went away). Holding the handle keeps the sandbox counted as active (not idle); it must
/// not outlive the manager.
struct ExecStream {
  std::shared_ptr<EventStream> events;
  std::shared_ptr<void> keepalive;  // opaque: the sandbox's activity mark
};

class ExecService {
 public:
  /// `registry` must outlive the service.
  explicit ExecService(SandboxRegistry& registry) : reg_(registry) {}

  /// Runs a command to completion and returns its result and kept output. Errors: kNotFound,
  /// kConflict (sandbox not running), kInvalidArgument (options; a missing workdir names
  /// the field), kBackend (sandboxd or the connection failed, also when the sandbox is
  /// destroyed meanwhile), kCancelled (opts.abandoned was set). A command that times out is no
  /// error: timed_out is set.
  Result<ExecOutcome> Exec(const std::string& owner, const std::string& id,
                           const ExecOptions& opts);

  /// Starts a command and returns its events for streaming. Errors found before the command
  /// starts (kNotFound, kConflict, kInvalidArgument, kBackend) are returned here, so the API
  /// can answer them as ordinary errors.
  Result<ExecStream> StartExec(const std::string& owner, const std::string& id,
                               const ExecOptions& opts);

 private:
  SandboxRegistry& reg_;
};

}  // namespace asb::core
