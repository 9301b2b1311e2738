// What the MCP tools act on (issue 6 item 2): one small interface with two implementations, so
// that there is one tool implementation (mcp/tools.h) for both transports:
//  - RestBackend (mcp/rest_backend.h): the REST API of a server over HTTP, for
//    `agent-sandbox mcp` on stdio;
//  - ManagerBackend (mcp/manager_backend.h): the SandboxManager in-process with the caller's
//    owner, for Streamable HTTP at /mcp on the server itself.
// Values are JSON objects in the shapes the REST API answers (api/openapi.json: Sandbox,
// Snapshot, FileStat, ...), so both back ends give the tools the same structuredContent.
// Errors carry the REST API's wire code ("not_found", "invalid_request", ...) and message.
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace asb::mcp {

/// A failed backend call: the wire error code and a message safe to show the caller.
struct ToolError {
  std::string code;
  std::string message;
};

template <typename T>
using ToolResult = tl::expected<T, ToolError>;

inline tl::unexpected<ToolError> ToolFail(std::string code, std::string message) {
  return tl::unexpected<ToolError>(ToolError{std::move(code), std::move(message)});
}

/// Hooks of a running exec.
struct ExecHooks {
  /// Output as it arrives: `stream` is "stdout" or "stderr", `text` valid UTF-8 (invalid bytes
  /// replaced, characters never split).
  std::function<void(std::string_view stream, std::string_view text)> output;
  /// Polled while the command runs (at least every 250 ms); when it reads true the command is
  /// killed and Exec answers code "cancelled".
  const std::atomic<bool>* cancelled = nullptr;
};

class ToolBackend {
 public:
  virtual ~ToolBackend() = default;

  /// POST /v1/sandboxes with `body` (template, cpus, memory_mb, timeout_seconds, network, env);
  /// returns the Sandbox object.
  virtual ToolResult<boost::json::object> CreateSandbox(const boost::json::object& body) = 0;
  /// {"sandboxes": [Sandbox...]} of the caller.
  virtual ToolResult<boost::json::object> ListSandboxes() = 0;
  /// {"templates": [{name, display_name?, description?, tools?...}]}.
  virtual ToolResult<boost::json::object> ListTemplates() = 0;
  /// Runs `body` (command, workdir, env, timeout, stdin: the REST exec body) in sandbox `id`,
  /// streaming output through `hooks`. Returns the exit object {exit_code, signal, timed_out,
  /// duration_ms, truncated, oom_killed}.
  virtual ToolResult<boost::json::object> Exec(const std::string& id,
                                               const boost::json::object& body,
                                               const ExecHooks& hooks) = 0;
  /// The raw bytes of a file.
  virtual ToolResult<std::string> ReadFile(const std::string& id, const std::string& path) = 0;
  /// Writes a file; returns its FileStat {path, size, mode, ...}. `mode` is octal text.
  virtual ToolResult<boost::json::object> WriteFile(const std::string& id, const std::string& path,
                                                    std::string_view data,
                                                    const std::optional<std::string>& mode) = 0;
  /// {"path", "entries": [FileStat...]}.
  virtual ToolResult<boost::json::object> ListFiles(const std::string& id, const std::string& path,
                                                    bool recursive) = 0;
  /// Snapshot object.
  virtual ToolResult<boost::json::object> Snapshot(const std::string& id,
                                                   const std::optional<std::string>& name) = 0;
  /// The Sandbox object after the rollback.
  virtual ToolResult<boost::json::object> Rollback(const std::string& id,
                                                   const std::string& snapshot_id) = 0;
  /// The new Sandbox; `body` may hold timeout_seconds.
  virtual ToolResult<boost::json::object> Fork(const std::string& snapshot_id,
                                               const boost::json::object& body) = 0;
  virtual ToolResult<void> Destroy(const std::string& id) = 0;
};

}  // namespace asb::mcp
