// An exec's result as every surface shows it: POST /v1/sandboxes/{id}/exec's body, the exec
// stream's "exit" line (api/openapi.json ExecResult and StreamEvent) and MCP's sandbox_exec
// result (mcp/tools_util.cc), all written from this one table, so a new field is one row here
// and one in the OpenAPI document (src/api/shapes_test.cc checks the two agree).
#pragma once

#include <boost/json.hpp>
#include <span>
#include <string_view>

#include "core/sandbox_types.h"

namespace asb::api {

/// One field of an exec's result: its JSON name, its JSON Schema type ("integer" or
/// "boolean"), what it means, and how it is read from core::ExecResult.
struct ExecResultField {
  std::string_view name;
  std::string_view json_type;
  std::string_view description;
  boost::json::value (*get)(const core::ExecResult& r);
};

/// Every field of an exec's result, in the order they are written: exit_code, signal,
/// timed_out, truncated, stdout_truncated, stderr_truncated, oom_killed, pids_limited,
/// duration_ms.
std::span<const ExecResultField> ExecResultFields();

/// Writes every field of `r` into `*o` (the output and any other keys are the caller's).
void PutExecResult(const core::ExecResult& r, boost::json::object* o);

}  // namespace asb::api
