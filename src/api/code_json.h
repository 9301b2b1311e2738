// The code interpreter's JSON shapes (ADR 0019; the wire spec is handlers_code.cc's header),
// shared by the REST routes (handlers_code.cc) and the MCP tools over the manager
// (mcp/manager_backend_code.cc), so both answer the same objects.
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <functional>
#include <memory>
#include <string_view>

#include "common/result.h"
#include "core/code_service.h"
#include "core/code_types.h"

namespace asb::api {

/// A context: {"id", "language", "cwd", "pid", "state", "default", "created_at"}.
boost::json::object CodeContextJson(const core::CodeContextInfo& c);
/// A result: {"is_main_result", "data": {mime: value}, "chart"?}; JSON-valued MIME types are
/// JSON values, the rest (image/png as base64) text.
boost::json::object CodeResultJson(const core::CodeResult& r);
/// A kernel's error: {"name", "value", "traceback": [...]}.
boost::json::object CodeErrorJson(const core::CodeError& e);
/// Puts the end's fields (status, execution_count, duration_ms, timed_out, truncated,
/// exit_code?) into `o`.
void PutCodeEnd(const core::CodeEnd& e, boost::json::object& o);
/// The body of POST .../code and .../code/stream: code, context_id?, language?, timeout?
/// (alias timeout_seconds), max_output_bytes?. Errors: kInvalidArgument naming the field.
Result<core::CodeRequest> ParseCodeRequest(std::string_view text);

/// Collects an execution's events into the sync /code answer (context_id, language, stdout,
/// stderr, results, error, end fields). `on_output` (may be empty) sees stdout/stderr text as
/// it arrives. Once `stop` (may be empty) reads true the code is interrupted, once (its end
/// still follows). Errors: the execution's (kBackend, ...).
Result<boost::json::object> CollectCodeExecution(
    core::CodeExecution& ex, const std::function<bool()>& stop,
    const std::function<void(std::string_view stream, std::string_view text)>& on_output);

}  // namespace asb::api
