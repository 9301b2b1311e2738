// filesystem.Filesystem of envd (spec/envd/filesystem/filesystem.proto) and its plain HTTP
// /files, on core::FileService: every path is resolved by sandboxd inside the sandbox's own
// root, so a symlink never leads out of it. Relative paths start in the sandbox's workspace.
// WatchDir streams a core::FileWatch (file_watch_body.h); CreateWatcher, GetWatcherEvents and
// RemoveWatcher keep one between calls (e2b_watchers.h). Event names are relative to the
// watched directory, as envd reports them.
#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cstring>
#include <map>

#include "api/e2b_connect.h"
#include "api/e2b_envd.h"
#include "api/e2b_watchers.h"
#include "api/errors.h"
#include "api/file_read_body.h"
#include "api/file_upload.h"
#include "api/file_watch_body.h"
#include "api/gzip.h"
#include "api/multipart.h"
#include "api/text.h"
#include "core/paths.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Largest Connect message we parse, bytes (a file's bytes travel on /files, not here).
constexpr size_t kMaxConnectMessageBytes = 1 << 20;
// Files one multipart upload may carry.
constexpr size_t kMaxUploadParts = 1000;

std::string_view MediaType(std::string_view content_type) {
  size_t semi = content_type.find(';');
  std::string_view t = content_type.substr(0, semi);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  return t;
}

// "-rwxr-xr-x" of a type and mode, as Go's fs.FileMode.String() writes it for envd.
std::string Permissions(const core::FileStat& s) {
  std::string out = s.type == "dir" ? "d" : s.type == "symlink" ? "L" : "-";
  static constexpr char kRwx[] = "rwx";
  for (int i = 8; i >= 0; --i) out.push_back((s.mode >> i) & 1 ? kRwx[(8 - i) % 3] : '-');
  return out;
}

std::string UserName(uint32_t uid) {
  if (uid == 0) return "root";
  if (uid == 1000) return "user";  // E2B's name for the sandbox's unprivileged user
  return std::to_string(uid);
}

// A symlink's target as envd reports it: absolute, resolved against the link's directory when
// the link holds a relative one ("target.txt" in /workspace/a -> "/workspace/a/target.txt").
// Lexical: "..", "." and "//" are cleaned, further links in the target are not followed.
std::string AbsoluteLinkTarget(const core::FileStat& s) {
  const std::string& t = s.link_target;
  if (t.empty()) return t;
  std::string joined = t;
  if (t.front() != '/') {
    const size_t slash = s.path.rfind('/');
    joined = (slash == std::string::npos ? std::string() : s.path.substr(0, slash)) + "/" + t;
  }
  auto clean = core::NormalizeWorkdir(joined);
  return clean ? *clean : t;
}

json::object MetadataJson(const std::map<std::string, std::string>& md) {
  json::object o;
  for (const auto& [k, v] : md) o[k] = v;
  return o;
}

// File metadata (envd 0.6.2): an upload's X-Metadata-<key>: <value> headers. HTTP header names
// are case-insensitive, so keys arrive lower-cased. Bounded before anything is written; a
// malformed one is refused, never dropped.
constexpr size_t kMaxMetadataKeys = 32;
constexpr size_t kMaxMetadataKeyBytes = 64;
constexpr size_t kMaxMetadataValueBytes = 1024;
constexpr size_t kMaxMetadataBytes = 3072;  // keys and values: within one ext4 xattr block

Result<std::map<std::string, std::string>> UploadMetadata(const HttpRequest& req) {
  constexpr std::string_view kPrefix = "x-metadata-";
  std::map<std::string, std::string> out;
  size_t total = 0;
  for (const auto& [name, value] : req.headers) {
    if (name.rfind(kPrefix, 0) != 0) continue;
    const std::string key = name.substr(kPrefix.size());
    const bool key_ok = !key.empty() && key.size() <= kMaxMetadataKeyBytes &&
                        std::all_of(key.begin(), key.end(), [](unsigned char ch) {
                          return std::isalnum(ch) || std::string_view("!#$%&'*+-.^_`|~").find(ch) !=
                                                         std::string_view::npos;
                        });
    if (!key_ok) {
      return Fail(Error::InvalidArgument("metadata key \"" + key + "\": 1.." +
                                         std::to_string(kMaxMetadataKeyBytes) +
                                         " HTTP token characters"));
    }
    const bool value_ok = value.size() <= kMaxMetadataValueBytes &&
                          std::all_of(value.begin(), value.end(),
                                      [](unsigned char ch) { return ch >= 0x20 && ch <= 0x7e; });
    if (!value_ok) {
      return Fail(Error::InvalidArgument("metadata value of \"" + key + "\": at most " +
                                         std::to_string(kMaxMetadataValueBytes) +
                                         " printable ASCII characters"));
    }
    total += key.size() + value.size();
    out[key] = value;
  }
  if (out.size() > kMaxMetadataKeys || total > kMaxMetadataBytes) {
    return Fail(Error::InvalidArgument("metadata: at most " + std::to_string(kMaxMetadataKeys) +
                                       " keys and " + std::to_string(kMaxMetadataBytes) +
                                       " bytes of keys and values"));
  }
  return out;
}

json::object EntryInfo(const core::FileStat& s) {
  json::object o;
  o["name"] = s.path == "/workspace" ? "user" : s.name;  // it is /home/user to E2B
  o["type"] = s.type == "dir"       ? "FILE_TYPE_DIRECTORY"
              : s.type == "symlink" ? "FILE_TYPE_SYMLINK"
              : s.type == "file"    ? "FILE_TYPE_FILE"
                                    : "FILE_TYPE_UNSPECIFIED";
  o["path"] = E2bShownPath(s.path);
  o["size"] = std::to_string(s.size);  // int64: a string in protobuf's JSON mapping
  o["mode"] = s.mode;
  o["permissions"] = Permissions(s);
  o["owner"] = UserName(s.uid);
  o["group"] = UserName(s.gid);
  o["modifiedTime"] = FormatRfc3339(s.mtime_ms);
  if (s.type == "symlink") o["symlinkTarget"] = E2bShownPath(AbsoluteLinkTarget(s));
  if (!s.metadata.empty()) o["metadata"] = MetadataJson(s.metadata);
  return o;
}

Result<std::string> PathField(const json::object& msg, std::string_view name) {
  const json::value* v = FieldOf(msg, name);
  if (v == nullptr || !v->is_string() || v->as_string().empty()) {
    return Fail(Error::InvalidArgument(std::string(name) + ": a path is required"));
  }
  return E2bPath(v->as_string());
}

HttpResponse Unary(const EnvdCall& c, json::object answer) {
  HttpResponse r = JsonResponse(200, json::serialize(answer));
  r.sandbox_id = c.sandbox_id;
  return r;
}

json::object WithEntry(const core::FileStat& s) {
  json::object o;
  o["entry"] = EntryInfo(s);
  return o;
}

// Components of `path` below `root` ("/w/a/b" under "/w": 2); both absolute and normalized.
size_t DepthBelow(std::string_view root, std::string_view path) {
  std::string_view rest = path.substr(std::min(path.size(), root.size()));
  size_t depth = 0;
  for (char ch : rest) depth += ch == '/';
  if (root == "/") ++depth;
  return depth;
}

// envd's EventType of one of ours; "" for overflow, which envd has no event for.
std::string_view EventTypeOf(const std::string& type) {
  if (type == "create") return "EVENT_TYPE_CREATE";
  if (type == "write") return "EVENT_TYPE_WRITE";
  if (type == "remove") return "EVENT_TYPE_REMOVE";
  if (type == "rename") return "EVENT_TYPE_RENAME";
  if (type == "chmod") return "EVENT_TYPE_CHMOD";
  return "";
}

// FilesystemEvent of `e` under the watched directory `root`, or null for an overflow.
std::optional<json::object> FilesystemEvent(const std::string& root, const core::FileEvent& e) {
  std::string_view type = EventTypeOf(e.type);
  if (type.empty()) return std::nullopt;
  std::string_view name = e.path;
  if (name.size() > root.size() && name.compare(0, root.size(), root) == 0) {
    name.remove_prefix(root == "/" ? 1 : root.size() + 1);
  }
  json::object o;
  o["name"] = SanitizeUtf8(name);
  o["type"] = type;
  if (e.entry) o["entry"] = EntryInfo(*e.entry);
  return o;
}

// The watch request's fields (WatchDirRequest and CreateWatcherRequest are alike).
struct WatchArgs {
  std::string path;
  bool recursive = false;
  bool include_entry = false;
};

// A boolean field of a watch request, false when absent; both JSON spellings of its name.
Result<bool> WatchFlag(const json::object& msg, std::string_view camel, std::string_view snake) {
  const json::value* v = FieldOf(msg, camel);
  if (v == nullptr) v = FieldOf(msg, snake);
  if (v == nullptr) return false;
  if (!v->is_bool()) return Fail(Error::InvalidArgument(std::string(camel) + ": a boolean"));
  return v->as_bool();
}

Result<WatchArgs> WatchArgsOf(const json::object& msg) {
  WatchArgs a;
  ASB_ASSIGN_OR_RETURN(a.path, PathField(msg, "path"));
  if (const json::value* r = FieldOf(msg, "recursive")) {
    if (!r->is_bool()) return Fail(Error::InvalidArgument("recursive: must be a boolean"));
    a.recursive = r->as_bool();
  }
  // envd 0.6.3: each create, write and chmod event carries the entry's EntryInfo.
  ASB_ASSIGN_OR_RETURN(a.include_entry, WatchFlag(msg, "includeEntry", "include_entry"));
  // envd 0.6.4 refuses directories on network file systems unless this is set; a sandbox here
  // has none (its file systems are its template, workspace, tmpfs and proc), so either way
  // every directory may be watched.
  ASB_ASSIGN_OR_RETURN(bool network_mounts,
                       WatchFlag(msg, "allowNetworkMounts", "allow_network_mounts"));
  (void)network_mounts;
  return a;
}

// WatchDir: a server stream of start, filesystem events and keepalives.
Result<HttpResponse> WatchDir(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, true));
  ASB_ASSIGN_OR_RETURN(WatchArgs a, WatchArgsOf(msg));
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<core::FileWatch> watch,
                       c.manager->files().WatchDirectory(c.owner, c.sandbox_id, a.path, a.recursive,
                                                         0, a.include_entry));
  auto message = [](const char* field, json::value v) {
    json::object o;
    o[field] = std::move(v);
    return ConnectEnvelope(0, json::serialize(o));
  };
  FileWatchWire wire;
  wire.start = [message](const core::FileWatch&) { return message("start", json::object()); };
  std::string root = watch->path();
  wire.event = [message, root](const core::FileEvent& e) {
    auto fs = FilesystemEvent(root, e);
    return fs ? message("filesystem", std::move(*fs)) : std::string();
  };
  wire.keepalive = [message] { return message("keepalive", json::object()); };
  wire.end = [](const core::FileWatch::Batch& b) {
    if (b.end_reason == "timeout") {  // Connect-Timeout-Ms passed (the SDK's timeoutMs)
      return ConnectEndStream("deadline_exceeded", "the watch's timeout passed");
    }
    return ConnectEndStream(b.error ? &*b.error : nullptr);
  };
  return ConnectStreamResponse(
      std::make_shared<FileWatchBody>(std::move(watch), std::move(wire),
                                      c.keepalive_ms > 0 ? c.keepalive_ms : 50'000, c.deadline_ms),
      c.sandbox_id);
}

Result<std::string> WatcherIdOf(const json::object& msg) {
  ASB_ASSIGN_OR_RETURN(auto id, StringOf(msg, "watcherId"));
  if (!id) {
    ASB_ASSIGN_OR_RETURN(id, StringOf(msg, "watcher_id"));
  }
  if (!id || id->empty()) return Fail(Error::InvalidArgument("watcherId: required"));
  return *id;
}

Result<HttpResponse> Watchers(const EnvdCall& c, std::string_view method, const json::object& msg) {
  if (c.watchers == nullptr) return Fail(Error::Unavailable("watchers are not enabled"));
  if (method == "CreateWatcher") {
    ASB_ASSIGN_OR_RETURN(WatchArgs a, WatchArgsOf(msg));
    ASB_ASSIGN_OR_RETURN(std::shared_ptr<core::FileWatch> watch,
                         c.manager->files().WatchDirectory(c.owner, c.sandbox_id, a.path,
                                                           a.recursive, 0, a.include_entry));
    ASB_ASSIGN_OR_RETURN(std::string id, c.watchers->Add(c.owner, c.sandbox_id, std::move(watch)));
    json::object o;
    o["watcherId"] = id;
    return Unary(c, std::move(o));
  }
  ASB_ASSIGN_OR_RETURN(std::string id, WatcherIdOf(msg));
  if (method == "RemoveWatcher") {
    ASB_TRY(c.watchers->Remove(c.owner, c.sandbox_id, id));
    return Unary(c, json::object());
  }
  // GetWatcherEvents: what came since the last call. A watch that failed (its sandbox went
  // away) answers its error once its last events were taken.
  ASB_ASSIGN_OR_RETURN(E2bWatchers::Taken t,
                       c.watchers->Take(c.owner, c.sandbox_id, id, FileWatchBody::kPollEvents));
  if (t.batch.events.empty() && t.batch.error) return Fail(*t.batch.error);
  json::array events;
  for (const core::FileEvent& e : t.batch.events) {
    if (auto fs = FilesystemEvent(t.path, e)) events.emplace_back(std::move(*fs));
  }
  json::object o;
  o["events"] = std::move(events);
  return Unary(c, std::move(o));
}

Result<HttpResponse> Filesystem(const EnvdCall& c, std::string_view method, HttpRequest& req) {
  core::FileService& files = c.manager->files();
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  if (method == "Stat") {
    ASB_ASSIGN_OR_RETURN(std::string path, PathField(msg, "path"));
    ASB_ASSIGN_OR_RETURN(core::FileStat s,
                         files.StatFile(c.owner, c.sandbox_id, path, /*with_metadata=*/true));
    return Unary(c, WithEntry(s));
  }
  if (method == "MakeDir") {
    ASB_ASSIGN_OR_RETURN(std::string path, PathField(msg, "path"));
    // envd answers already_exists for an existing entry (the SDK's makeDir returns false).
    if (auto s = files.StatFile(c.owner, c.sandbox_id, path)) {
      return ConnectUnaryError("already_exists", "directory " + s->path + " already exists");
    }
    ASB_ASSIGN_OR_RETURN(core::FileStat s, files.MakeDir(c.owner, c.sandbox_id, path));
    return Unary(c, WithEntry(s));
  }
  if (method == "Move") {
    ASB_ASSIGN_OR_RETURN(std::string from, PathField(msg, "source"));
    ASB_ASSIGN_OR_RETURN(std::string to, PathField(msg, "destination"));
    ASB_ASSIGN_OR_RETURN(core::FileStat s, files.MoveFile(c.owner, c.sandbox_id, from, to, true));
    return Unary(c, WithEntry(s));
  }
  if (method == "Remove") {
    ASB_ASSIGN_OR_RETURN(std::string path, PathField(msg, "path"));
    // envd removes like `rm -rf`: a path that is already gone is success. A sandbox that is
    // gone is still an error (its workspace no longer stats).
    if (auto removed = files.RemoveFile(c.owner, c.sandbox_id, path, true); !removed) {
      if (removed.error().code() != ErrorCode::kNotFound ||
          !files.StatFile(c.owner, c.sandbox_id, std::string(core::kWorkspaceDir))) {
        return Fail(removed.error());
      }
    }
    return Unary(c, json::object());
  }
  if (method == "ListDir") {
    ASB_ASSIGN_OR_RETURN(std::string path, PathField(msg, "path"));
    int64_t depth = 1;
    if (auto it = msg.find("depth"); it != msg.end() && !it->value().is_null()) {
      if (!it->value().is_int64() || it->value().as_int64() < 0) {
        return Fail(Error::InvalidArgument("depth: must be an integer >= 0"));
      }
      depth = std::max<int64_t>(1, it->value().as_int64());  // envd treats 0 as 1
    }
    ASB_ASSIGN_OR_RETURN(core::FileStat dir, files.StatFile(c.owner, c.sandbox_id, path));
    if (dir.type != "dir") {
      return Fail(Error::InvalidArgument("path " + dir.path + " is not a directory"));
    }
    ASB_ASSIGN_OR_RETURN(auto list, files.ListFiles(c.owner, c.sandbox_id, dir.path, depth > 1,
                                                    /*with_metadata=*/true));
    json::array entries;
    for (const core::FileStat& s : list) {
      if (static_cast<int64_t>(DepthBelow(dir.path, s.path)) <= depth) {
        entries.push_back(EntryInfo(s));
      }
    }
    json::object o;
    o["entries"] = std::move(entries);
    return Unary(c, std::move(o));
  }
  if (method == "CreateWatcher" || method == "GetWatcherEvents" || method == "RemoveWatcher") {
    return Watchers(c, method, msg);
  }
  return ConnectUnaryError("unimplemented", "filesystem.Filesystem/" + std::string(method) +
                                                " is not implemented (docs/e2b.md)");
}

json::object UploadEntry(const core::FileStat& s) {
  json::object o;
  o["path"] = E2bShownPath(s.path);
  o["name"] = s.name;
  o["type"] = "file";
  if (!s.metadata.empty()) o["metadata"] = MetadataJson(s.metadata);
  return o;
}

Result<HttpResponse> Files(const EnvdCall& c, HttpRequest& req) {
  core::FileService& files = c.manager->files();
  const std::string* qpath = req.Query("path");
  const std::string path = qpath != nullptr ? E2bPath(*qpath) : "";
  if (req.method == "GET") {
    if (path.empty()) return Fail(Error::InvalidArgument("path: required"));
    HttpResponse r;
    r.status = 200;
    r.content_type = "application/octet-stream";
    r.sandbox_id = c.sandbox_id;
    // Large files stream from the sandbox (file_read_body.h): never held whole here.
    ASB_ASSIGN_OR_RETURN(core::FileStat st, files.StatFile(c.owner, c.sandbox_id, path));
    if (st.type == "file" && st.size > kWholeFileMaxBytes) {
      ASB_ASSIGN_OR_RETURN(core::FileReadStream rs,
                           files.OpenFileRead(c.owner, c.sandbox_id, path));
      r.stream = std::make_shared<FileReadBody>(std::move(rs));
      return r;
    }
    ASB_ASSIGN_OR_RETURN(r.body, files.ReadFile(c.owner, c.sandbox_id, path));
    return r;
  }
  if (req.method != "POST") {
    return Fail(Error::InvalidArgument("/files takes GET (download) or POST (upload)"));
  }
  json::array written;
  ASB_ASSIGN_OR_RETURN(const auto metadata, UploadMetadata(req));
  // envd 0.5.7: `write(..., {gzip: true})` sends the file gzip-compressed. Read whole (under the
  // server's body budget) and inflated within the file size limit, so a small body cannot
  // become a huge one in memory. Every other upload streams into the sandbox as it arrives.
  const std::string encoding = AsciiLower(req.Header("content-encoding"));
  if (encoding == "gzip") {
    if (req.body_reader) {
      ASB_ASSIGN_OR_RETURN(req.body, req.body_reader->ReadAll());
    }
    req.body_reader.reset();
    ASB_ASSIGN_OR_RETURN(req.body,
                         GunzipBounded(req.body, c.manager->config().limits.max_file_bytes));
  } else if (!encoding.empty() && encoding != "identity") {
    return Fail(Error::InvalidArgument("Content-Encoding " + encoding +
                                       " is not supported (gzip or none)"));
  }
  const std::string_view type = MediaType(req.Header("content-type"));
  if (AsciiLower(type) == "application/octet-stream") {
    if (path.empty()) return Fail(Error::InvalidArgument("path: required for a raw upload"));
    ASB_ASSIGN_OR_RETURN(core::FileStat s, UploadRequestBody(files, c.owner, c.sandbox_id, path,
                                                             std::nullopt, req, metadata));
    written.push_back(UploadEntry(s));
  } else {
    ASB_ASSIGN_OR_RETURN(std::string boundary, MultipartBoundary(req.Header("content-type")));
    ByteSource source;
    size_t at = 0;
    if (req.body_reader) {
      source = [&body = *req.body_reader](char* buf, size_t n) { return body.Read(buf, n); };
    } else {
      source = [&req, &at](char* buf, size_t n) -> Result<size_t> {
        const size_t take = std::min(n, req.body.size() - at);
        std::memcpy(buf, req.body.data() + at, take);
        at += take;
        return take;
      };
    }
    MultipartReader parts(std::move(source), boundary, kMaxUploadParts);
    // The first file may be named by ?path=; the others (and every file without it) by their
    // parts' filenames, as the SDKs' writeFiles sends them.
    bool path_used = path.empty();
    for (;;) {
      ASB_ASSIGN_OR_RETURN(std::optional<MultipartPart> p, parts.NextPart());
      if (!p) break;
      if (p->name != "file") continue;  // NextPart skips its data
      std::string dest = !path_used ? path : E2bPath(p->filename);
      path_used = true;
      if (dest.empty()) {
        return Fail(Error::InvalidArgument("multipart: a file part without a filename (path)"));
      }
      ASB_ASSIGN_OR_RETURN(
          core::FileWriteStream ws,
          files.OpenFileWrite(c.owner, c.sandbox_id, dest, std::nullopt, std::nullopt, metadata));
      ASB_ASSIGN_OR_RETURN(core::FileStat s,
                           StreamUpload(std::move(ws), [&parts](char* buf, size_t n) {
                             return parts.ReadData(buf, n);
                           }));
      written.push_back(UploadEntry(s));
    }
    if (written.empty()) return Fail(Error::InvalidArgument("multipart: no part named \"file\""));
  }
  HttpResponse r = JsonResponse(200, json::serialize(written));
  r.sandbox_id = c.sandbox_id;
  return r;
}

}  // namespace

std::string E2bShownPath(std::string_view path) {
  constexpr std::string_view kWorkspace = "/workspace";
  if (path.substr(0, kWorkspace.size()) == kWorkspace &&
      (path.size() == kWorkspace.size() || path[kWorkspace.size()] == '/')) {
    return "/home/user" + std::string(path.substr(kWorkspace.size()));
  }
  return std::string(path);
}

void E2bCommandPlace(const EnvdCall& c, const std::optional<std::string>& cwd, std::string* workdir,
                     std::map<std::string, std::string>* env) {
  constexpr char kHome[] = "/home/user";
  const bool sandbox_user = (c.user.empty() ? c.default_user : c.user) == "sandbox";
  if (cwd) {
    *workdir = E2bPath(*cwd);
    // bash and dash keep an inherited PWD that names the directory they start in: the
    // symlinked name then survives (`pwd` says /home/user/x, not /workspace/x).
    if (*workdir != *cwd) env->emplace("PWD", *cwd);
  } else if (sandbox_user && c.default_workdir == "/workspace") {
    *workdir = "/workspace";
    env->emplace("PWD", kHome);
  }
  if (sandbox_user) env->emplace("HOME", kHome);
}

std::string E2bPath(std::string_view path) {
  constexpr std::string_view kHome = "/home/user";
  if (path.substr(0, kHome.size()) == kHome &&
      (path.size() == kHome.size() || path[kHome.size()] == '/')) {
    return "/workspace" + std::string(path.substr(kHome.size()));
  }
  return std::string(path);
}

Result<std::string> EnvdUser(std::string_view e2b_user) {
  if (e2b_user.empty() || e2b_user == "user") return std::string();
  if (e2b_user == "root") return std::string("root");
  return Fail(Error::InvalidArgument("user " + std::string(e2b_user) +
                                     " does not exist; a sandbox has \"user\" and \"root\""));
}

Result<json::object> ConnectMessage(const HttpRequest& req, bool streaming) {
  const std::string type = AsciiLower(MediaType(req.Header("content-type")));
  std::string text;
  if (streaming) {
    if (type != "application/connect+json") {
      return Fail(Error::InvalidArgument(
          "a streaming call takes Content-Type application/connect+json (JSON codec only)"));
    }
    ASB_ASSIGN_OR_RETURN(text, ParseConnectRequestEnvelope(req.body, kMaxConnectMessageBytes));
  } else {
    if (type != "application/json") {
      return Fail(Error::InvalidArgument(
          "a unary call takes Content-Type application/json (JSON codec only)"));
    }
    if (req.body.size() > kMaxConnectMessageBytes) {
      return Fail(Error(ErrorCode::kTooLarge, "the message is over 1 MiB"));
    }
    text = req.body;
  }
  return JsonObject(text);  // an empty body is the empty message
}

HttpResponse EnvdFilesystemCall(const EnvdCall& c, std::string_view method, HttpRequest& req) {
  if (method == "WatchDir") {
    Result<HttpResponse> r = WatchDir(c, req);
    if (r) return std::move(*r);
    return ConnectStreamError(r.error(), c.sandbox_id);
  }
  Result<HttpResponse> r = Filesystem(c, method, req);
  if (r) return std::move(*r);
  return ConnectUnaryError(r.error());
}

HttpResponse EnvdFiles(const EnvdCall& c, HttpRequest& req) {
  Result<HttpResponse> r = Files(c, req);
  if (r) return std::move(*r);
  return E2bHttpError(r.error());  // envd's error body on its plain HTTP routes
}

}  // namespace asb::api
