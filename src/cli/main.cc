// agent-sandbox: the host binary. Each subcommand registers itself from its own file
// (cli/command.h); this file only wires them up, parses, and runs the chosen one.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/run_leftovers.h"
#include "cli/server_commands.h"
#include "cli/template_cmd.h"
#include "common/log.h"

namespace {

// The verb `name` names (or one of its aliases), or nullptr.
const CLI::App* FindVerb(const CLI::App& app, const std::string& name) {
  auto found = app.get_subcommands([&](const CLI::App* s) { return s->check_name(name); });
  return found.empty() ? nullptr : found.front();
}

// Whether `arg` (an option as typed: "-e", "--env", "--env=K=V", "-it") takes the next argument
// as its value, in `sub` or, falling through, in `app`.
bool TakesNextArg(const CLI::App& app, const CLI::App& sub, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;
  if (arg.size() > 2 && arg[1] != '-') return false;  // "-it", "-eK=V": all in one
  const CLI::Option* opt = sub.get_option_no_throw(arg);
  if (opt == nullptr) opt = app.get_option_no_throw(arg);
  return opt != nullptr && opt->get_items_expected_min() > 0;
}

// Docker's habit: `exec ID ls -la` runs `ls -la` (everything after the id is the command). CLI11
// would read -la as an option of exec, so a "--" goes in after the id when none is there.
void InsertExecSeparator(const CLI::App& app, std::vector<std::string>& args) {
  size_t i = 1;
  for (; i < args.size() && args[i].rfind('-', 0) == 0; ++i) {
    if (TakesNextArg(app, app, args[i])) ++i;  // a global option's value
  }
  if (i >= args.size() || args[i] != "exec") return;
  const CLI::App* exec = FindVerb(app, "exec");
  if (exec == nullptr) return;
  for (++i; i < args.size(); ++i) {
    if (args[i] == "--") return;
    if (args[i].rfind('-', 0) == 0) {
      if (TakesNextArg(app, *exec, args[i])) ++i;
      continue;
    }
    // args[i] is the id.
    if (i + 1 < args.size() && args[i + 1] != "--") args.insert(args.begin() + i + 1, "--");
    return;
  }
}

// The edit distance of two short words, a swap of neighbours counting one ("lgos" is "logs").
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The first word that is not an option (or a global option's value) when it names no verb:
// CLI11 would say "The following arguments were not expected: ..."; say what git and docker say.
bool ReportUnknownVerb(const CLI::App& app, const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind('-', 0) == 0) {
      if (TakesNextArg(app, app, args[i])) ++i;
      continue;
    }
    if (FindVerb(app, args[i]) != nullptr) return false;
    std::string best;
    size_t best_d = 3;  // suggest only what is close
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      const size_t d = Distance(args[i], sub->get_name());
      if (d < best_d) best_d = d, best = sub->get_name();
    }
    std::cerr << "agent-sandbox: unknown command \"" << args[i] << "\"";
    if (!best.empty()) std::cerr << "; did you mean \"" << best << "\"?";
    std::cerr << "\nRun 'agent-sandbox --help' for the commands.\n";
    return true;
  }
  return false;
}

}  // namespace

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

  std::vector<std::string> args(argv, argv + argc);
  InsertExecSeparator(app, args);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes it so
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0 && ReportUnknownVerb(app, args)) {
      return asb::cli::kExitRuntimeError;
    }
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
