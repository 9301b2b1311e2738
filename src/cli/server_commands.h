// Subcommands of the server and its clients (issue 3 items 1 and 6), registered from main.cc
// like the others in cli/command.h:
//   serve                      the REST server (serve.cc)
//   create, ls, inspect, exec, cp, rm, timeout   client verbs against a running server
//                              (client_verbs.cc), reached at $AGENT_SANDBOX_URL
//                              (default http://127.0.0.1:8080) with $AGENT_SANDBOX_API_KEY sent
//                              as a Bearer token.
#pragma once

#include <CLI/CLI.hpp>

namespace asb::cli {

void RegisterServeCommand(CLI::App& app);      // serve.cc
void RegisterClientCommands(CLI::App& app);    // client_verbs.cc
void RegisterSnapshotCommands(CLI::App& app);  // snapshot_verbs.cc (issue 17)
void RegisterPortCommands(CLI::App& app);      // port_verbs.cc (issue 17): preview URLs
void RegisterCopyCommand(CLI::App& app);       // cp.cc (issue 17): files and trees, as tar
void RegisterKeysCommand(CLI::App& app);       // keys.cc (issue 5)
void RegisterMcpCommand(CLI::App& app);        // mcp.cc (issue 6): MCP on stdio
void RegisterOpenApiCommand(CLI::App& app);    // openapi.cc (issue 7): the API document

}  // namespace asb::cli
