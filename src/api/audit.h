// Helpers of the audit trail and metrics around a call (api/auth.h, step 7): what a call is
// called ("sandbox.create", "exec.stream", ...), its target (the command line or the path,
// redacted — never a body, file contents or env values), and a StreamBody wrapper that reports the
// end of a stream (bytes sent, the exit code its "exit" event carried).
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

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
  bool fork = false;    // POST /v1/snapshots/{id}/fork or /v1/sandboxes/{id}/fork (makes sandboxes)
};

/// Longest target the audit trail keeps, in bytes (before the "..." of a cut).
inline constexpr size_t kMaxAuditTarget = 1000;

/// What the audit trail keeps of a target text `raw` (a command line, a path, a name): with
/// what looks like a secret replaced by "[REDACTED]" (common/redact.h; the rule is in
/// api/AUTH.md "Redaction"), invalid UTF-8 replaced, and cut at a character boundary to
/// kMaxAuditTarget bytes plus "...". Every writer of store::EventRecord::target uses it
/// (DescribeCall here, mcp/audited_backend.h).
std::string AuditTarget(std::string_view raw);

/// The audited command line of an exec-like JSON body: "command" (a string; seed B's argv
/// list; seed A's with its "args"), else "argv", shell-quoted, through AuditTarget; nullopt
/// when the body has none. Never stdin or env.
std::optional<std::string> AuditCommandOf(const boost::json::object& body);

/// Describes the call of `route` with `req` (reads only the JSON fields named above, and
/// only from JSON routes). Targets pass AuditTarget.
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
