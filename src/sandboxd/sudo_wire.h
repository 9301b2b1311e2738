// The messages between a sandbox's `sudo` (sudo_client.h) and sandboxd (sudo_server.h).
//
// Why a relay and not the real sudo: every command runs with no_new_privs (exec_child.h, step
// 7), so a setuid sudo can never raise privileges in a sandbox. sandboxd, which already starts
// commands as root when the host asks (the API's `user: "root"`), starts them for `sudo` too:
// the same ChildPlan, the same capabilities, seccomp filter and cgroups, so root reached this way
// is exactly as confined as root reached through the API (docs/adr/0028-sudo.md).
//
// Transport: a SOCK_SEQPACKET unix socket bound in the abstract namespace (unix(7)), which is
// per network namespace: every sandbox has its own (an ns sandbox's netns, a microVM's kernel),
// so only the sandbox's own processes can reach its sandboxd. One connection per command:
//   client -> server  one request (EncodeSudoRequest) carrying the client's stdin, stdout and
//                     stderr as SCM_RIGHTS, in that order;
//   client -> server  "signal N" for each signal the client receives (forwarded to the
//                     command's process group);
//   server -> client  exactly one of "exit N" (the command exited with N), "signal N" (it was
//                     killed by signal N) or "error TEXT" (it never ran: TEXT says why);
//   then the server closes. A client that goes away takes its command with it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::sandboxd {

/// The abstract socket's name (without the leading NUL byte).
inline constexpr char kSudoSocketName[] = "agent-sandbox/sudo";
/// The largest request: its argv and environment together. Below the default socket send
/// buffer (net.core.wmem_default, 208 KiB), which bounds one SOCK_SEQPACKET message.
inline constexpr size_t kSudoRequestMax = 160 * 1024;
/// The largest reply or signal message.
inline constexpr size_t kSudoMessageMax = 1024;

struct SudoRequest {
  bool as_root = true;            // false: the sandbox user (uid 1000)
  std::string cwd = "/";          // absolute
  std::vector<std::string> argv;  // non-empty; argv[0] is looked up in env's PATH
  std::vector<std::string> env;   // "NAME=value" each; overlaid on the sandbox's base env
};

/// "asb-sudo/1\0" then user, cwd, argc (decimal), argv..., env..., each NUL-terminated.
std::string EncodeSudoRequest(const SudoRequest& r);
/// Errors: kInvalidArgument naming what is wrong (another version, a missing field, an empty
/// argv, a relative cwd, an env entry without '=', more than kSudoRequestMax bytes).
Result<SudoRequest> DecodeSudoRequest(std::string_view bytes);

}  // namespace asb::sandboxd
