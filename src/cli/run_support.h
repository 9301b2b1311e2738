// Pure helpers of `agent-sandbox run` (and of later local subcommands): where the data
// directory, templates and sandboxd are, parsing of --env, and the exit-code convention.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "protocol/messages.h"

namespace asb::cli {

/// The data directory: $AGENT_SANDBOX_DATA_DIR if set and non-empty, else
/// /var/lib/agent-sandbox.
std::string DefaultDataDir();

/// The root filesystem of template `name`: <data_dir>/templates/<name>/rootfs. Errors:
/// kInvalidArgument for a name that is not [a-z0-9][a-z0-9_-]*; kNotFound when it is not
/// built, with a message naming the templates that are and how to build one.
Result<std::string> TemplateRootfs(const std::string& data_dir, const std::string& name);

/// The sandboxd binary: $AGENT_SANDBOX_SANDBOXD if set, else `sandboxd` in the directory of
/// this executable (/proc/self/exe). Errors: kUnavailable when it is not an executable file.
Result<std::string> FindSandboxd();

/// Parses --env values the way `docker run -e` does: "K=V" sets K to V (V may be empty or hold
/// '='); a bare "K" copies K from this process's environment and is dropped when unset. Errors:
/// kInvalidArgument for an empty key or a key or value containing a NUL byte.
Result<std::map<std::string, std::string>> ParseEnvAssignments(
    const std::vector<std::string>& items);

/// The exit code of `agent-sandbox run` for a finished command: 124 when it timed out (as
/// timeout(1)), 128+N when signal N killed it (as the shell), else its exit status.
int ExitCodeFor(const protocol::ExecResult& result);

}  // namespace asb::cli
