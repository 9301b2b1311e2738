// Seed A's session routes (issue 7 item 4), so the curl examples of its README work verbatim.
// A "session" is a caller-chosen name (1-64 chars of [A-Za-z0-9_.-]) mapped, per owner, to one
// of our sandboxes; the name is only a map key and never reaches a path. The map lives in
// memory: after a server restart a session name starts a fresh sandbox (the old one is still
// listed under /v1/sandboxes and reaped at its TTL).
//   GET    /exec/templates                  200 {templates:[{name, displayName, description,
//                                                             tools}]}
//   POST   /exec/{session}/execute          body {command, args?, template?, cwd?, env?,
//                                           timeout? (ms), stdin?}; creates the session's
//                                           sandbox on first use (template applies then).
//                                           200 {sessionId, sandboxId, output:[{type:"stream",
//                                           name:"stdout"|"stderr", data, encoding?}], exitCode,
//                                           signal, timedOut, truncated, durationMs}.
//                                           NDJSON (Accept: application/x-ndjson or
//                                           ?format=ndjson): one line per output entry, then
//                                           {type:"exit", exitCode, ...}; written when the
//                                           command has finished (not incremental).
//   POST   /exec/{session}/write            {path, content} or {path, contentBase64}
//                                           200 {path, size}
//   GET    /exec/{session}/read?path=       200 {path, size, content} (UTF-8) or
//                                           {path, size, contentBase64} (other bytes)
//   GET    /exec/{session}/files?path=&recursive=  200 {path, files:[{name, path, type, size}]}
//   DELETE /exec/{session}                  200 {sessionId, destroyed:true}
//   GET    /exec/                           200 {sessions:[{sessionId, sandboxId, template,
//                                                          status, createdAt}]}
// Seed A's defects fixed: guest errors (missing file, bad path) are our error shape with an
// HTTP error status; empty files can be written; binary content survives through base64;
// sessions of another owner answer 404 as unknown ones (OwnerOf()).
#include <boost/json.hpp>
#include <map>
#include <mutex>
#include <utility>

#include "api/handlers.h"
#include "api/json_body.h"
#include "api/text.h"
#include "core/paths.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

bool IsUtf8(std::string_view s) { return SanitizeUtf8(s) == s; }

// The session name -> sandbox id map, per owner.
class Sessions {
 public:
  std::optional<std::string> Find(const std::string& owner, const std::string& name) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find({owner, name});
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }
  // Inserts unless present; returns the id that is mapped afterwards.
  std::string Insert(const std::string& owner, const std::string& name, const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    return map_.emplace(std::make_pair(owner, name), id).first->second;
  }
  void Erase(const std::string& owner, const std::string& name, const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find({owner, name});
    if (it != map_.end() && it->second == id) map_.erase(it);
  }
  // (name, id) pairs of `owner` (kAnyOwner: everyone's).
  std::vector<std::pair<std::string, std::string>> Of(const std::string& owner) {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, id] : map_) {
      if (owner == core::kAnyOwner || k.first == owner) out.emplace_back(k.second, id);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, std::string> map_;
};

struct SeedA {
  core::SandboxManager* m;
  Sessions sessions;
};

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

// The live sandbox of an existing session. Errors: kNotFound (no such session, or its sandbox
// is gone: the mapping is dropped).
Result<std::string> Existing(SeedA& s, const std::string& owner, const std::string& name) {
  std::optional<std::string> id = s.sessions.Find(owner, name);
  if (!id) return Fail(Error::NotFound("session " + name + " not found"));
  Result<core::SandboxInfo> info = s.m->Get(owner, *id);
  if (!info && info.error().code() == ErrorCode::kNotFound) {
    s.sessions.Erase(owner, name, *id);
    return Fail(Error::NotFound("session " + name + " not found"));
  }
  if (!info) return Fail(info.error());
  return *id;
}

// The session's sandbox, created with `tmpl` when the session is new.
Result<std::string> Ensure(SeedA& s, const std::string& owner, const std::string& name,
                           const std::optional<std::string>& tmpl) {
  Result<std::string> id = Existing(s, owner, name);
  if (id || id.error().code() != ErrorCode::kNotFound) return id;
  core::CreateRequest cr;
  if (tmpl) cr.template_name = *tmpl;
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo info, s.m->Create(owner, cr));
  std::string mapped = s.sessions.Insert(owner, name, info.id);
  if (mapped != info.id) (void)s.m->Destroy(owner, info.id);  // lost a race: use the winner's
  return mapped;
}

json::object OutputEntry(std::string_view name, const std::string& data) {
  json::object e;
  e["type"] = "stream";
  e["name"] = name;
  if (IsUtf8(data)) {
    e["data"] = data;
  } else {
    e["data"] = Base64Encode(data);
    e["encoding"] = "base64";
  }
  return e;
}

bool WantsNdjson(const HttpRequest& req) {
  const std::string* f = req.Query("format");
  if (f != nullptr) return *f == "ndjson";
  return req.Header("accept").find("application/x-ndjson") != std::string_view::npos;
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
  if (!command || command->empty()) return Fail(Error::InvalidArgument("command: required"));
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
  ASB_ASSIGN_OR_RETURN(core::ExecOutcome out, s.m->Exec(owner, id, o));
  const protocol::ExecResult& r = out.result;
  json::array output;
  if (!out.stdout_data.empty()) output.emplace_back(OutputEntry("stdout", out.stdout_data));
  if (!out.stderr_data.empty()) output.emplace_back(OutputEntry("stderr", out.stderr_data));
  json::object res;
  res["exitCode"] = r.exit_code;
  res["signal"] = r.signal;
  res["timedOut"] = r.timed_out;
  res["truncated"] = r.stdout_truncated || r.stderr_truncated;
  res["durationMs"] = r.duration_ms;

  HttpResponse resp;
  if (WantsNdjson(req)) {
    std::string text;
    for (const auto& e : output) text += json::serialize(e) + "\n";
    res["type"] = "exit";
    res["sessionId"] = name;
    text += json::serialize(res) + "\n";
    resp.status = 200;
    resp.content_type = "application/x-ndjson";
    resp.body = std::move(text);
  } else {
    res["sessionId"] = name;
    res["sandboxId"] = id;
    res["output"] = std::move(output);
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
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::string id, Ensure(s, owner, name, std::nullopt));
  ASB_ASSIGN_OR_RETURN(protocol::FileStat st, s.m->WriteFile(owner, id, *path, data));
  json::object o;
  o["path"] = st.path;
  o["size"] = st.size;
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = id;
  return r;
}

Result<HttpResponse> Read(SeedA& s, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
  const std::string* path = req.Query("path");
  if (path == nullptr || path->empty()) {
    return Fail(Error::InvalidArgument("path: query parameter required"));
  }
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::string id, Existing(s, owner, name));
  ASB_ASSIGN_OR_RETURN(std::string data, s.m->ReadFile(owner, id, *path));
  json::object o;
  auto norm = core::NormalizeWorkspacePath(*path);
  o["path"] = norm ? *norm : *path;
  o["size"] = data.size();
  if (IsUtf8(data)) {
    o["content"] = data;
  } else {
    o["contentBase64"] = Base64Encode(data);
  }
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = id;
  return r;
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
  const std::string owner = OwnerOf(req);
  ASB_ASSIGN_OR_RETURN(std::string id, Existing(s, owner, name));
  ASB_ASSIGN_OR_RETURN(std::vector<protocol::FileStat> entries,
                       s.m->ListFiles(owner, id, path, recursive));
  json::array files;
  for (const auto& e : entries) {
    json::object f;
    f["name"] = SanitizeUtf8(e.name);  // file names need not be UTF-8; JSON must be
    f["path"] = SanitizeUtf8(e.path);
    f["type"] = e.type;
    f["size"] = e.size;
    files.emplace_back(std::move(f));
  }
  json::object o;
  auto norm = core::NormalizeWorkspacePath(path);
  o["path"] = SanitizeUtf8(norm ? *norm : path);
  o["files"] = std::move(files);
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = id;
  return r;
}

}  // namespace

void AddSeedARoutes(Router& router, ApiContext& ctx) {
  auto s = std::make_shared<SeedA>();
  s->m = ctx.manager;

  router.Add("GET", "/exec/templates", Wrap([s](HttpRequest&) -> Result<HttpResponse> {
               json::array list;
               for (const auto& t : s->m->templates().List()) {
                 json::object o;
                 o["name"] = t.name;
                 o["displayName"] = t.display_name.empty() ? t.name : t.display_name;
                 o["description"] = t.description;
                 json::array tools;
                 for (const auto& tool : t.tools) tools.emplace_back(tool);
                 o["tools"] = std::move(tools);
                 list.emplace_back(std::move(o));
               }
               json::object o;
               o["templates"] = std::move(list);
               return JsonResponse(200, json::serialize(o));
             }));

  router.Add("POST", "/exec/{session}/execute",
             Wrap([s](HttpRequest& req) { return Execute(*s, req); }));
  router.Add("POST", "/exec/{session}/write",
             Wrap([s](HttpRequest& req) { return Write(*s, req); }));
  router.Add("GET", "/exec/{session}/read", Wrap([s](HttpRequest& req) { return Read(*s, req); }));
  router.Add("GET", "/exec/{session}/files",
             Wrap([s](HttpRequest& req) { return Files(*s, req); }));

  router.Add("DELETE", "/exec/{session}", Wrap([s](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string name, SessionParam(req));
               const std::string owner = OwnerOf(req);
               ASB_ASSIGN_OR_RETURN(std::string id, Existing(*s, owner, name));
               ASB_TRY(s->m->Destroy(owner, id));
               s->sessions.Erase(owner, name, id);
               json::object o;
               o["sessionId"] = name;
               o["destroyed"] = true;
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }));

  auto list = Wrap([s](HttpRequest& req) -> Result<HttpResponse> {
    const std::string owner = OwnerOf(req);
    json::array out;
    for (const auto& [name, id] : s->sessions.Of(owner)) {
      Result<core::SandboxInfo> info = s->m->Get(owner, id);
      if (!info) continue;  // destroyed meanwhile (reaped, or through /v1)
      json::object o;
      o["sessionId"] = name;
      o["sandboxId"] = id;
      o["template"] = info->template_name;
      o["status"] = core::SandboxStateName(info->state);
      o["createdAt"] = FormatRfc3339(info->created_at_ms);
      out.emplace_back(std::move(o));
    }
    json::object o;
    o["sessions"] = std::move(out);
    return JsonResponse(200, json::serialize(o));
  });
  router.Add("GET", "/exec/", list);
  router.Add("GET", "/exec", list);
}

}  // namespace asb::api
