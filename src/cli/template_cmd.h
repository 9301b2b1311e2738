// `agent-sandbox template build|ls|rm` (template_cmd.cc; ADR 0012).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace asb::cli {

/// Registers `template` with its subcommands build, ls and rm.
void RegisterTemplateCommand(CLI::App& app);

/// Where the bundled templates' sources (templates/<name>/template.toml) are:
/// $AGENT_SANDBOX_TEMPLATES_SRC, else ../../templates from the executable (a build tree's
/// build/bin), else ../share/agent-sandbox/templates (installed), else ./templates.
std::string DefaultTemplatesSrcDir();

}  // namespace asb::cli
