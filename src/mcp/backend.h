// What the MCP tools act on (ADR 0010): one small interface with two implementations, so
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
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tl/expected.hpp>
#include <utility>
#include <vector>

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

/// What sandbox_process_output reads (mcp/process_output.h says when reading stops).
struct OutputRequest {
  int pid = 0;
  /// Keep at most this many bytes of the most recent output (> 0).
  uint64_t tail_bytes = 0;
  /// Wait this long for more output, milliseconds (>= 0); reading ends early at the exit.
  int64_t wait_ms = 0;
  /// Polled while waiting; when it reads true the call answers code "cancelled".
  const std::atomic<bool>* cancelled = nullptr;
};

/// What sandbox_watch_files watches, and for how long.
struct WatchRequest {
  std::string path = "/workspace";  // a directory: absolute under /workspace, or relative
  bool recursive = false;
  /// Watch this long, milliseconds (>= 0; 0: only arm and disarm, which checks the path).
  int64_t wait_ms = 0;
  /// Return as soon as this many changes arrived (> 0).
  size_t max_events = 1;
  /// Polled while waiting; when it reads true the call answers code "cancelled".
  const std::atomic<bool>* cancelled = nullptr;
};

/// A process's recent output.
struct ProcessOutput {
  /// The Process object (REST shape: pid, state, exit_code, ...) after reading.
  boost::json::object process;
  /// Raw bytes of both streams in arrival order, the last tail_bytes of what was read.
  std::string output;
  /// Bytes read in all (replayed and live); more than output.size() when older ones were cut.
  uint64_t received = 0;
  /// Bytes the process's ring overwrote before this reader got them.
  uint64_t skipped = 0;
};

/// An HTTP request to 127.0.0.1:`port` inside a sandbox, as the ports proxy
/// (/v1/sandboxes/{id}/ports/{port}/{path}) sends it.
struct PortRequest {
  int64_t port = 0;
  std::string method = "GET";  // GET, HEAD, POST, PUT, PATCH or DELETE
  std::string path = "/";      // starts with '/', may carry a query
  /// End-to-end request headers (never Host, Authorization, framing: the tools refuse those).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  /// The whole exchange, milliseconds (> 0).
  int64_t timeout_ms = 0;
  /// Bytes of the answer's body kept; the rest is not read.
  uint64_t max_body_bytes = 0;
  const std::atomic<bool>* cancelled = nullptr;
};

/// The upstream's answer.
struct PortResponse {
  int status = 0;
  /// Header names in lower case, in the order received.
  std::vector<std::pair<std::string, std::string>> headers;
  /// At most max_body_bytes of the body (de-chunked).
  std::string body;
  /// The body had more than max_body_bytes.
  bool truncated = false;
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
  /// Forks running sandbox `id` (POST /v1/sandboxes/{id}/fork); `body` may hold count and
  /// timeout_seconds. {"forks": [{"sandbox", "memory"} or {"error", "status"}, ...]}.
  virtual ToolResult<boost::json::object> ForkSandbox(const std::string& id,
                                                      const boost::json::object& body) = 0;
  virtual ToolResult<void> Destroy(const std::string& id) = 0;
  /// Pauses running sandbox `id` (ADR 0024); the Sandbox object, status "paused". With
  /// `keep_memory` false only its files are kept (SandboxLifecycle::Pause).
  virtual ToolResult<boost::json::object> Pause(const std::string& id, bool keep_memory) = 0;
  /// Resumes paused sandbox `id`, its TTL `timeout_seconds` from now (absent: its last); the
  /// Sandbox object, status "running".
  virtual ToolResult<boost::json::object> Resume(const std::string& id,
                                                 std::optional<int64_t> timeout_seconds) = 0;

  // ---- background processes (ADR 0011; REST /v1/sandboxes/{id}/processes) -----------------

  /// Starts a process from `body` (the REST start body: command | argv, env, workdir, tag,
  /// stdin, ring_bytes); returns the Process object once it runs.
  virtual ToolResult<boost::json::object> StartProcess(const std::string& id,
                                                       const boost::json::object& body) = 0;
  /// {"processes": [Process...]}: running and recently exited.
  virtual ToolResult<boost::json::object> ListProcesses(const std::string& id) = 0;
  /// Replays up to req.tail_bytes of the process's recent output and follows it for
  /// req.wait_ms (or until it exits), then detaches; the process keeps running.
  virtual ToolResult<ProcessOutput> ReadProcessOutput(const std::string& id,
                                                      const OutputRequest& req) = 0;
  /// Watches a directory for req.wait_ms (GET /v1/sandboxes/{id}/files/watch) and returns
  /// the changes seen: {"path": the directory, "events": [{"type","path","dir"} or
  /// {"type":"overflow","dropped"}...], "ended": true when the directory went away (then
  /// "reason")}. Returns early at req.max_events changes or the end.
  virtual ToolResult<boost::json::object> WatchFiles(const std::string& id,
                                                     const WatchRequest& req) = 0;
  /// Writes `data` to its stdin; returns the bytes accepted.
  virtual ToolResult<uint64_t> WriteProcessStdin(const std::string& id, int pid,
                                                 std::string_view data) = 0;
  virtual ToolResult<void> CloseProcessStdin(const std::string& id, int pid) = 0;
  /// Sends `signal` ("SIGTERM", "TERM", "15") to its process group.
  virtual ToolResult<void> SignalProcess(const std::string& id, int pid,
                                         const std::string& signal) = 0;
  /// Kills its whole tree; returns the final Process object.
  virtual ToolResult<boost::json::object> KillProcess(const std::string& id, int pid) = 0;

  // ---- ports (REST /v1/sandboxes/{id}/ports/{port}/{path}) ---------------------------------

  /// One HTTP exchange with a port inside the sandbox. A failure to reach it (nothing
  /// listens: "unavailable"; the sandbox: "not_found"/"conflict") is an error; any answer of
  /// the upstream, 4xx/5xx included, is a PortResponse.
  virtual ToolResult<PortResponse> RequestPort(const std::string& id, const PortRequest& req) = 0;

  // ---- code interpreter (ADR 0019; REST /v1/sandboxes/{id}/contexts and /code) ------------

  /// Runs `body` (the REST code body: code, context_id?, language?, timeout?,
  /// max_output_bytes?) in a code context of sandbox `id` and returns the execution object
  /// of POST /v1/sandboxes/{id}/code {context_id, language, stdout, stderr, results, error,
  /// status, execution_count, duration_ms, timed_out, truncated, exit_code?}. Output goes
  /// through hooks.output as it arrives; when hooks.cancelled reads true the code is
  /// interrupted and the call answers code "cancelled".
  virtual ToolResult<boost::json::object> RunCode(const std::string& id,
                                                  const boost::json::object& body,
                                                  const ExecHooks& hooks) = 0;
  /// Starts a context from `body` ({"language", "cwd"?}); returns the context object.
  virtual ToolResult<boost::json::object> CreateCodeContext(const std::string& id,
                                                            const boost::json::object& body) = 0;
  /// {"contexts": [context...]}.
  virtual ToolResult<boost::json::object> ListCodeContexts(const std::string& id) = 0;
  /// A fresh kernel under the same id; returns the context object.
  virtual ToolResult<boost::json::object> RestartCodeContext(const std::string& id,
                                                             const std::string& context_id) = 0;
  virtual ToolResult<void> DeleteCodeContext(const std::string& id,
                                             const std::string& context_id) = 0;
};

}  // namespace asb::mcp
