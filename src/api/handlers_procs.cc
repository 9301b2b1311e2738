// Background process routes (ADR 0011), all under /v1/sandboxes/{id} with the exec scope:
//   POST   /processes                   start; 201 Process (answers once it runs, with pid)
//          body: command | argv, env {}, workdir, user, tag, stdin (bool), pty (bool), cols,
//          rows (PTY size, default 80x24), ring_bytes (replay ring, default 256 KiB)
//   GET    /processes                   200 {"processes":[Process...]} running + recent exited
//   GET    /processes/{pid}             200 Process
//   GET    /processes/{pid}/stream      200 NDJSON from now (api/proc_stream.h);
//                                       ?replay_bytes=N first replays recent output,
//                                       ?encoding=base64
//   GET    /processes/{pid}/ws          WebSocket terminal (api/proc_ws.h); ?replay_bytes=N
//   POST   /processes/{pid}/stdin       {"data": "...", "encoding": "utf8"|"base64"}
//                                       200 {"bytes": N}
//   POST   /processes/{pid}/close-stdin 204
//   POST   /processes/{pid}/signal      {"signal": "SIGTERM"} to its process group; 204
//   POST   /processes/{pid}/resize      {"cols": 120, "rows": 40}; 204
//   DELETE /processes/{pid}             kills its whole tree; 200 Process (final)
// Process = {pid, tag, argv, command, state ("running"|"exited"), exit_code (null while
// running), signal, started_at, ended_at (null while running), pty, stdin_open, output_bytes}.
#include <boost/json.hpp>
#include <limits>

#include "api/command_fields.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/proc_stream.h"
#include "api/proc_ws.h"
#include "api/resource_json.h"
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

json::object ProcessJson(const core::ProcessInfo& p) {
  json::object o;
  o["pid"] = p.pid;
  o["tag"] = p.tag;
  json::array argv;
  for (const auto& a : p.argv) argv.emplace_back(SanitizeUtf8(a));
  o["argv"] = std::move(argv);
  if (p.command) {
    o["command"] = SanitizeUtf8(*p.command);
  } else {
    o["command"] = nullptr;
  }
  bool running = p.state == "running";
  o["state"] = p.state;
  if (running) {
    o["exit_code"] = nullptr;
  } else {
    o["exit_code"] = p.exit_code;
  }
  o["signal"] = p.signal;
  o["started_at"] = FormatRfc3339(p.started_at_ms);
  if (running) {
    o["ended_at"] = nullptr;
  } else {
    o["ended_at"] = FormatRfc3339(p.ended_at_ms);
  }
  o["pty"] = p.pty;
  o["stdin_open"] = p.stdin_open;
  o["output_bytes"] = p.output_bytes;
  return o;
}

Result<core::ProcessOptions> ParseProcessStart(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(text));
  core::ProcessOptions o;
  ASB_TRY(ReadCommandFields(body, &o));
  ASB_ASSIGN_OR_RETURN(auto tag, body.String("tag"));
  if (tag) o.tag = std::move(*tag);
  ASB_ASSIGN_OR_RETURN(auto stdin_pipe, body.Bool("stdin"));
  o.stdin = stdin_pipe.value_or(false);
  ASB_ASSIGN_OR_RETURN(auto pty, body.Bool("pty"));
  o.pty = pty.value_or(false);
  ASB_ASSIGN_OR_RETURN(o.cols, body.Integer("cols", 1, core::kMaxTerminalSize));
  ASB_ASSIGN_OR_RETURN(o.rows, body.Integer("rows", 1, core::kMaxTerminalSize));
  ASB_ASSIGN_OR_RETURN(
      o.ring_bytes,
      body.Integer("ring_bytes", 1, static_cast<int64_t>(core::kMaxProcessRingBytes)));
  ASB_TRY(body.Finish());
  ASB_TRY(CheckCommandOrArgv(o));
  return o;
}

namespace {

HttpResponse ProcessResponse(int status, const std::string& sandbox_id,
                             const core::ProcessInfo& p) {
  HttpResponse r = JsonResponse(status, json::serialize(ProcessJson(p)));
  r.sandbox_id = sandbox_id;
  return r;
}

// {pid}: a positive decimal number; anything else is a process that does not exist.
Result<int> PidParam(const HttpRequest& req) {
  const std::string& s = req.Param("pid");
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos ||
      s[0] == '0') {
    return Fail(Error::NotFound("process " + s + " not found"));
  }
  return std::stoi(s);
}

Result<uint64_t> ReplayBytes(const HttpRequest& req) {
  const std::string* v = req.Query("replay_bytes");
  if (v == nullptr) return uint64_t{0};
  if (v->empty() || v->size() > 8 || v->find_first_not_of("0123456789") != std::string::npos) {
    return Fail(Error::InvalidArgument("replay_bytes: must be an integer in [0, " +
                                       std::to_string(core::kMaxProcessRingBytes) + "]"));
  }
  uint64_t n = std::stoull(*v);
  if (n > core::kMaxProcessRingBytes) {
    return Fail(Error::InvalidArgument("replay_bytes: must be an integer in [0, " +
                                       std::to_string(core::kMaxProcessRingBytes) + "]"));
  }
  return n;
}

bool IsWebSocketUpgrade(const HttpRequest& req) {
  std::string up(req.Header("upgrade"));
  for (char& c : up) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return up == "websocket";
}

}  // namespace

void AddProcessRoutes(Router& router, ApiContext& ctx) {
  core::ProcessService* m = &ctx.manager->processes();
  int64_t keepalive_ms = ctx.stream_keepalive_ms;

  router.Add("POST", "/v1/sandboxes/{id}/processes",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(core::ProcessOptions o, ParseProcessStart(req.body));
               ASB_ASSIGN_OR_RETURN(core::ProcessInfo p, m->StartProcess(OwnerOf(req), id, o));
               return ProcessResponse(201, id, p);
             }));

  router.Add("GET", "/v1/sandboxes/{id}/processes",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(auto all, m->ListProcesses(OwnerOf(req), id));
               json::array a;
               for (const auto& p : all) a.emplace_back(ProcessJson(p));
               json::object o;
               o["processes"] = std::move(a);
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }));

  router.Add("GET", "/v1/sandboxes/{id}/processes/{pid}",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(auto all, m->ListProcesses(OwnerOf(req), id));
               const core::ProcessInfo* found = nullptr;
               for (const auto& p : all) {
                 if (p.pid == pid && (found == nullptr || p.state == "running")) found = &p;
               }
               if (found == nullptr) {
                 return Fail(Error::NotFound("process " + std::to_string(pid) + " not found"));
               }
               return ProcessResponse(200, id, *found);
             }));

  router.Add("GET", "/v1/sandboxes/{id}/processes/{pid}/stream",
             Wrap([m, keepalive_ms](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(uint64_t replay, ReplayBytes(req));
               bool base64 = false;
               if (const std::string* enc = req.Query("encoding")) {
                 if (*enc == "base64") {
                   base64 = true;
                 } else if (*enc != "utf8" && *enc != "utf-8") {
                   return Fail(Error::InvalidArgument("encoding: must be \"utf8\" or \"base64\""));
                 }
               }
               ASB_ASSIGN_OR_RETURN(core::ProcessAttach a,
                                    m->AttachProcess(OwnerOf(req), id, pid, replay, false));
               HttpResponse resp;
               resp.status = 200;
               resp.content_type = "application/x-ndjson";
               resp.stream = MakeProcStreamBody(std::move(a), base64, keepalive_ms);
               resp.sandbox_id = id;
               return resp;
             }));

  router.Add("GET", "/v1/sandboxes/{id}/processes/{pid}/ws",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(uint64_t replay, ReplayBytes(req));
               if (!IsWebSocketUpgrade(req)) {
                 return Fail(Error::InvalidArgument(
                     "this route is a WebSocket: send an Upgrade: websocket request"));
               }
               ASB_ASSIGN_OR_RETURN(core::ProcessAttach a,
                                    m->AttachProcess(OwnerOf(req), id, pid, replay, true));
               HttpResponse resp;
               resp.status = 101;
               resp.content_type.clear();
               resp.websocket = MakeProcWebSocket(std::move(a));
               resp.sandbox_id = id;
               return resp;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/processes/{pid}/stdin",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto data, body.String("data"));
               ASB_ASSIGN_OR_RETURN(auto encoding, body.String("encoding"));
               ASB_TRY(body.Finish());
               if (!data) return Fail(Error::InvalidArgument("data: required"));
               std::string bytes = std::move(*data);
               if (encoding && *encoding == "base64") {
                 ASB_ASSIGN_OR_RETURN(bytes, Base64Decode(bytes, "data"));
               } else if (encoding && *encoding != "utf8" && *encoding != "utf-8") {
                 return Fail(Error::InvalidArgument("encoding: must be \"utf8\" or \"base64\""));
               }
               ASB_ASSIGN_OR_RETURN(uint64_t n, m->WriteProcessStdin(OwnerOf(req), id, pid, bytes));
               HttpResponse r = JsonResponse(200, "{\"bytes\":" + std::to_string(n) + "}");
               r.sandbox_id = id;
               return r;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/processes/{pid}/close-stdin",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_TRY(m->CloseProcessStdin(OwnerOf(req), id, pid));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/processes/{pid}/signal",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto signal, body.String("signal"));
               ASB_TRY(body.Finish());
               if (!signal) return Fail(Error::InvalidArgument("signal: required"));
               ASB_TRY(m->SignalProcess(OwnerOf(req), id, pid, *signal));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/processes/{pid}/resize",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto cols, body.Integer("cols", 1, core::kMaxTerminalSize));
               ASB_ASSIGN_OR_RETURN(auto rows, body.Integer("rows", 1, core::kMaxTerminalSize));
               ASB_TRY(body.Finish());
               if (!cols || !rows) return Fail(Error::InvalidArgument("cols and rows: required"));
               ASB_TRY(m->ResizeProcess(OwnerOf(req), id, pid, *cols, *rows));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));

  router.Add("DELETE", "/v1/sandboxes/{id}/processes/{pid}",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int pid, PidParam(req));
               ASB_ASSIGN_OR_RETURN(core::ProcessInfo p, m->KillProcess(OwnerOf(req), id, pid));
               return ProcessResponse(200, id, p);
             }));
}

}  // namespace asb::api
