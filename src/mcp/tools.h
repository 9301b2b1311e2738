// The MCP tools of agent-sandbox (ADR 0010): their definitions (name, description,
// inputSchema, outputSchema as JSON Schema objects, MCP spec 2025-06-18 "server/tools") and
// their implementations over a ToolBackend (mcp/backend.h: the REST API for stdio, the
// SandboxManager in-process for Streamable HTTP). A tool that fails answers a result with isError:
// true whose text starts with the error code ("not_found: ..."), never a JSON-RPC error (the spec's
// "tool execution errors"); only an unknown tool name is a protocol error (see McpSession).
#pragma once

#include <atomic>
#include <boost/json.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "mcp/backend.h"

namespace asb::mcp {

/// What a running tool call may use besides its arguments.
struct CallContext {
  /// Set by notifications/cancelled; long tools stop early when they see it.
  const std::atomic<bool>* cancelled = nullptr;
  /// Reports progress (MCP "notifications/progress"): `progress` grows with every call;
  /// `message` is a short human text. Empty when the client gave no progressToken.
  std::function<void(double progress, std::string message)> progress;
};

/// Output fields (exec stdout/stderr, read_file content) longer than this are cut, with
/// truncated: true, the full size in a field, and a note in the text rendering; exec's text
/// rendering shows up to half of it per stream (ADR 0010).
inline constexpr size_t kMaxTextBytes = 256 * 1024;

class Tools {
 public:
  /// `backend` must not be null.
  explicit Tools(std::shared_ptr<ToolBackend> backend) : backend_(std::move(backend)) {}

  /// The "tools" array of a tools/list result.
  static boost::json::array Definitions();

  /// True when `name` is one of Definitions().
  static bool Exists(std::string_view name);

  /// Runs tool `name` with `args` (the "arguments" object, may be empty) and returns the
  /// CallToolResult object: {content:[{type:"text",text}], structuredContent} or
  /// {content:[...], isError:true}.
  boost::json::object Call(std::string_view name, const boost::json::object& args,
                           const CallContext& ctx) const;

 private:
  std::shared_ptr<ToolBackend> backend_;
};

/// Standard base64 (RFC 4648 section 4) decoding; nullopt-like false on bad input.
bool Base64Decode(std::string_view in, std::string* out);

/// True when `in` is well-formed UTF-8 (RFC 3629).
bool IsValidUtf8(std::string_view in);

}  // namespace asb::mcp
