// Subcommands of the server and its clients (ADR 0007), registered from main.cc
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
void RegisterSnapshotCommands(CLI::App& app);  // snapshot_verbs.cc (ADR 0008)
void RegisterPortCommands(CLI::App& app);      // port_verbs.cc (ADR 0015): preview URLs
void RegisterCopyCommand(CLI::App& app);       // cp.cc: files and trees, as tar
void RegisterKeysCommand(CLI::App& app);       // keys.cc (api/AUTH.md)
void RegisterMcpCommand(CLI::App& app);        // mcp.cc (ADR 0010): MCP on stdio
void RegisterOpenApiCommand(CLI::App& app);    // openapi.cc (ADR 0007): the API document
void RegisterCodeCommands(CLI::App& app);      // code_verbs.cc (ADR 0019): code contexts

}  // namespace asb::cli
