// agent-sandbox: the host binary. Each subcommand registers itself from its own file
// (cli/command.h); this file only wires them up, parses, and runs the chosen one.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <string_view>

#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/run_leftovers.h"
#include "cli/server_commands.h"
#include "cli/template_cmd.h"
#include "common/log.h"

int main(int argc, char** argv) {
  CLI::App app{"agent-sandbox: isolated Linux sandboxes for AI agents", "agent-sandbox"};
  app.require_subcommand(0, 1);
  std::string log_level = "warn";
  if (const char* env = std::getenv("AGENT_SANDBOX_LOG_LEVEL")) log_level = env;
  app.add_option("--log-level", log_level,
                 "Log level on stderr: trace, debug, info, warn, error, off "
                 "(env AGENT_SANDBOX_LOG_LEVEL)")
      ->capture_default_str();
  // Client options for the verbs that talk to a server; they may come before or after the
  // verb (fallthrough: an option a subcommand does not know is offered to its parents).
  asb::cli::ClientGlobals& globals = asb::cli::Globals();
  app.add_option("--url", globals.url, "Server URL (overrides $AGENT_SANDBOX_URL)");
  app.add_option("--api-key", globals.api_key, "API key (overrides $AGENT_SANDBOX_API_KEY)");
  app.add_flag("--json", globals.json, "Print JSON where a verb can");
  app.fallthrough();  // inherited by every subcommand registered below

  asb::cli::RegisterVersionCommand(app);
  asb::cli::RegisterRunCommand(app);
  asb::cli::RegisterRunWatchCommand(app);
  asb::cli::RegisterServeCommand(app);
  asb::cli::RegisterClientCommands(app);
  asb::cli::RegisterCopyCommand(app);
  asb::cli::RegisterSnapshotCommands(app);
  asb::cli::RegisterPortCommands(app);
  asb::cli::RegisterKeysCommand(app);
  asb::cli::RegisterMcpCommand(app);
  asb::cli::RegisterCodeCommands(app);
  asb::cli::RegisterOpenApiCommand(app);
  asb::cli::RegisterTemplateCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help text, or the usage error
    if (code == 0) return 0;       // --help
    // A usage error is agent-sandbox failing, not the command: docker's 125 (docs/adr/0005),
    // except for `serve`, whose bad settings exit 2 like its configuration errors (ADR 0007).
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      if (arg == "--log-level" || arg == "--url" || arg == "--api-key") {
        ++i;
        continue;
      }
      if (!arg.empty() && arg[0] == '-') continue;
      return arg == "serve" ? 2 : asb::cli::kExitRuntimeError;
    }
    return asb::cli::kExitRuntimeError;
  }
  if (!asb::InitLogging(log_level, asb::LogFormat::kText)) {
    return asb::cli::ReportError(
        asb::Error::InvalidArgument("unknown log level '" + log_level + "'"));
  }
  return asb::cli::RunSelectedAction(app);
}
