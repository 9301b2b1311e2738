// `agent-sandbox serve`: the REST server. Wires the pieces of ARCHITECTURE.md "Processes":
// configuration (api/config.h: defaults < AGENT_SANDBOX_* environment < flags), the SQLite
// store in the data directory, the ns backend with sandboxd, the SandboxManager (Recover() and
// the TTL reaper), the routing table and the Beast server; then serves until SIGTERM/SIGINT and
// shuts down gracefully. Sandboxes keep running across a restart (the next start adopts them).
//
// Exit codes: 0 after a graceful stop; 2 for a configuration error ("configuration error: ..."
// on stderr), including running without auth unless --insecure-no-auth; 1 when start-up fails.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "api/config.h"
#include "api/handlers.h"
#include "api/server.h"
#include "cli/command.h"
#include "cli/run_support.h"
#include "cli/server_commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "core/sandbox_manager.h"
#include "core/templates.h"
#include "isolation/ns/ns_backend.h"
#include "store/store.h"

namespace asb::cli {
namespace {

constexpr int kExitConfig = 2;
constexpr int kExitStartup = 1;

// The cgroup directory name of this server's sandboxes: "agent-sandbox-" + 8 hex digits of a
// FNV-1a hash of the data directory. The ns backend reports every cgroup under its name as its
// own (ListOwned), and Recover() destroys owned ids that no record names; a name per data
// directory keeps two servers (tests, a second instance) from destroying each other's
// sandboxes, while a restart on the same data directory finds its cgroups again.
std::string CgroupNameFor(const std::string& data_dir) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data_dir) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "agent-sandbox-%08x", static_cast<unsigned>(h & 0xffffffffu));
  return buf;
}

int ConfigError(const std::string& message) {
  std::fprintf(stderr, "configuration error: %s\n", message.c_str());
  return kExitConfig;
}

int StartupError(const Error& e) {
  spdlog::critical("start-up failed: {}", e.ToString());
  std::fprintf(stderr, "agent-sandbox serve: %s\n", e.message().c_str());
  return kExitStartup;
}

struct ServeFlags {
  std::map<std::string, std::string> values;  // flag name -> text, only when given
  bool insecure_no_auth = false;
};

int Serve(CLI::App& root, const ServeFlags& flags) {
  api::ServeConfig cfg;
  if (auto st = api::ApplyEnvironment(cfg, [](const char* n) { return std::getenv(n); }); !st) {
    return ConfigError(st.error().message());
  }
  for (const api::Setting& s : api::Settings()) {
    auto it = flags.values.find(s.flag);
    if (s.flag.empty() || it == flags.values.end()) continue;
    if (auto st = api::ApplyFlag(cfg, s, it->second); !st) {
      return ConfigError(st.error().message());
    }
  }
  if (flags.insecure_no_auth) cfg.insecure_no_auth = true;
  if (auto st = api::ValidateServeConfig(cfg); !st) return ConfigError(st.error().message());
  if (!cfg.insecure_no_auth) {
    return ConfigError(
        "no API keys are configured and authentication is not implemented yet; run with "
        "--insecure-no-auth (or AGENT_SANDBOX_INSECURE_NO_AUTH=true) to serve without "
        "authentication on a trusted network");
  }
  // The root --log-level wins when given; otherwise serve logs at info (AGENT_SANDBOX_LOG_LEVEL).
  std::string level = cfg.log_level;
  if (CLI::Option* o = root.get_option_no_throw("--log-level"); o && o->count() > 0) {
    level = o->as<std::string>();
  }
  // main.cc has set up the logger already (at warn unless told otherwise); serve's default
  // is info, so that every request is logged.
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::warn("serving WITHOUT authentication (--insecure-no-auth): anyone who can reach "
               "{}:{} controls every sandbox", cfg.host, cfg.port);

  // Data directory and its pieces.
  const std::string& data = cfg.manager.data_dir;
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) return StartupError(Error::FromErrno(ec.value(), "create data dir " + data));
  ::chmod(data.c_str(), 0711);
  std::string sandboxd = cfg.sandboxd_path;
  if (sandboxd.empty()) {
    auto found = FindSandboxd();
    if (!found) return StartupError(found.error());
    sandboxd = *found;
  }
  auto store = store::Store::Open(cfg.manager.DatabasePath(), SystemClock::Instance().NowUnixMs());
  if (!store) return StartupError(store.error().WithContext("open database"));
  core::DirTemplateCatalog templates(cfg.manager.TemplatesDir());
  isolation::ns::NsBackendOptions bo;
  bo.state_dir = data + "/sandboxes";
  bo.sandboxd_path = sandboxd;
  bo.cgroup_name = CgroupNameFor(std::filesystem::weakly_canonical(data, ec).string());
  bo.default_workspace_bytes =
      static_cast<uint64_t>(cfg.manager.limits.default_workspace_mb) << 20;
  auto backend = isolation::ns::MakeNsBackend(bo);
  if (!backend) return StartupError(backend.error().WithContext("ns backend"));

  // Bind before recovering, so a second server on the same port fails without touching
  // sandboxes the first one owns.
  api::ApiContext ctx;
  ctx.stream_keepalive_ms = cfg.stream_keepalive_seconds * 1000;
  core::SandboxManager manager(cfg.manager, **store, **backend, SystemClock::Instance(),
                               templates);
  ctx.manager = &manager;
  api::Router router = api::BuildRouter(ctx);
  api::ServerOptions so;
  so.host = cfg.host;
  so.port = cfg.port;
  so.max_file_body_bytes = cfg.manager.limits.max_file_bytes + 64 * 1024;
  so.shutdown_grace_s = static_cast<int>(cfg.shutdown_grace_seconds);
  api::HttpServer server(so, router);
  if (auto st = server.Listen(); !st) return StartupError(st.error());
  if (auto st = manager.Start(); !st) return StartupError(st.error().WithContext("recover"));
  spdlog::info("agent-sandbox {} serving on http://{}:{} (data dir {}, backend {}, max {} "
               "sandboxes)", ASB_VERSION, cfg.host, server.port(), data, (*backend)->name(),
               cfg.manager.limits.max_sandboxes);
  bool clean = server.Run();
  manager.Stop();
  if (!clean) {
    // Handlers still hold references to the manager; sandboxes are durable and the next start
    // adopts them, so leave without unwinding.
    spdlog::warn("exiting with requests still in flight");
    std::fflush(nullptr);
    _exit(0);
  }
  spdlog::info("stopped");
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "serve", "Run the REST server (configuration: flags or AGENT_SANDBOX_* environment)");
  auto flags = std::make_shared<ServeFlags>();
  for (const api::Setting& s : api::Settings()) {
    if (s.flag.empty()) continue;
    std::string flag = s.flag;
    sub->add_option_function<std::string>(
        "--" + flag, [flags, flag](const std::string& v) { flags->values[flag] = v; },
        s.help + " (env " + s.env + ")");
  }
  sub->add_flag("--insecure-no-auth", flags->insecure_no_auth,
                "Serve without API keys (env AGENT_SANDBOX_INSECURE_NO_AUTH=true)");
  CLI::App* root = &app;
  SetAction(sub, [root, flags] { return Serve(*root, *flags); });
}

}  // namespace asb::cli
