// Seed A's session routes (ADR 0007), so that seed A's README curl
// examples, its TypeScript SDK (sdk/typescript in vivek1504/agent-sandbox) and programs written
// against them work unchanged. Every answer has the fields seed A's own server sends
// (src/routes/exec.ts over its guest runtime.js), in its error shape (api/seed_a_wire.h), plus
// fields only for what seed A cannot express (binary bytes, timeouts, truncation, our sandbox
// id). A "session" is a caller-chosen name (1-64 chars of [A-Za-z0-9_.-]) mapped, per owner, to
// one of our sandboxes in the database (store/exec_sessions.h): after a restart the same name
// reaches the same sandbox; the mapping ends when the sandbox does (destroyed, reaped, lost).
//   GET    /exec/templates          200 {templates:[{name, displayName, description, version,
//                                   tools, baseImage, createdAt, resources?}]}
//   POST   /exec/{session}/execute  body {command, args?, cwd?, env?, timeout? (ms),
//                                   template?, stdin?}; creates the session's sandbox on first
//                                   use (template applies then).
//                                   200 {exitCode, signal?, duration, output:[{stream, data,
//                                   ts, dataBase64?}], timedOut, truncated, sessionId,
//                                   sandboxId}; data is UTF-8 (invalid bytes replaced, as
//                                   seed A does) and dataBase64 the exact bytes when they differ.
//                                   NDJSON (Accept: application/x-ndjson or ?format=ndjson):
//                                   the output as it arrives, then {type:"result", ...}
//   POST   /exec/{session}/write    {path, content | contentBase64, mode?} 200 {bytesWritten}
//   GET    /exec/{session}/read?path=  200 {content, size} (+ contentBase64 when the bytes
//                                   are not UTF-8; content is then their lossy text)
//   GET    /exec/{session}/files?path=&recursive=  200 {files:[{path, type, size}]}: path
//                                   relative to /workspace, type "dir" (size 0) or "file"
//   DELETE /exec/{session}          200 {destroyed: true | false (no such session)}
//   GET    /exec/                   200 {sessions:[{sessionId, sandboxId, state, template,
//                                   createdAt, lastActivityAt}]}; times are Unix ms
// Seed A's defects fixed: guest errors (missing file, bad path) are errors with a 4xx status,
// not 500; empty files can be written; binary content survives; sessions of another owner
// are unknown ones (OwnerOf()).
#include <boost/json.hpp>
#include <optional>
#include <utility>

#include "api/handlers.h"
#include "api/json_body.h"
#include "api/json_number.h"
#include "api/seed_a_wire.h"
#include "api/text.h"
#include "common/clock.h"
#include "core/paths.h"
#include "core/sandbox_manager.h"
#include "store/exec_sessions.h"

namespace asb::api {

namespace json = boost::json;

namespace {

struct SeedA {
  core::SandboxManager* m;                          // its lifecycle, exec and files services
  std::optional<store::ExecSessionStore> sessions;  // nullopt: no database (unit tests)
  int64_t keepalive_ms;
  const Clock* clock;
};

Result<store::ExecSessionStore*> Sessions(SeedA& s) {
  if (!s.sessions) return Fail(Error::Unavailable("sessions need the database"));
  return &*s.sessions;
}

Result<std::string> SessionParam(const HttpRequest& req) {
  const std::string& name = req.Param("session");
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-')) {
      ok = false;
    }
  }
  if (!ok) {
    return Fail(Error::InvalidArgument("session id: 1-64 characters of [A-Za-z0-9_.-]"));
  }
  return name;
}

// The live sandbox of an existing session, or nullopt (no such session, or its sandbox is
// gone: the mapping is dropped).
Result<std::optional<std::string>> Existing(SeedA& s, const std::string& owner,
                                            const std::string& name) {
  ASB_ASSIGN_OR_RETURN(store::ExecSessionStore * db, Sessions(s));
  ASB_ASSIGN_OR_RETURN(std::optional<std::string> id, db->Find(owner, name));
  if (!id) return id;
  Result<core::SandboxInfo> info = s.m->lifecycle().Get(owner, *id);
  if (!info && info.error().code() == ErrorCode::kNotFound) {
    ASB_TRY(db->Erase(owner, name, *id));
    return std::optional<std::string>();
  }
  if (!info) return Fail(info.error());
  return id;
}

// The session's sandbox, created with `tmpl` when the session is new.
Result<std::string> Ensure(SeedA& s, const std::string& owner, const std::string& name,
                           const std::optional<std::string>& tmpl) {
  ASB_ASSIGN_OR_RETURN(std::optional<std::string> id, Existing(s, owner, name));
  if (id) return *id;
  core::CreateRequest cr;
  if (tmpl) cr.template_name = *tmpl;
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo info, s.m->lifecycle().Create(owner, cr));
  Result<std::string> mapped = s.sessions->Insert(owner, name, info.id, s.clock->NowUnixMs());
  if (!mapped || *mapped != info.id) (void)s.m->lifecycle().Destroy(owner, info.id);  // lost a race
  return mapped;
}

bool WantsNdjson(const HttpRequest& req) {
  const std::string* f = req.Query("format");
  if (f != nullptr) return *f == "ndjson";
  return req.Header("accept").find("application/x-ndjson") != std::string_view::npos;
}

json::object OutputEntry(std::string_view stream, const std::string& data, int64_t ts) {
  json::object e;
  e["stream"] = stream;
  std::string text = SanitizeUtf8(data);
  if (text != data) e["dataBase64"] = Base64Encode(data);
  e["data"] = std::move(text);
  e["ts"] = ts;
  return e;
}

Result<HttpResponse> Execute(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
  ASB_ASSIGN_OR_RETURN(auto tmpl, body.String("template"));
  ASB_ASSIGN_OR_RETURN(auto command, body.String("command"));
  std::vector<std::string> args;
  ASB_ASSIGN_OR_RETURN(auto args_field, body.StringArray("args"));
  if (args_field) args = std::move(*args_field);
  ASB_ASSIGN_OR_RETURN(auto cwd, body.String("cwd"));
  ASB_ASSIGN_OR_RETURN(auto env, body.StringMap("env"));
  ASB_ASSIGN_OR_RETURN(auto timeout_ms, body.Number("timeout"));
  ASB_ASSIGN_OR_RETURN(auto stdin_data, body.String("stdin"));
  ASB_TRY(body.Finish());
  if (!command || command->empty()) return Fail(Error::InvalidArgument("command is required"));
  if (timeout_ms && !(*timeout_ms > 0)) {
    return Fail(Error::InvalidArgument("timeout: must be a number of milliseconds > 0"));
  }
  core::ExecOptions o;
  o.argv.push_back(*command);
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  if (cwd) o.workdir = *cwd;
  if (env) o.env = std::move(*env);
  if (timeout_ms) o.timeout_seconds = *timeout_ms / 1000.0;
  o.stdin_data = std::move(stdin_data);

  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::string id, Ensure(s, owner, name, tmpl));
  HttpResponse resp;
  if (WantsNdjson(req)) {
    ASB_ASSIGN_OR_RETURN(core::ExecStream stream, s.m->exec().StartExec(owner, id, o));
    resp.status = 200;
    resp.content_type = "application/x-ndjson";
    resp.stream = MakeSeedAExecStreamBody(std::move(stream), s.keepalive_ms, *s.clock);
  } else {
    o.abandoned = req.client_gone;
    ASB_ASSIGN_OR_RETURN(core::ExecOutcome out, s.m->exec().Exec(owner, id, o));
    const int64_t ts = s.clock->NowUnixMs();
    json::array output;
    if (!out.stdout_data.empty()) output.emplace_back(OutputEntry("stdout", out.stdout_data, ts));
    if (!out.stderr_data.empty()) output.emplace_back(OutputEntry("stderr", out.stderr_data, ts));
    json::object res;
    AddSeedAResult(out.result, &res);
    res["output"] = std::move(output);
    res["sessionId"] = name;
    res["sandboxId"] = id;
    resp = JsonResponse(200, json::serialize(res));
  }
  resp.sandbox_id = id;
  return resp;
}

Result<HttpResponse> Write(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
  ASB_ASSIGN_OR_RETURN(auto path, body.String("path"));
  ASB_ASSIGN_OR_RETURN(auto content, body.String("content"));
  ASB_ASSIGN_OR_RETURN(auto b64, body.String("contentBase64"));
  ASB_ASSIGN_OR_RETURN(auto mode, body.Integer("mode", 0, 0777));
  ASB_TRY(body.Finish());
  if (!path || path->empty()) return Fail(Error::InvalidArgument("path: required"));
  if (content && b64) {
    return Fail(Error::InvalidArgument("give either content or contentBase64, not both"));
  }
  if (!content && !b64) return Fail(Error::InvalidArgument("content: required (may be \"\")"));
  std::string data;
  if (b64) {
    ASB_ASSIGN_OR_RETURN(data, Base64Decode(*b64, "contentBase64"));
  } else {
    data = std::move(*content);
  }
  std::optional<uint32_t> file_mode;
  if (mode) file_mode = static_cast<uint32_t>(*mode);
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::string id, Ensure(s, owner, name, std::nullopt));
  ASB_ASSIGN_OR_RETURN(core::FileStat st,
                       s.m->files().WriteFile(owner, id, *path, data, file_mode));
  json::object o;
  o["bytesWritten"] = st.size;
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = id;
  return r;
}

Result<HttpResponse> Read(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  const std::string* path = req.Query("path");
  if (path == nullptr || path->empty()) {
    return Fail(Error::InvalidArgument("path query param required"));
  }
  ASB_TRY(core::NormalizeWorkspacePath(*path));
  const std::string owner = OwnerOf(req);
  // A session that does not exist yet has an empty workspace: no such file.
  ASB_ASSIGN_OR_RETURN(std::optional<std::string> id, Existing(s, owner, name));
  if (!id) return Fail(Error::NotFound("file " + *path + " not found"));
  ASB_ASSIGN_OR_RETURN(std::string data, s.m->files().ReadFile(owner, *id, *path));
  json::object o;
  std::string text = SanitizeUtf8(data);
  if (text != data) o["contentBase64"] = Base64Encode(data);
  o["content"] = std::move(text);
  o["size"] = data.size();
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = *id;
  return r;
}

// `path` (absolute, under /workspace) relative to /workspace, as seed A's runtime.js answers.
std::string RelativeToWorkspace(const std::string& path) {
  const std::string prefix = std::string(core::kWorkspaceDir) + "/";
  if (path.rfind(prefix, 0) == 0) return path.substr(prefix.size());
  return path == core::kWorkspaceDir ? std::string(".") : path;
}

Result<HttpResponse> Files(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  const std::string* p = req.Query("path");
  std::string path = (p && !p->empty()) ? *p : std::string(core::kWorkspaceDir);
  const std::string* rec = req.Query("recursive");
  bool recursive = rec != nullptr && (rec->empty() || *rec == "true" || *rec == "1");
  if (rec != nullptr && !recursive && *rec != "false" && *rec != "0") {
    return Fail(Error::InvalidArgument("recursive: must be true or false"));
  }
  ASB_ASSIGN_OR_RETURN(std::string norm, core::NormalizeWorkspacePath(path));
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::optional<std::string> id, Existing(s, owner, name));
  std::vector<core::FileStat> entries;
  if (id) {
    ASB_ASSIGN_OR_RETURN(entries, s.m->files().ListFiles(owner, *id, path, recursive));
  } else if (norm != core::kWorkspaceDir) {
    // A session that does not exist yet has an empty workspace.
    return Fail(Error::NotFound("directory " + path + " not found"));
  }
  json::array files;
  for (const auto& e : entries) {
    json::object f;
    bool dir = e.type == "dir";
    f["path"] = SanitizeUtf8(RelativeToWorkspace(e.path));  // names need not be UTF-8
    f["type"] = dir ? "dir" : "file";
    f["size"] = dir ? 0 : e.size;
    files.emplace_back(std::move(f));
  }
  json::object o;
  o["files"] = std::move(files);
  HttpResponse r = JsonResponse(200, json::serialize(o));
  if (id) r.sandbox_id = *id;
  return r;
}

Result<HttpResponse> Delete(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::optional<std::string> id, Existing(s, owner, name));
  bool destroyed = false;
  if (id) {
    Status st = s.m->lifecycle().Destroy(owner, *id);
    if (!st && st.error().code() != ErrorCode::kNotFound) return Fail(st.error());
    destroyed = st.has_value();
    ASB_TRY(s.sessions->Erase(owner, name, *id));  // the trigger did, unless it failed
  }
  json::object o;
  o["destroyed"] = destroyed;
  HttpResponse r = JsonResponse(200, json::serialize(o));
  if (id) r.sandbox_id = *id;
  return r;
}

// Seed A's session states: "creating", "active", "destroying".
std::string_view SeedAState(core::SandboxState st) {
  switch (st) {
    case core::SandboxState::kCreating:
      return "creating";
    case core::SandboxState::kRunning:
      return "active";
    default:
      return "destroying";
  }
}

Result<HttpResponse> List(SeedA& s, HttpRequest& req) {
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(store::ExecSessionStore * db, Sessions(s));
  std::optional<std::string> filter;
  if (owner != core::kAnyOwner) filter = owner;
  ASB_ASSIGN_OR_RETURN(std::vector<store::ExecSessionRecord> rows, db->List(filter));
  json::array out;
  for (const auto& row : rows) {
    Result<core::SandboxInfo> info = s.m->lifecycle().Get(owner, row.sandbox_id);
    if (!info) continue;  // destroyed meanwhile
    json::object o;
    o["sessionId"] = row.name;
    o["sandboxId"] = row.sandbox_id;
    o["state"] = SeedAState(info->state);
    o["template"] = info->template_name;
    o["createdAt"] = row.created_at_ms;
    o["lastActivityAt"] = info->last_activity_at_ms;
    out.emplace_back(std::move(o));
  }
  json::object o;
  o["sessions"] = std::move(out);
  return JsonResponse(200, json::serialize(o));
}

// Seed A's template manifest (src/vm/templates.ts TemplateManifest).
Result<HttpResponse> Templates(SeedA& s, HttpRequest&) {
  json::array list;
  for (const auto& t : s.m->templates().List()) {
    const core::TemplateManifest& m = t.manifest;
    json::object o;
    o["name"] = t.name;
    o["displayName"] = t.display_name.empty() ? t.name : t.display_name;
    o["version"] = m.version;
    o["description"] = t.description;
    json::array tools;
    for (const auto& tool : t.tools) tools.emplace_back(tool);
    o["tools"] = std::move(tools);
    o["baseImage"] = m.base;
    o["createdAt"] = m.created_at;
    if (m.resources.memory_mb > 0 || m.resources.cpus > 0) {
      json::object r;
      if (m.resources.memory_mb > 0) r["memSizeMib"] = m.resources.memory_mb;
      if (m.resources.cpus > 0) r["vcpuCount"] = JsonNumber(m.resources.cpus);
      o["resources"] = std::move(r);
    }
    list.emplace_back(std::move(o));
  }
  json::object o;
  o["templates"] = std::move(list);
  return JsonResponse(200, json::serialize(o));
}

}  // namespace

void AddSeedARoutes(Router& router, ApiContext& ctx) {
  auto s = std::make_shared<SeedA>();
  s->m = ctx.manager;
  if (ctx.store != nullptr) s->sessions.emplace(*ctx.store);
  s->keepalive_ms = ctx.stream_keepalive_ms;
  s->clock = &SystemClock::Instance();
  auto route = [s](Result<HttpResponse> (*fn)(SeedA&, HttpRequest&)) {
    return Wrap([s, fn](HttpRequest& req) { return fn(*s, req); });
  };
  router.Add("GET", "/exec/templates", route(Templates));
  router.Add("POST", "/exec/{session}/execute", route(Execute));
  router.Add("POST", "/exec/{session}/write", route(Write));
  router.Add("GET", "/exec/{session}/read", route(Read));
  router.Add("GET", "/exec/{session}/files", route(Files));
  router.Add("DELETE", "/exec/{session}", route(Delete));
  router.Add("GET", "/exec/", route(List));
  router.Add("GET", "/exec", route(List));
}

}  // namespace asb::api
