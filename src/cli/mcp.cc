// `agent-sandbox mcp` (ADR 0010): an MCP server on stdin/stdout whose tools act on the
// server at $AGENT_SANDBOX_URL (default http://127.0.0.1:8080) with $AGENT_SANDBOX_API_KEY as
// the Bearer token. stdout carries only MCP messages; errors and logs go to stderr.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "api/http_client.h"
#include "cli/command.h"
#include "cli/server_commands.h"
#include "mcp/rest_backend.h"
#include "mcp/stdio.h"

namespace asb::cli {

void RegisterMcpCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "mcp", "Serve MCP on stdio for the server at $AGENT_SANDBOX_URL ($AGENT_SANDBOX_API_KEY)");
  SetAction(sub, [] {
    const char* url = std::getenv("AGENT_SANDBOX_URL");
    const char* key = std::getenv("AGENT_SANDBOX_API_KEY");
    auto client =
        api::HttpClient::Create(url && *url ? url : "http://127.0.0.1:8080", key ? key : "");
    if (!client) return ReportError(client.error());
    return mcp::ServeStdio(mcp::Tools(std::make_shared<mcp::RestBackend>(std::move(*client))),
                           stdin, stdout);
  });
}

}  // namespace asb::cli
