// Exec routes (ADR 0007, ADR 0016):
//   POST /v1/sandboxes/{id}/exec         run to completion, 200 {stdout, stderr, exit_code,
//                                        signal, timed_out, truncated, stdout_truncated,
//                                        stderr_truncated, oom_killed, pids_limited,
//                                        duration_ms}; max_output_bytes caps each stream
//                                        separately, truncated = either was cut
//   POST /v1/sandboxes/{id}/exec/stream  200 application/x-ndjson (api/exec_stream.h); flow
//                                        controlled, so uncapped unless max_output_bytes asks
// Body: {"command": "echo hi"} (run by /bin/sh -c) or {"argv": ["ls", "-l"]} (alias: seed B's
// {"command": ["ls", "-l"]}), and optionally
// env {}, workdir, timeout (seconds; alias timeout_seconds), stdin (string), max_output_bytes
// (per stream), user ("sandbox" | "root"), encoding ("utf8" default | "base64"). Errors found
// before the command starts are ordinary JSON errors (404 for an unknown sandbox, 400 for a bad
// body).
#include <boost/json.hpp>
#include <limits>

#include "api/command_fields.h"
#include "api/exec_result_json.h"
#include "api/exec_stream.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/resource_json.h"
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// A number of seconds > 0, or nullopt when absent. Errors: "<name>: must be a number of
// seconds > 0".
Result<std::optional<double>> PositiveSeconds(JsonBody& body, std::string_view name) {
  ASB_ASSIGN_OR_RETURN(auto secs, body.Number(name));
  if (secs && !(*secs > 0)) {
    return Fail(Error::InvalidArgument(std::string(name) + ": must be a number of seconds > 0"));
  }
  return secs;
}

}  // namespace

// The body of an exec (api/resource_json.h).
Result<ParsedExec> ParseExecRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(text));
  ParsedExec p;
  core::ExecOptions& o = p.options;
  ASB_TRY(ReadCommandFields(body, &o));
  // timeout_seconds: the name create (and seed B's exec) uses, an alias here (ADR 0007).
  ASB_ASSIGN_OR_RETURN(auto timeout, PositiveSeconds(body, "timeout"));
  ASB_ASSIGN_OR_RETURN(auto alias, PositiveSeconds(body, "timeout_seconds"));
  ASB_ASSIGN_OR_RETURN(o.timeout_seconds, MergeAlias("timeout", timeout, "timeout_seconds", alias));
  ASB_ASSIGN_OR_RETURN(auto cap,
                       body.Integer("max_output_bytes", 1, std::numeric_limits<int64_t>::max()));
  if (cap) o.max_output_bytes = static_cast<uint64_t>(*cap);
  ASB_ASSIGN_OR_RETURN(o.stdin_data, body.String("stdin"));
  ASB_ASSIGN_OR_RETURN(auto encoding, body.String("encoding"));
  const std::string enc = encoding.value_or("utf8");
  if (enc == "base64") {
    p.base64 = true;
  } else if (enc != "utf8" && enc != "utf-8") {
    return Fail(Error::InvalidArgument("encoding: must be \"utf8\" or \"base64\""));
  }
  ASB_TRY(body.Finish());
  ASB_TRY(CheckCommandOrArgv(o));
  return p;
}

void AddExecRoutes(Router& router, ApiContext& ctx) {
  core::ExecService* m = &ctx.manager->exec();
  int64_t keepalive_ms = ctx.stream_keepalive_ms;

  router.Add("POST", "/v1/sandboxes/{id}/exec", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(ParsedExec p, ParseExecRequest(req.body));
               p.options.abandoned = req.client_gone;
               ASB_ASSIGN_OR_RETURN(core::ExecOutcome out, m->Exec(OwnerOf(req), id, p.options));
               json::object o;
               if (p.base64) {
                 o["stdout"] = Base64Encode(out.stdout_data);
                 o["stderr"] = Base64Encode(out.stderr_data);
                 o["encoding"] = "base64";
               } else {
                 o["stdout"] = SanitizeUtf8(out.stdout_data);
                 o["stderr"] = SanitizeUtf8(out.stderr_data);
               }
               PutExecResult(out.result, &o);
               HttpResponse resp = JsonResponse(200, json::serialize(o));
               resp.sandbox_id = id;
               return resp;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/exec/stream",
             Wrap([m, keepalive_ms](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(ParsedExec p, ParseExecRequest(req.body));
               ASB_ASSIGN_OR_RETURN(core::ExecStream s, m->StartExec(OwnerOf(req), id, p.options));
               HttpResponse resp;
               resp.status = 200;
               resp.content_type = "application/x-ndjson";
               resp.stream = MakeExecStreamBody(std::move(s), p.base64, keepalive_ms);
               resp.sandbox_id = id;
               return resp;
             }));
}

}  // namespace asb::api
