// File routes (ADR 0007). Paths are under /workspace (relative ones
// are taken from it); core/paths.h has the rules and sandboxd enforces them again.
//   GET    /v1/sandboxes/{id}/files?path=            raw bytes, application/octet-stream
//                                                    (Content-Length up to 1 MiB; larger files
//                                                    are streamed chunked, never held whole)
//   PUT    /v1/sandboxes/{id}/files?path=&mode=755   raw bytes in; 200 {path, size, mode}
//   DELETE /v1/sandboxes/{id}/files?path=&recursive= 204
//   GET    /v1/sandboxes/{id}/files/list?path=&recursive=  200 {path, entries:[stat...]}
//   GET    /v1/sandboxes/{id}/files/stat?path=       200 stat
//   POST   /v1/sandboxes/{id}/files/mkdir {path, mode?}        200 stat
//   POST   /v1/sandboxes/{id}/files/move {from, to, overwrite?} 200 stat of the destination
//   GET    /v1/sandboxes/{id}/files/watch?path=&recursive=&max_queue=&timeout_ms=
//                                                    200 application/x-ndjson, the changes as
//                                                    they happen (file_watch_body.h)
// A stat is {name, path, type, size, mode ("0644"), uid, gid, mtime, link_target?}.
#include <boost/json.hpp>
#include <functional>
#include <optional>

#include "api/config.h"
#include "api/file_read_body.h"
#include "api/file_upload.h"
#include "api/file_watch_body.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/resource_json.h"
#include "api/text.h"
#include "core/paths.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// The longest timeout_ms of a watch, milliseconds (a day; without one it runs until closed).
constexpr int64_t kMaxWatchTimeoutMs = 24 * 3600 * 1000;

}  // namespace

json::object StatJson(const core::FileStat& s) {
  // Names come from the sandbox's file system, where any byte but '/' and NUL is allowed; JSON
  // text must be UTF-8 (RFC 8259 section 8.1), so invalid sequences become U+FFFD.
  json::object o;
  o["name"] = SanitizeUtf8(s.name);
  o["path"] = SanitizeUtf8(s.path);
  o["type"] = s.type;
  o["size"] = s.size;
  o["mode"] = FormatMode(s.mode);
  o["uid"] = s.uid;
  o["gid"] = s.gid;
  o["mtime"] = FormatRfc3339(s.mtime_ms);
  o["modified_at"] = o["mtime"];  // seed B's name for the same
  if (s.type == "symlink") o["link_target"] = SanitizeUtf8(s.link_target);
  return o;
}

namespace {

HttpResponse StatResponse(const std::string& id, const core::FileStat& s) {
  HttpResponse r = JsonResponse(200, json::serialize(StatJson(s)));
  r.sandbox_id = id;
  return r;
}

Result<std::string> RequiredQuery(const HttpRequest& req, std::string_view name) {
  const std::string* v = req.Query(name);
  if (v == nullptr || v->empty()) {
    return Fail(Error::InvalidArgument(std::string(name) + ": query parameter required"));
  }
  return *v;
}

Result<bool> BoolQuery(const HttpRequest& req, std::string_view name) {
  const std::string* v = req.Query(name);
  if (v == nullptr || *v == "false" || *v == "0") return false;
  if (v->empty() || *v == "true" || *v == "1") return true;
  return Fail(Error::InvalidArgument(std::string(name) + ": must be true or false"));
}

Result<std::optional<uint32_t>> ModeField(JsonBody& body) {
  ASB_ASSIGN_OR_RETURN(auto text, body.String("mode"));
  if (!text) return std::optional<uint32_t>();
  ASB_ASSIGN_OR_RETURN(uint32_t mode, core::ParseFileMode(*text));
  return std::optional<uint32_t>(mode);
}

}  // namespace

void AddFileRoutes(Router& router, ApiContext& ctx) {
  core::FileService* m = &ctx.manager->files();
  int64_t keepalive_ms = ctx.stream_keepalive_ms;

  router.Add("GET", "/v1/sandboxes/{id}/files", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string path, RequiredQuery(req, "path"));
               ASB_ASSIGN_OR_RETURN(core::FileStat st, m->StatFile(OwnerOf(req), id, path));
               HttpResponse r;
               r.status = 200;
               r.content_type = "application/octet-stream";
               r.sandbox_id = id;
               if (st.type != "file" || st.size <= kWholeFileMaxBytes) {
                 // Small files (and the errors for directories and the like) the simple way.
                 ASB_ASSIGN_OR_RETURN(r.body, m->ReadFile(OwnerOf(req), id, path));
                 return r;
               }
               ASB_ASSIGN_OR_RETURN(core::FileReadStream rs,
                                    m->OpenFileRead(OwnerOf(req), id, path));
               r.stream = std::make_shared<FileReadBody>(std::move(rs));
               return r;
             }));

  // The body streams into the sandbox as it arrives (api/file_upload.h): never held whole.
  RouteOptions upload;
  upload.file_body = true;
  upload.stream_body = true;
  router.Add("PUT", "/v1/sandboxes/{id}/files", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string path, RequiredQuery(req, "path"));
               std::optional<uint32_t> mode;
               if (const std::string* text = req.Query("mode")) {
                 ASB_ASSIGN_OR_RETURN(mode, core::ParseFileMode(*text));
               }
               ASB_ASSIGN_OR_RETURN(core::FileStat st,
                                    UploadRequestBody(*m, OwnerOf(req), id, path, mode, req));
               json::object o;
               o["path"] = SanitizeUtf8(st.path);
               o["size"] = st.size;
               o["mode"] = FormatMode(st.mode);
               // Seed B's answer: its FileInfo (name, path, type, size, modified_at).
               o["name"] = SanitizeUtf8(st.name);
               o["type"] = st.type;
               o["modified_at"] = FormatRfc3339(st.mtime_ms);
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }),
             upload);

  router.Add("DELETE", "/v1/sandboxes/{id}/files",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string path, RequiredQuery(req, "path"));
               ASB_ASSIGN_OR_RETURN(bool recursive, BoolQuery(req, "recursive"));
               ASB_TRY(m->RemoveFile(OwnerOf(req), id, path, recursive));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));

  router.Add("GET", "/v1/sandboxes/{id}/files/list",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               const std::string* p = req.Query("path");
               std::string path = p ? *p : std::string(core::kWorkspaceDir);
               ASB_ASSIGN_OR_RETURN(bool recursive, BoolQuery(req, "recursive"));
               ASB_ASSIGN_OR_RETURN(std::vector<core::FileStat> entries,
                                    m->ListFiles(OwnerOf(req), id, path, recursive));
               json::array list;
               for (const auto& e : entries) list.emplace_back(StatJson(e));
               json::object o;
               auto norm = core::NormalizeFilePath(path);
               o["path"] = SanitizeUtf8(norm ? norm->path : path);
               o["entries"] = std::move(list);
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }));

  router.Add("GET", "/v1/sandboxes/{id}/files/watch",
             Wrap([m, keepalive_ms](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               const std::string* p = req.Query("path");
               std::string path = p && !p->empty() ? *p : std::string(core::kWorkspaceDir);
               ASB_ASSIGN_OR_RETURN(bool recursive, BoolQuery(req, "recursive"));
               uint32_t max_queue = 0;
               if (const std::string* q = req.Query("max_queue")) {
                 auto n = ParseInteger(*q, 1, core::kMaxWatchQueue);
                 if (!n) return Fail(Error::InvalidArgument("max_queue: " + n.error().message()));
                 max_queue = static_cast<uint32_t>(*n);
               }
               int64_t timeout_ms = 0;
               if (const std::string* t = req.Query("timeout_ms")) {
                 auto n = ParseInteger(*t, 1, kMaxWatchTimeoutMs);
                 if (!n) return Fail(Error::InvalidArgument("timeout_ms: " + n.error().message()));
                 timeout_ms = *n;
               }
               ASB_ASSIGN_OR_RETURN(
                   std::shared_ptr<core::FileWatch> watch,
                   m->WatchDirectory(OwnerOf(req), id, path, recursive, max_queue));
               HttpResponse r;
               r.status = 200;
               r.content_type = "application/x-ndjson";
               r.sandbox_id = id;
               r.stream = std::make_shared<FileWatchBody>(std::move(watch), FileWatchNdjson(),
                                                          keepalive_ms, timeout_ms);
               return r;
             }));

  router.Add("GET", "/v1/sandboxes/{id}/files/stat",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string path, RequiredQuery(req, "path"));
               ASB_ASSIGN_OR_RETURN(core::FileStat st, m->StatFile(OwnerOf(req), id, path));
               return StatResponse(id, st);
             }));

  router.Add("POST", "/v1/sandboxes/{id}/files/mkdir",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto path, body.String("path"));
               ASB_ASSIGN_OR_RETURN(auto mode, ModeField(body));
               ASB_TRY(body.Finish());
               if (!path) return Fail(Error::InvalidArgument("path: required"));
               ASB_ASSIGN_OR_RETURN(core::FileStat st, m->MakeDir(OwnerOf(req), id, *path, mode));
               return StatResponse(id, st);
             }));

  router.Add(
      "POST", "/v1/sandboxes/{id}/files/move", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
        ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
        ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
        ASB_ASSIGN_OR_RETURN(auto from, body.String("from"));
        ASB_ASSIGN_OR_RETURN(auto to, body.String("to"));
        ASB_ASSIGN_OR_RETURN(auto overwrite, body.Bool("overwrite"));
        ASB_TRY(body.Finish());
        if (!from) return Fail(Error::InvalidArgument("from: required"));
        if (!to) return Fail(Error::InvalidArgument("to: required"));
        ASB_ASSIGN_OR_RETURN(core::FileStat st,
                             m->MoveFile(OwnerOf(req), id, *from, *to, overwrite.value_or(false)));
        return StatResponse(id, st);
      }));
}

}  // namespace asb::api
