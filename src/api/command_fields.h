// The command fields that the exec routes (handlers_exec.cc) and the background-process routes
// (handlers_procs.cc) read alike from a JSON body: command | argv, env, workdir, user. One
// reader, so both answer the same errors (api/openapi.json and the e2e tests rely on them).
// "command" is a string run by /bin/sh -c, or (seed B's contract, ADR 0007) an argv list: an
// alias of "argv".
#pragma once

#include <utility>

#include "api/json_body.h"
#include "common/result.h"

namespace asb::api {

/// Reads "command", "argv", "env", "workdir", "user" from `body`, in that order, into the
/// same-named members of `o` (core::ExecOptions or core::ProcessOptions); absent fields leave
/// them as they are. A "command" list goes to argv. Errors: kInvalidArgument from JsonBody
/// naming the field of a wrong type; "command and argv: both given with different values".
template <typename Options>
Status ReadCommandFields(JsonBody& body, Options* o) {
  ASB_ASSIGN_OR_RETURN(JsonBody::StringOrList command, body.StringOrStringArray("command"));
  o->command = std::move(command.string);
  ASB_ASSIGN_OR_RETURN(auto argv, body.StringArray("argv"));
  ASB_ASSIGN_OR_RETURN(argv,
                       MergeAlias("command", std::move(command.list), "argv", std::move(argv)));
  if (argv) o->argv = std::move(*argv);
  ASB_ASSIGN_OR_RETURN(auto env, body.StringMap("env"));
  if (env) o->env = std::move(*env);
  ASB_ASSIGN_OR_RETURN(auto workdir, body.String("workdir"));
  if (workdir) o->workdir = std::move(*workdir);
  ASB_ASSIGN_OR_RETURN(auto user, body.String("user"));
  if (user) o->user = std::move(*user);
  return {};
}

/// Exactly one of command / a non-empty argv (checked after JsonBody::Finish(), so an unknown
/// field is reported first). Errors: kInvalidArgument "give either command or argv, not both",
/// "command or argv: required".
template <typename Options>
Status CheckCommandOrArgv(const Options& o) {
  if (o.command && !o.argv.empty()) {
    return Fail(Error::InvalidArgument("give either command or argv, not both"));
  }
  if (!o.command && o.argv.empty()) {
    return Fail(Error::InvalidArgument("command or argv: required"));
  }
  return {};
}

}  // namespace asb::api
