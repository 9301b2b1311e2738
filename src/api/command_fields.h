// The command fields that the exec routes (handlers_exec.cc) and the background-process routes
// (handlers_procs.cc) read alike from a JSON body: command | argv, env, workdir, user. One
// reader, so both answer the same errors (api/openapi.json and the e2e tests rely on them).
#pragma once

#include <utility>

#include "api/json_body.h"
#include "common/result.h"

namespace asb::api {

/// Reads "command", "argv", "env", "workdir", "user" from `body`, in that order, into the
/// same-named members of `o` (core::ExecOptions or core::ProcessOptions); absent fields leave
/// them as they are. Errors: kInvalidArgument from JsonBody naming the field of a wrong type.
template <typename Options>
Status ReadCommandFields(JsonBody& body, Options* o) {
  ASB_ASSIGN_OR_RETURN(o->command, body.String("command"));
  ASB_ASSIGN_OR_RETURN(auto argv, body.StringArray("argv"));
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
