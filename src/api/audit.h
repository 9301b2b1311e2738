// Helpers of the audit trail and metrics around a call (api/auth.h, step 7): what a call is
// called ("sandbox.create", "exec.stream", ...), its target (the command line or the path —
// never a body, file contents or env values), and a StreamBody wrapper that reports the end of
// a stream (bytes sent, the exit code its "exit" event carried).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "api/http_types.h"
#include "api/router.h"

namespace asb::api {

struct CallInfo {
  std::string action;    // "sandbox.create", ..., or "<METHOD> <route>" for routes without a name
  std::string target;    // command line, path, "from -> to", template, key id; "" if none
  bool audited = false;  // a mutating call (not GET/HEAD) or an exec
  bool exec = false;
  bool stream_exec = false;
  bool create = false;  // POST /v1/sandboxes
  bool fork = false;    // POST /v1/snapshots/{id}/fork (makes a sandbox too)
};

/// Describes the call of `route` with `req` (reads only the JSON fields named above, and
/// only from JSON routes). Targets longer than 1000 bytes are cut with "...".
CallInfo DescribeCall(const Route& route, const HttpRequest& req);

/// What a finished exec reported (the sync response body or the stream's last event).
struct ExecEnd {
  std::optional<int64_t> exit_code;
  bool timed_out = false;
  bool error = false;  // an error event/response instead of an exit
};

/// Reads exit_code / timed_out from a JSON object; error=true if it is not an exit result.
ExecEnd ExecEndOfJson(std::string_view json_text);

/// Wraps `inner`; when the stream ends (done, cancelled, or the wrapper is dropped), calls
/// `on_end(bytes_sent, end, cancelled)` once. With `parse_exec`, NDJSON lines are scanned for
/// the "exit"/"error" event.
std::shared_ptr<StreamBody> ObserveStream(
    std::shared_ptr<StreamBody> inner, bool parse_exec,
    std::function<void(uint64_t, const ExecEnd&, bool)> on_end);

}  // namespace asb::api
