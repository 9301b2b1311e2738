// Snapshot routes (ADR 0008), seed B's contract:
//   POST   /v1/sandboxes/{id}/snapshots  {name?}            201 snapshot
//   POST   /v1/sandboxes/{id}/rollback   {snapshot_id}      200 sandbox (last_rollback)
//   GET    /v1/snapshots?sandbox_id=&name=                  200 {"snapshots":[...]}
//   GET    /v1/snapshots/{id}                               200 snapshot
//   DELETE /v1/snapshots/{id}                               204
//   POST   /v1/snapshots/{id}/fork  {cpus?, memory_mb?, network?, timeout_seconds?}  201 sandbox
//   POST   /v1/sandboxes/{id}/fork  {count?, timeout_seconds?}  201 {"forks":[{sandbox,memory}
//                                                            or {error,status}, ...]}
//   GET    /v1/snapshots/{id}/archive                       200 application/zstd (tar.zst,
//                                                            streamed from the file, chunked)
//   POST   /v1/snapshots?name=&template=  (body: tar.zst)   201 snapshot
//   GET    /v1/sandboxes/{id}/archive?path=                 200 application/x-tar
//   PUT    /v1/sandboxes/{id}/archive?path=  (body: tar)    200 {"entries","bytes"}
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <limits>

#include "api/errors.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/resource_json.h"
#include "api/text.h"
#include "common/ids.h"
#include "common/unique_fd.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min() / 2;
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max() / 2;

}  // namespace

json::object SnapshotJson(const core::SnapshotInfo& s) {
  json::object o;
  o["id"] = s.id;
  if (s.sandbox_id.empty()) {
    o["sandbox_id"] = nullptr;
  } else {
    o["sandbox_id"] = s.sandbox_id;
  }
  if (s.name.empty()) {
    o["name"] = nullptr;
  } else {
    o["name"] = s.name;
  }
  o["template"] = s.template_name;
  o["image"] = s.template_name;  // seed B's name for the same
  o["size_bytes"] = s.size_bytes;
  o["content_bytes"] = s.content_bytes;
  o["created_at"] = FormatRfc3339(s.created_at_ms);
  return o;
}

// api/resource_json.h.
json::object ForkJson(const std::vector<core::ForkedChild>& children,
                      const std::string& request_id) {
  json::array forks;
  for (const core::ForkedChild& c : children) {
    json::object f;
    if (c.sandbox) {
      f["sandbox"] = SandboxJson(*c.sandbox);
      f["memory"] = c.memory;
    } else if (c.error) {
      const ClientError ce = ForClient(*c.error, request_id);
      json::object e;
      e["code"] = WireCodeOf(ce.code);
      e["message"] = ce.message;
      f["error"] = std::move(e);
      f["status"] = HttpStatusOf(ce.code);
    }
    forks.emplace_back(std::move(f));
  }
  json::object o;
  o["forks"] = std::move(forks);
  return o;
}

namespace {

Result<std::string> SnapshotIdParam(const HttpRequest& req) {
  const std::string& id = req.Param("id");
  if (!IsValidId(id, "snap_")) return Fail(Error::NotFound("snapshot not found"));
  return id;
}

/// Streams an open file as the response body, 256 KiB per Poll() (a file read from the page
/// cache or disk returns promptly, as StreamBody requires).
class FileStreamBody : public StreamBody {
 public:
  explicit FileStreamBody(UniqueFd fd) : fd_(std::move(fd)) {}
  Chunk Poll() override {
    Chunk c;
    c.data.resize(kChunk);
    ssize_t n;
    do {
      n = ::read(fd_.get(), c.data.data(), c.data.size());
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {  // end of file, or an I/O error: the chunked body ends early
      c.data.clear();
      c.done = true;
      return c;
    }
    c.data.resize(static_cast<size_t>(n));
    return c;
  }
  void SetNotify(std::function<void()> /*notify*/) override {}
  void Cancel() override {}

 private:
  static constexpr size_t kChunk = 256 << 10;
  UniqueFd fd_;
};

}  // namespace

void AddSnapshotRoutes(Router& router, ApiContext& ctx) {
  core::SnapshotService* m = &ctx.manager->snapshots();
  core::FileService* files = &ctx.manager->files();
  const uint64_t max_file_bytes = ctx.manager->config().limits.max_file_bytes;

  router.Add(
      "POST", "/v1/sandboxes/{id}/snapshots", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
        ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
        std::string name;
        if (!req.body.empty()) {
          ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
          ASB_ASSIGN_OR_RETURN(auto n, body.String("name"));
          ASB_TRY(body.Finish());
          if (n) name = *n;
        }
        ASB_ASSIGN_OR_RETURN(core::SnapshotInfo s, m->CreateSnapshot(OwnerOf(req), id, name));
        HttpResponse r = JsonResponse(201, json::serialize(SnapshotJson(s)));
        r.sandbox_id = id;
        return r;
      }));

  router.Add("POST", "/v1/sandboxes/{id}/rollback",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto snap, body.String("snapshot_id"));
               ASB_TRY(body.Finish());
               if (!snap) return Fail(Error::InvalidArgument("snapshot_id: required"));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, m->Rollback(OwnerOf(req), id, *snap));
               return SandboxResponse(200, s);
             }));

  router.Add("GET", "/v1/snapshots", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               std::optional<std::string> sb;
               if (const std::string* q = req.Query("sandbox_id")) sb = *q;
               const std::string* name = req.Query("name");  // its versions, oldest first
               ASB_ASSIGN_OR_RETURN(auto all, m->ListSnapshots(OwnerOf(req), sb));
               json::array list;
               for (const auto& s : all) {
                 if (name == nullptr || s.name == *name) list.emplace_back(SnapshotJson(s));
               }
               json::object o;
               o["snapshots"] = std::move(list);
               return JsonResponse(200, json::serialize(o));
             }));

  router.Add("GET", "/v1/snapshots/{id}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SnapshotIdParam(req));
               ASB_ASSIGN_OR_RETURN(core::SnapshotInfo s, m->GetSnapshot(OwnerOf(req), id));
               return JsonResponse(200, json::serialize(SnapshotJson(s)));
             }));

  router.Add("DELETE", "/v1/snapshots/{id}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SnapshotIdParam(req));
               ASB_TRY(m->DeleteSnapshot(OwnerOf(req), id));
               return NoContent();
             }));

  router.Add("POST", "/v1/snapshots/{id}/fork", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SnapshotIdParam(req));
               core::ForkRequest fr;
               if (!req.body.empty()) {
                 ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
                 ASB_ASSIGN_OR_RETURN(fr.cpus, body.Number("cpus"));
                 ASB_ASSIGN_OR_RETURN(fr.memory_mb, body.Integer("memory_mb", kMinInt, kMaxInt));
                 ASB_ASSIGN_OR_RETURN(fr.network, body.Bool("network"));
                 ASB_ASSIGN_OR_RETURN(fr.timeout_seconds,
                                      body.Integer("timeout_seconds", kMinInt, kMaxInt));
                 ASB_TRY(body.Finish());
               }
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, m->Fork(OwnerOf(req), id, fr));
               return SandboxResponse(201, s);
             }));

  router.Add("POST", "/v1/sandboxes/{id}/fork", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               core::SandboxForkRequest fr;
               if (!req.body.empty()) {
                 ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
                 ASB_ASSIGN_OR_RETURN(auto count, body.Integer("count", kMinInt, kMaxInt));
                 ASB_ASSIGN_OR_RETURN(fr.timeout_seconds,
                                      body.Integer("timeout_seconds", kMinInt, kMaxInt));
                 ASB_TRY(body.Finish());
                 if (count) fr.count = *count;
               }
               if (req.new_sandboxes_left >= 0) fr.quota_left = req.new_sandboxes_left;
               ASB_ASSIGN_OR_RETURN(std::vector<core::ForkedChild> children,
                                    m->ForkSandbox(OwnerOf(req), id, fr));
               // None made: the first child's error is the answer (a fork past the quota is a 429).
               const bool any =
                   std::any_of(children.begin(), children.end(),
                               [](const core::ForkedChild& c) { return c.sandbox.has_value(); });
               if (!any && !children.empty() && children.front().error) {
                 return Fail(*children.front().error);
               }
               HttpResponse r =
                   JsonResponse(201, json::serialize(ForkJson(children, req.request_id)));
               r.sandbox_id = id;
               return r;
             }));

  router.Add("GET", "/v1/snapshots/{id}/archive",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SnapshotIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string path, m->SnapshotArchivePath(OwnerOf(req), id));
               UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
               if (!fd && errno == ENOENT) {  // deleted since it was looked up
                 return Fail(Error::NotFound("snapshot " + id + " not found"));
               }
               if (!fd) return FailErrno("open snapshot archive " + id);
               HttpResponse r;
               r.status = 200;
               r.content_type = "application/zstd";
               r.stream = std::make_shared<FileStreamBody>(std::move(fd));
               r.headers.emplace_back("Content-Disposition",
                                      "attachment; filename=\"" + id + ".tar.zst\"");
               return r;
             }));

  RouteOptions upload;
  upload.file_body = true;
  RouteOptions streamed_upload = upload;  // the handler reads the body as it arrives
  streamed_upload.stream_body = true;
  router.Add("POST", "/v1/snapshots", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               if (req.body.empty()) {
                 return Fail(Error::InvalidArgument("body: a tar.zst archive is required"));
               }
               std::string name, tmpl;
               if (const std::string* q = req.Query("name")) name = *q;
               if (const std::string* q = req.Query("template")) tmpl = *q;
               const std::string temp = m->SnapshotUploadDir() + "/.upload-" + NewId("up_");
               {
                 UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
                 if (!fd) return FailErrno("create " + temp);
                 if (!WriteAll(fd.get(), req.body.data(), req.body.size())) {
                   int err = errno;
                   ::unlink(temp.c_str());
                   return Fail(Error::FromErrno(err, "write " + temp));
                 }
               }
               ASB_ASSIGN_OR_RETURN(core::SnapshotInfo s,
                                    m->ImportSnapshot(OwnerOf(req), temp, name, tmpl));
               return JsonResponse(201, json::serialize(SnapshotJson(s)));
             }),
             upload);

  router.Add("GET", "/v1/sandboxes/{id}/archive",
             Wrap([files, max_file_bytes](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               const std::string* q = req.Query("path");
               std::string path = q ? *q : "/workspace";
               HttpResponse r;
               r.status = 200;
               r.content_type = "application/x-tar";
               // Built in memory, so bounded like a file download (max_file_bytes).
               const uint64_t cap = max_file_bytes;
               ASB_TRY(files->ExportDirectory(
                   OwnerOf(req), id, path, [&r, cap](std::string_view chunk) -> Status {
                     if (r.body.size() + chunk.size() > cap) {
                       return Fail(
                           Error::TooLarge("the archive of this directory is larger "
                                           "than the download limit of " +
                                           std::to_string(cap) + " bytes"));
                     }
                     r.body.append(chunk);
                     return {};
                   }));
               r.sandbox_id = id;
               return r;
             }));

  router.Add("PUT", "/v1/sandboxes/{id}/archive",
             Wrap([files](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               const std::string* q = req.Query("path");
               std::string path = q ? *q : "/workspace";
               size_t off = 0;
               // The tar streams into the sandbox as it arrives (api/file_upload.h).
               auto source = [&req, &off]() -> Result<std::string> {
                 constexpr size_t kChunk = 1 << 16;
                 if (req.body_reader) {
                   std::string c(kChunk, '\0');
                   ASB_ASSIGN_OR_RETURN(size_t n, req.body_reader->Read(c.data(), c.size()));
                   c.resize(n);
                   return c;
                 }
                 std::string c = req.body.substr(off, kChunk);
                 off += c.size();
                 return c;
               };
               ASB_ASSIGN_OR_RETURN(core::TarResult t,
                                    files->ImportDirectory(OwnerOf(req), id, path, source));
               json::object o;
               o["entries"] = t.entries;
               o["bytes"] = t.bytes;
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }),
             streamed_upload);
}

}  // namespace asb::api
