#include "cli/command.h"

#include <cstdio>
#include <map>

namespace asb::cli {
namespace {

std::map<const CLI::App*, Action>& Actions() {
  static std::map<const CLI::App*, Action> actions;
  return actions;
}

}  // namespace

void SetAction(CLI::App* sub, Action action) { Actions()[sub] = std::move(action); }

int RunSelectedAction(CLI::App& app) {
  const Action* chosen = nullptr;
  const CLI::App* node = &app;
  for (;;) {
    auto it = Actions().find(node);
    if (it != Actions().end()) chosen = &it->second;
    auto subs = node->get_subcommands();
    if (subs.empty()) break;
    node = subs.front();
  }
  if (chosen == nullptr) {
    std::fputs(app.help().c_str(), stderr);
    return 2;
  }
  return (*chosen)();
}

int ReportError(const Error& error) {
  std::fprintf(stderr, "agent-sandbox: %s\n", error.detail().c_str());
  return kExitRuntimeError;
}

}  // namespace asb::cli
