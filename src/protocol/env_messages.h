// The "env.set" operation (docs/design/sandbox-protocol.md, section 7): the host replaces the
// environment every later command of the sandbox starts from. A warm pool's sandbox is made
// before anyone asked for it, with its template's environment; the create that claims it sends
// its own (core/warm_pool.h), so a create with `envs` can take a pooled sandbox too.
//
//   env.set   OPEN EnvSetRequest; RESULT {}. `env` replaces what sandboxd's --config-fd gave:
//             the defaults (PATH, HOME, USER, LANG) overlaid with it. Commands already running
//             keep theirs. A name that is empty or holds '=' or NUL, or a value with NUL:
//             invalid_request, and nothing changes.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::protocol {

struct EnvSetRequest {
  std::map<std::string, std::string> env;  // name -> value
};

std::string EncodeEnvSetRequest(const EnvSetRequest& m);  // op "env.set"
/// Errors: kBackend on malformed JSON or a member of the wrong type.
Result<EnvSetRequest> DecodeEnvSetRequest(std::string_view json);

}  // namespace asb::protocol
