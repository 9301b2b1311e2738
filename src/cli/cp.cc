// `agent-sandbox cp`, like `docker cp`, over the archive routes
// (GET/PUT /v1/sandboxes/{id}/archive?path=DIR, plain tar):
//   cp LOCAL ID:DST    a file or a directory tree in; into DST when DST is an existing
//                      directory (or ends in '/'), else as DST
//   cp ID:SRC LOCAL    out, with the same rule for LOCAL
//   cp ID:SRC -        the tar of directory SRC (a file: its bytes) to stdout
//   cp - ID:DIR        a tar from stdin unpacked into DIR
// Symlinks stay symlinks, modes and empty directories are kept (cli/local_tar.h). Every
// failure, local or remote, is one "agent-sandbox: ..." line and exit 125.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "api/url.h"
#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/local_tar.h"
#include "cli/server_commands.h"
#include "common/ids.h"

namespace asb::cli {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

struct Remote {
  std::string id;
  std::string path;
};

// "sb_x:path" -> {id, path}; anything else is local.
std::optional<Remote> SplitRemote(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string id = s.substr(0, colon);
  if (!IsValidId(id, "sb_")) return std::nullopt;
  return Remote{id, s.substr(colon + 1)};
}

std::string StripSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// The last component of a path ("a/b/" -> "b"); `fallback` for "", "." and "/".
std::string BaseName(const std::string& p, const std::string& fallback) {
  std::string name = fs::path(StripSlashes(p)).filename().string();
  return name.empty() || name == "." || name == "/" ? fallback : name;
}

// The directory part ("a/b" -> "a"); `fallback` when there is none.
std::string DirName(const std::string& p, const std::string& fallback) {
  std::string dir = fs::path(StripSlashes(p)).parent_path().string();
  return dir.empty() ? fallback : dir;
}

// GET .../files/stat: the remote path's stat, or nullopt when it does not exist.
Result<std::optional<json::object>> RemoteStat(const Remote& r) {
  ASB_ASSIGN_OR_RETURN(api::HttpClient c, MakeClient());
  ASB_ASSIGN_OR_RETURN(api::ClientResponse resp,
                       c.Request("GET", SandboxPath(r.id) + "/files/stat?path=" +
                                            api::PercentEncode(r.path.empty() ? "." : r.path)));
  if (resp.status == 404 && resp.error_code == "not_found") return std::nullopt;
  if (resp.status >= 300) return Fail(ServerError(resp));
  ASB_ASSIGN_OR_RETURN(json::value v, ParseJson(resp.body));
  if (!v.is_object()) return Fail(Error::Backend("stat: answer is not an object"));
  return std::optional<json::object>(v.as_object());
}

Status PutArchive(const Remote& dst_dir, const std::string& tar, const std::string& shown) {
  std::string target = SandboxPath(dst_dir.id) + "/archive";
  if (!dst_dir.path.empty()) target += "?path=" + api::PercentEncode(dst_dir.path);
  ASB_ASSIGN_OR_RETURN(api::ClientResponse r, Call("PUT", target, tar, "application/x-tar"));
  ASB_ASSIGN_OR_RETURN(json::value v, ParseJson(r.body));
  const json::object& o = v.as_object();
  std::fprintf(stderr, "%s:%s (%s entries, %s bytes)\n", dst_dir.id.c_str(), shown.c_str(),
               Str(o, "entries").c_str(), Str(o, "bytes").c_str());
  return {};
}

Status Upload(const std::string& src, const Remote& dst) {
  if (src == "-") {
    ASB_ASSIGN_OR_RETURN(std::string tar, ReadStdin());
    return PutArchive(dst, tar, dst.path.empty() ? "/workspace" : dst.path);
  }
  struct stat st {};
  if (::lstat(src.c_str(), &st) != 0) return FailErrno(src);
  // Into DST when it is a directory (or is meant to be one), else as DST.
  Remote dir{dst.id, dst.path};
  std::string name = BaseName(src, "dir");
  if (!dst.path.empty() && dst.path.back() != '/') {
    ASB_ASSIGN_OR_RETURN(auto remote, RemoteStat(dst));
    if (!remote || Str(*remote, "type") != "dir") {
      dir.path = DirName(dst.path, "");
      name = BaseName(dst.path, name);
    }
  }
  ASB_ASSIGN_OR_RETURN(std::string tar, TarOfPath(src, name));
  return PutArchive(dir, tar, (dir.path.empty() ? "" : StripSlashes(dir.path) + "/") + name);
}

Status Download(const Remote& src, const std::string& dst) {
  ASB_ASSIGN_OR_RETURN(auto remote, RemoteStat(src));
  if (!remote) {
    return Fail(Error::NotFound(src.id + ":" + src.path + ": no such file or directory"));
  }
  const bool is_dir = Str(*remote, "type") == "dir";
  // A directory travels as tar; a single file to stdout as its bytes (as cp always did).
  std::string target = SandboxPath(src.id) + (is_dir || dst != "-" ? "/archive" : "/files");
  if (!src.path.empty() || !is_dir) target += "?path=" + api::PercentEncode(src.path);
  ASB_ASSIGN_OR_RETURN(api::ClientResponse r, Call("GET", target));
  if (dst == "-") {
    if (std::fwrite(r.body.data(), 1, r.body.size(), stdout) != r.body.size() ||
        std::fflush(stdout) != 0) {
      return FailErrno("write stdout");
    }
    return {};
  }
  std::string dir = dst;
  std::string name = BaseName(src.path, "workspace");
  struct stat st {};
  if (::stat(dst.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (dst.back() == '/') return Fail(Error::NotFound(dst + ": no such directory"));
    dir = DirName(dst, ".");
    name = BaseName(dst, name);
  }
  ExtractNames names;
  if (is_dir) {
    names.under = name;
    names.root_mode = static_cast<unsigned>(std::strtoul(Str(*remote, "mode").c_str(), nullptr, 8));
  } else {
    names.rename_single = name;
  }
  return ExtractTar(r.body, dir, names);
}

int Copy(const std::string& src, const std::string& dst) {
  auto rs = SplitRemote(src);
  auto rd = SplitRemote(dst);
  if (rs.has_value() == rd.has_value()) {
    return ReportError(Error::InvalidArgument("cp: exactly one of SRC and DST must be ID:PATH"));
  }
  if (src.empty() || dst.empty()) return ReportError(Error::InvalidArgument("cp: empty path"));
  Status st = rd ? Upload(src, *rd) : Download(*rs, dst);
  if (!st) return ReportError(st.error().WithContext("cp"));
  return 0;
}

}  // namespace

void RegisterCopyCommand(CLI::App& app) {
  auto src = std::make_shared<std::string>();
  auto dst = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "cp",
      "Copy files or directories in (cp LOCAL|- ID:PATH) or out (cp ID:PATH LOCAL|-), as docker "
      "cp: into PATH when it is a directory, else as PATH; '-' is a tar on stdin/stdout; "
      "symlinks, modes and empty directories are kept");
  sub->add_option("src", *src, "Source: LOCAL, ID:PATH or - (a tar on stdin)")->required();
  sub->add_option("dst", *dst, "Destination: ID:PATH, LOCAL or - (a tar on stdout)")->required();
  SetAction(sub, [src, dst] { return Copy(*src, *dst); });
}

}  // namespace asb::cli
