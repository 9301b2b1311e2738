// `agent-sandbox openapi`: prints the OpenAPI 3.1 document of the REST API (api/openapi.json,
// embedded at build time; the same bytes GET /openapi.json serves) to stdout.
#include "api/openapi.h"

#include <cstdio>

#include "cli/command.h"
#include "cli/server_commands.h"

namespace asb::cli {

void RegisterOpenApiCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("openapi", "Print the OpenAPI 3.1 document of the REST API");
  SetAction(sub, [] {
    std::string_view doc = api::OpenApiJson();
    std::fwrite(doc.data(), 1, doc.size(), stdout);
    if (doc.empty() || doc.back() != '\n') std::fputc('\n', stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  });
}

}  // namespace asb::cli
