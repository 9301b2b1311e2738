// `sudo` in a sandbox: sandboxd's binary under the name sudo (the backends bind it over the
// template's /usr/bin/sudo, docs/adr/0028-sudo.md). It asks the sandbox's sandboxd to run the
// command as root (or `-u sandbox`) with this process's stdin, stdout and stderr, forwards the
// signals it receives, and ends as the command ended (sudo_wire.h). No password, ever: the
// sandbox user may do anything root in the sandbox may, as on E2B, and root in a sandbox is
// confined exactly as the API's `user: "root"` is.
//
// The command line is sudo(8)'s, as far as it means something here:
//   sudo [-AbEHknPSis] [-u user] [-g group] [-D dir] [-p prompt] [-C n] [-T t] [-h host]
//        [--preserve-env[=list]] [--] [NAME=value]... command [arg...]
//   sudo -v | -k | -K | -l | -V | -h
// The environment is reset as Debian's sudoers does it (env_reset, secure_path, HOME and the
// user's names set for the target) unless -E keeps it; SUDO_USER/UID/GID/COMMAND are set.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sandboxd/sudo_wire.h"

namespace asb::sandboxd {

/// A user of the sandbox as /etc/passwd says (or the built-in defaults for root and sandbox).
struct SudoAccount {
  std::string name;
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string home;
  std::string shell;
};

/// Finds `spec` ("root", "0", "#0", "sandbox", "1000", "#1000" or another name of uid 0 or
/// 1000) among `passwd` (the file's text). nullopt when it is neither root nor the sandbox user.
std::optional<SudoAccount> FindSudoAccount(const std::string& passwd, const std::string& spec);

/// What one `sudo ...` command line asks for.
struct SudoInvocation {
  enum class Action { kRun, kVersion, kHelp, kList, kNothing };
  Action action = Action::kRun;
  bool background = false;  // -b
  SudoRequest request;      // for kRun
};

/// Parses argv (argv[0] is the program) for the caller `caller_uid` in `cwd`, with the
/// caller's environment `env` ("NAME=value" each) and /etc/passwd's text. Errors:
/// kInvalidArgument with sudo's own wording ("unknown user x", "option requires an argument
/// -- 'u'", "a command is required" ...).
Result<SudoInvocation> ParseSudoCommandLine(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& env,
                                            const std::string& passwd, uint32_t caller_uid,
                                            const std::string& cwd);

/// The program: parses, connects, relays, exits as the command did (1 for sudo's own errors,
/// which it prints as "sudo: ..." on stderr).
int SudoMain(int argc, char** argv);

}  // namespace asb::sandboxd
