// `agent-sandbox template build --dockerfile PATH [--name N] [--context DIR]` and
// `agent-sandbox template import ARCHIVE --name N` (ADR 0012). They hang off
// the `template` command of template_cmd.cc: its `build` takes the Dockerfile options through
// AddDockerfileOptions and hands over to RunDockerfileBuild when --dockerfile is given.
//
// Exit codes, as the other template subcommands: 0 success; 1 the build or import failed
// (a RUN step, a refused archive, ...); 125 bad usage.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/local_sandbox.h"

namespace asb::cli {

struct DockerfileArgs {
  std::string dockerfile;   // empty: not a Dockerfile build
  std::string name;         // empty: LABEL template.name
  std::string context;      // empty: the Dockerfile's directory
  ResourceFlags resources;  // limits of every RUN step, checked as a sandbox's
};

/// Adds --dockerfile, --name, --context and the resource flags of RUN steps (--cpus,
/// --memory-mb, --pids-limit: a sandbox's defaults and ranges, cli/local_sandbox.h) to
/// `build`; the returned args are filled on parse.
std::shared_ptr<DockerfileArgs> AddDockerfileOptions(CLI::App* build);

/// Builds the Dockerfile into <data_dir>/templates, printing one progress line per step on
/// stdout (RUN output goes to stdout too). Returns the exit code.
int RunDockerfileBuild(const DockerfileArgs& args, const std::string& data_dir);

/// Registers `import ARCHIVE --name N [--data-dir DIR]` below `template`.
void RegisterTemplateImportCommand(CLI::App* template_cmd);

}  // namespace asb::cli
