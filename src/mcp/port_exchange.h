// One HTTP/1.1 exchange over a connected socket to a port inside a sandbox, for the
// sandbox_port_request tool over the manager (mcp/manager_backend.h): the request the ports
// proxy would send (api/port_proxy.h: Host 127.0.0.1:{port}, X-Forwarded-Prefix,
// Connection: close, Content-Length), then the answer read and parsed (Beast) until it is
// complete, its body passes max_body_bytes, the deadline passes or the call is cancelled.
// An absolute-path Location is prefixed as the proxy prefixes it.
#pragma once

#include <string>

#include "common/unique_fd.h"
#include "mcp/backend.h"

namespace asb::mcp {

/// Sends `req` on `fd` (connected to 127.0.0.1:req.port of sandbox `sandbox_id`) and reads the
/// answer. Errors: "timeout" (no complete answer within req.timeout_ms), "cancelled",
/// "backend_error" (the upstream closed early or answered something that is not HTTP).
ToolResult<PortResponse> ExchangeOverSocket(UniqueFd fd, const std::string& sandbox_id,
                                            const PortRequest& req);

}  // namespace asb::mcp
