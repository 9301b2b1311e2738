#include "cli/run_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "cli/command.h"

namespace asb::cli {
namespace fs = std::filesystem;

namespace {

bool IsValidTemplateName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  auto ok_first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!ok_first(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [&](char c) { return ok_first(c) || c == '-' || c == '_'; });
}

}  // namespace

std::string DefaultDataDir() {
  const char* env = std::getenv("AGENT_SANDBOX_DATA_DIR");
  if (env != nullptr && *env != '\0') return env;
  return "/var/lib/agent-sandbox";
}

Result<std::string> TemplateRootfs(const std::string& data_dir, const std::string& name) {
  if (!IsValidTemplateName(name)) {
    return Fail(Error::InvalidArgument("invalid template name '" + name + "'"));
  }
  fs::path templates = fs::path(data_dir) / "templates";
  fs::path rootfs = templates / name / "rootfs";
  std::error_code ec;
  if (fs::is_directory(rootfs / "bin", ec) || fs::is_directory(rootfs / "usr", ec)) {
    return rootfs.string();
  }
  std::vector<std::string> available;
  for (const auto& entry : fs::directory_iterator(templates, ec)) {
    if (entry.path().filename().string().starts_with(".")) continue;
    if (fs::is_directory(entry.path() / "rootfs", ec)) {
      available.push_back(entry.path().filename().string());
    }
  }
  std::sort(available.begin(), available.end());
  std::string list;
  for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
  if (list.empty()) list = "none";
  return Fail(Error::NotFound("template '" + name + "' is not built in " + templates.string() +
                              " (available: " + list +
                              "); build it with: sudo agent-sandbox template build " + name));
}

Result<std::string> FindSandboxd() {
  std::string path;
  const char* env = std::getenv("AGENT_SANDBOX_SANDBOXD");
  if (env != nullptr && *env != '\0') {
    path = env;
  } else {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return Fail(Error::FromErrno(ec.value(), "readlink /proc/self/exe"));
    path = (self.parent_path() / "sandboxd").string();
  }
  if (::access(path.c_str(), X_OK) != 0) {
    return Fail(Error::FromErrno(ErrorCode::kUnavailable, errno,
                                 "sandboxd not found at " + path +
                                     " (install it beside agent-sandbox or set "
                                     "AGENT_SANDBOX_SANDBOXD)"));
  }
  return path;
}

Result<std::map<std::string, std::string>> ParseEnvAssignments(
    const std::vector<std::string>& items) {
  std::map<std::string, std::string> env;
  for (const auto& item : items) {
    if (item.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("--env value contains a NUL byte"));
    }
    auto eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (key.empty()) return Fail(Error::InvalidArgument("--env '" + item + "': empty name"));
    if (eq != std::string::npos) {
      env[key] = item.substr(eq + 1);
    } else if (const char* value = std::getenv(key.c_str())) {
      env[key] = value;
    }
  }
  return env;
}

int ExitCodeFor(const protocol::ExecResult& result) {
  if (result.timed_out) return kExitTimeout;
  if (result.signal > 0) return 128 + result.signal;
  return result.exit_code;
}

}  // namespace asb::cli
