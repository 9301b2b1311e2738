// E2B's in-sandbox daemon "envd" on our core services (docs/e2b.md, ADR 0023): the Connect
// services process.Process (e2b_envd_process.cc) and filesystem.Filesystem, and the plain HTTP
// /files and /health (e2b_envd_files.cc). The message shapes are those of
// spec/envd/process/process.proto and spec/envd/filesystem/filesystem.proto of e2b-dev/E2B, in
// protobuf's JSON mapping (lowerCamelCase names; the proto names are accepted too).
// The caller (handlers_e2b.cc) has already checked the sandbox's access token.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "common/result.h"

namespace boost::json {
class object;
class value;
}  // namespace boost::json
namespace asb::core {
class SandboxManager;
}  // namespace asb::core

namespace asb::api {

class E2bWatchers;

/// The envdVersion we report: the SDKs gate features on it, so it is no higher than what we
/// implement (0.5.2: closeStdin; 0.5.7: octet-stream and gzip uploads; 0.6.2: file metadata;
/// 0.6.3: entries in watch events; 0.6.4: allowNetworkMounts, moot here: no network mounts).
inline constexpr std::string_view kEnvdVersion = "0.6.4";

/// One envd request, resolved: the sandbox and the tenant it belongs to.
struct EnvdCall {
  core::SandboxManager* manager = nullptr;
  std::string owner;
  std::string sandbox_id;  // ours, "sb_<hex>"
  /// The user the SDK asked for (Authorization: Basic base64("<user>:"), or ?username=):
  /// "" = the sandbox's default user; else "sandbox" or "root".
  std::string user;
  int64_t keepalive_ms = 50'000;
  /// Connect-Timeout-Ms of the request; 0 = none.
  int64_t deadline_ms = 0;
  /// The watchers of CreateWatcher and its siblings (shared by all sandboxes).
  E2bWatchers* watchers = nullptr;
  /// The sandbox's default working directory (SandboxInfo::default_workdir): a command that
  /// names no cwd starts in E2B's home when it is the workspace (E2bCommandPlace).
  std::string default_workdir = "/workspace";
  /// Its default user (SandboxInfo::default_user): "sandbox" or "root".
  std::string default_user = "sandbox";
};

/// E2B's user names mapped onto ours: "" and "user" (E2B's default user) = "", "root" =
/// "root". Errors: kInvalidArgument for any other name.
Result<std::string> EnvdUser(std::string_view e2b_user);

/// E2B's home directory: "/home/user" and paths below it name the sandbox's workspace, our
/// user's home ("/home/user/a.py" -> "/workspace/a.py"), in file and working-directory
/// arguments (docs/e2b.md). Every other path is returned as it is.
std::string E2bPath(std::string_view path);

/// The other way, for every path an E2B answer shows (EntryInfo's path and symlinkTarget, an
/// upload's entries, a code context's cwd): the workspace and paths below it read as E2B's home
/// ("/workspace/a.py" -> "/home/user/a.py"), as on E2B, where the SDK's user lives in
/// /home/user. Every other path is returned as it is.
std::string E2bShownPath(std::string_view path);

/// Where an E2B command or PTY starts and the environment that says so (docs/e2b.md): `cwd` as
/// the SDK sent it (nullopt: none), for c.user. A command of the sandbox user without a cwd, in a
/// sandbox whose default working directory is the workspace, starts in /home/user (the template's
/// symlink to /workspace) with PWD and HOME /home/user, so `pwd`, `~` and $HOME read as on E2B; a
/// cwd below /home/user keeps that name in PWD. Variables the SDK sent win. Sets `*workdir` ("" =
/// the sandbox's default) and adds to
/// `*env`.
void E2bCommandPlace(const EnvdCall& c, const std::optional<std::string>& cwd, std::string* workdir,
                     std::map<std::string, std::string>* env);

/// The JSON object of a body or message; "" is {}. Errors: kInvalidArgument "the message is
/// not a JSON object".
Result<boost::json::object> JsonObject(std::string_view text);
/// Field `name` of `o`; nullptr when absent or null (protobuf's JSON mapping: null = unset).
const boost::json::value* FieldOf(const boost::json::object& o, std::string_view name);
/// A string field. Errors: kInvalidArgument "<label>: must be a string" (label = name if "").
Result<std::optional<std::string>> StringOf(const boost::json::object& o, std::string_view name,
                                            std::string_view label = {});
/// An object field (nullptr when absent). Errors: kInvalidArgument "<label>: must be an object".
Result<const boost::json::object*> ObjectOf(const boost::json::object& o, std::string_view name,
                                            std::string_view label = {});
/// An object of strings (empty when absent). Errors: kInvalidArgument "<label>: must be an
/// object", "<label>: values must be strings".
Result<std::map<std::string, std::string>> StringMapOf(const boost::json::object& o,
                                                       std::string_view name,
                                                       std::string_view label = {});

/// The JSON message of a Connect call: the body itself (unary, application/json) or the one
/// envelope of a server-streaming call (application/connect+json). Errors: kInvalidArgument
/// (wrong content type, bad envelope, not a JSON object), kTooLarge.
Result<boost::json::object> ConnectMessage(const HttpRequest& req, bool streaming);

/// POST /process.Process/<method>. Unary answers are JSON; Start and Connect stream.
HttpResponse EnvdProcessCall(const EnvdCall& call, std::string_view method, HttpRequest& req);
/// POST /filesystem.Filesystem/<method>.
HttpResponse EnvdFilesystemCall(const EnvdCall& call, std::string_view method, HttpRequest& req);
/// GET and POST /files (download; multipart upload).
HttpResponse EnvdFiles(const EnvdCall& call, HttpRequest& req);

/// The code interpreter's routes on port 49999 (e2b_interpreter.cc): /execute and /contexts.
HttpResponse CodeInterpreterCall(const EnvdCall& call, HttpRequest& req);

}  // namespace asb::api
