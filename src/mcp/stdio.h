// The stdio transport of MCP (spec 2025-06-18 basic/transports "stdio"): newline-delimited
// JSON-RPC messages on stdin, answers on stdout, nothing else on stdout (logs go to stderr).
#pragma once

#include <cstdio>

#include "mcp/tools.h"

namespace asb::mcp {

/// Serves one session on `in`/`out` until end of input; then cancels running tool calls
/// (the client went away, ADR 0010) and returns 0.
int ServeStdio(Tools tools, std::FILE* in, std::FILE* out);

}  // namespace asb::mcp
