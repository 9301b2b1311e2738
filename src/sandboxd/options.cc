#include "sandboxd/options.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <charconv>

namespace asb::sandboxd {

namespace {

Result<int> ParseFdValue(std::string_view flag, std::string_view value) {
  int fd = -1;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), fd);
  if (ec != std::errc() || ptr != value.data() + value.size() || fd < 0) {
    return Fail(Error::InvalidArgument(std::string(flag) +
                                       ": not a file descriptor number: " + std::string(value)));
  }
  return fd;
}

}  // namespace

std::map<std::string, std::string> DefaultEnv() {
  return {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"HOME", "/workspace"},
      {"USER", "sandbox"},
      {"LANG", "C.UTF-8"},
  };
}

Result<Options> ParseCommandLine(const std::vector<std::string>& args) {
  Options o;
  o.env = DefaultEnv();
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i];
    auto value_of = [&](std::string_view prefix) -> std::optional<std::string_view> {
      if (a.substr(0, prefix.size()) == prefix) return a.substr(prefix.size());
      return std::nullopt;
    };
    if (auto v = value_of("--listen-fd=")) {
      ASB_ASSIGN_OR_RETURN(o.listen_fd, ParseFdValue("--listen-fd", *v));
    } else if (auto v = value_of("--port=")) {
      if (v->empty() || (*v)[0] != '/') {
        return Fail(Error::InvalidArgument("--port must be an absolute device path"));
      }
      o.port = std::string(*v);
    } else if (auto v = value_of("--config-fd=")) {
      ASB_ASSIGN_OR_RETURN(o.config_fd, ParseFdValue("--config-fd", *v));
    } else if (auto v = value_of("--workspace=")) {
      if (v->empty() || (*v)[0] != '/') {
        return Fail(Error::InvalidArgument("--workspace must be an absolute path"));
      }
      o.workspace = std::string(*v);
      while (o.workspace.size() > 1 && o.workspace.back() == '/') o.workspace.pop_back();
    } else if (auto v = value_of("--work-cgroup-fd=")) {
      ASB_ASSIGN_OR_RETURN(int fd, ParseFdValue("--work-cgroup-fd", *v));
      if (o.work_cgroup_fds.size() >= 3) {
        return Fail(Error::InvalidArgument("--work-cgroup-fd given more than 3 times"));
      }
      o.work_cgroup_fds.push_back(fd);
    } else if (a == "--allow-packet-sockets") {
      o.allow_packet_sockets = true;
    } else if (a == "--no-spare") {
      o.spare = false;
    } else if (a == "--sudo") {
      o.sudo = true;
    } else if (a == "--no-pid1") {
      o.pid1 = false;
    } else {
      return Fail(Error::InvalidArgument("unknown argument: " + std::string(a)));
    }
  }
  if ((o.listen_fd < 0) == o.port.empty()) {
    return Fail(Error::InvalidArgument("exactly one of --listen-fd and --port is required"));
  }
  return o;
}

Status ApplyConfigJson(std::string_view json, Options* options) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec) return Fail(Error::InvalidArgument("config: " + ec.message()));
  if (!v.is_object()) return Fail(Error::InvalidArgument("config: not a JSON object"));
  const auto& obj = v.get_object();
  if (auto* env = obj.if_contains("env")) {
    if (!env->is_object()) return Fail(Error::InvalidArgument("config: env must be an object"));
    for (const auto& [k, val] : env->get_object()) {
      if (!val.is_string()) {
        return Fail(Error::InvalidArgument("config: env values must be strings"));
      }
      options->env[std::string(k)] = std::string(val.get_string());
    }
  }
  if (auto* h = obj.if_contains("hostname")) {
    if (!h->is_string()) return Fail(Error::InvalidArgument("config: hostname must be a string"));
    options->hostname = std::string(h->get_string());
  }
  return {};
}

Status ReadConfigFd(int fd, Options* options) {
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read config");
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) return Fail(Error::InvalidArgument("config: larger than 1 MiB"));
  }
  if (text.empty()) return {};
  return ApplyConfigJson(text, options);
}

}  // namespace asb::sandboxd
