// `agent-sandbox serve`: the REST server. Wires the pieces of ADR 0007:
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

#include "api/auth.h"
#include "api/buffer_budget.h"
#include "api/config.h"
#include "api/console.h"
#include "api/e2b_token.h"
#include "api/handlers.h"
#include "api/json_log.h"
#include "api/seed_a_wire.h"
#include "api/server.h"
#include "cli/command.h"
#include "cli/microvm_options.h"
#include "cli/run_leftovers.h"
#include "cli/run_support.h"
#include "cli/server_commands.h"
#include "common/clock.h"
#include "common/log.h"
#include "core/data_dir.h"
#include "core/sandbox_manager.h"
#include "core/templates.h"
#include "isolation/backend_set.h"
#include "isolation/microvm/microvm_backend.h"
#include "isolation/ns/ns_backend.h"
#include "isolation/ns/xfs_pool.h"
#include "mcp/http_transport.h"
#include "store/idempotency.h"
#include "store/keys.h"
#include "store/secret_box.h"
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
// The offset basis is FNV's with its last digit lost (14695981039346656037 is the standard
// one, common/ids.h's Fnv1a64): kept as it is, since any change renames every server's cgroups
// and a restarted server would no longer find its running sandboxes. tests/e2e/harness.py and
// tests/mcp/harness.mjs compute the same name.
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
  std::fprintf(stderr, "agent-sandbox serve: %s\n", e.detail().c_str());
  return kExitStartup;
}

struct ServeFlags {
  std::map<std::string, std::string> values;  // flag name -> text, only when given
  bool insecure_no_auth = false;
  std::string log_format;            // --log-format, "" when not given
  std::string event_retention_days;  // --event-retention-days, "" when not given
};

// api/AUTH.md's settings, read here beside api/config.h's: AGENT_SANDBOX_API_KEYS (comma-separated
// admin keys; never a flag, so keys stay out of `ps`), AGENT_SANDBOX_LOG_FORMAT / --log-format
// (text | json), AGENT_SANDBOX_EVENT_RETENTION_DAYS / --event-retention-days (0 = keep).
struct AuthSettings {
  std::vector<std::string> env_keys;
  bool json_logs = false;
  int64_t retention_days = 30;
};

Result<AuthSettings> ReadAuthSettings(const ServeFlags& flags) {
  AuthSettings a;
  if (const char* keys = std::getenv("AGENT_SANDBOX_API_KEYS")) {
    std::string cur;
    for (const char* p = keys;; ++p) {
      if (*p == ',' || *p == '\0') {
        while (!cur.empty() && (cur.back() == ' ' || cur.back() == '\n')) cur.pop_back();
        size_t b = cur.find_first_not_of(" \n");
        if (b != std::string::npos) a.env_keys.push_back(cur.substr(b));
        cur.clear();
        if (*p == '\0') break;
      } else {
        cur += *p;
      }
    }
  }
  std::string format = flags.log_format;
  std::string where = "--log-format";
  if (format.empty()) {
    const char* env = std::getenv("AGENT_SANDBOX_LOG_FORMAT");
    format = env ? env : "text";
    where = "AGENT_SANDBOX_LOG_FORMAT";
  }
  if (format != "text" && format != "json") {
    return Fail(Error::InvalidArgument(where + ": must be text or json, got '" + format + "'"));
  }
  a.json_logs = format == "json";
  std::string days = flags.event_retention_days;
  where = "--event-retention-days";
  if (days.empty()) {
    const char* env = std::getenv("AGENT_SANDBOX_EVENT_RETENTION_DAYS");
    days = env ? env : "";
    where = "AGENT_SANDBOX_EVENT_RETENTION_DAYS";
  }
  if (!days.empty()) {
    auto n = api::ParseInteger(days, 0, 36500);
    if (!n) return Fail(Error::InvalidArgument(where + ": " + n.error().message()));
    a.retention_days = *n;
  }
  return a;
}

// AGENT_SANDBOX_MCP_ALLOWED_ORIGINS: comma-separated browser origins allowed to use /mcp
// besides loopback ones (mcp/http_transport.h).
std::vector<std::string> McpAllowedOrigins() {
  std::vector<std::string> out;
  const char* env = std::getenv("AGENT_SANDBOX_MCP_ALLOWED_ORIGINS");
  std::string cur;
  for (const char* p = env ? env : "";; ++p) {
    if (*p == ',' || *p == '\0') {
      size_t b = cur.find_first_not_of(' ');
      size_t e = cur.find_last_not_of(' ');
      if (b != std::string::npos) out.push_back(cur.substr(b, e - b + 1));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  return out;
}

int Serve(CLI::App& root, const ServeFlags& flags) {
  api::ServeConfig cfg;
  if (auto st = api::ApplyEnvironment(cfg, [](const char* n) { return std::getenv(n); }); !st) {
    return ConfigError(st.error().detail());
  }
  for (const api::Setting& s : api::Settings()) {
    auto it = flags.values.find(s.flag);
    if (s.flag.empty() || it == flags.values.end()) continue;
    if (auto st = api::ApplyFlag(cfg, s, it->second); !st) {
      return ConfigError(st.error().detail());
    }
  }
  if (flags.insecure_no_auth) cfg.insecure_no_auth = true;
  if (auto st = api::ValidateServeConfig(cfg); !st) return ConfigError(st.error().detail());
  // Seed A's VM_DNS_*, VM_DEST_*, VM_BW_* variables: the default egress policy (ADR 0013).
  {
    std::map<std::string, std::string> seed_env;
    for (const char* n : {"VM_DNS_MODE", "VM_DNS_DOMAINS", "VM_DEST_MODE", "VM_DEST_RULES",
                          "VM_BW_ENABLED", "VM_BW_RATE_KBIT", "VM_BW_BURST_KBIT"}) {
      if (const char* v = std::getenv(n)) seed_env[n] = v;
    }
    auto policy = isolation::net::PolicyFromSeedEnv(seed_env);
    if (!policy) return ConfigError(policy.error().detail());
    cfg.manager.default_network_policy = *policy;
    if (const char* up = std::getenv("VM_DNS_UPSTREAM"); up && cfg.dns_upstreams.empty()) {
      cfg.dns_upstreams = up;
    }
  }
  auto auth_settings = ReadAuthSettings(flags);
  if (!auth_settings) return ConfigError(auth_settings.error().detail());
  // Without a key from the environment, a key in an existing database is needed (the check
  // never creates the data directory: a configuration error leaves no trace).
  const char kNoKeys[] =
      "no API keys are configured: set AGENT_SANDBOX_API_KEYS, create one with `agent-sandbox "
      "keys create NAME --scopes admin`, or run with --insecure-no-auth (or "
      "AGENT_SANDBOX_INSECURE_NO_AUTH=true) to serve without authentication on a trusted network";
  bool need_db_key = !cfg.insecure_no_auth && auth_settings->env_keys.empty();
  if (need_db_key && !std::filesystem::exists(cfg.manager.DatabasePath())) {
    return ConfigError(kNoKeys);
  }
  if (auth_settings->json_logs) api::UseJsonLogFormat();
  // The root --log-level wins when given; otherwise serve logs at info (AGENT_SANDBOX_LOG_LEVEL).
  std::string level = cfg.log_level;
  if (CLI::Option* o = root.get_option_no_throw("--log-level"); o && o->count() > 0) {
    level = o->as<std::string>();
  }
  // main.cc has set up the logger already (at warn unless told otherwise); serve's default
  // is info, so that every request is logged.
  spdlog::set_level(spdlog::level::from_str(level));
  if (cfg.insecure_no_auth) {
    spdlog::warn(
        "serving WITHOUT authentication (--insecure-no-auth): anyone who can reach "
        "{}:{} controls every sandbox",
        cfg.host, cfg.port);
  }

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
  // Every file of ours at the top of the data dir is ours alone (core/data_dir.h): a looser
  // mode (a database made by an older version, a key copied in by hand) is tightened here,
  // before the database is opened.
  if (auto tightened = core::TightenDataDirModes(data)) {
    for (const core::TightenedMode& t : *tightened) {
      spdlog::warn("{} was mode {:04o}, readable by others; now {:04o}", t.path, t.old_mode,
                   t.new_mode);
    }
  } else {
    return StartupError(tightened.error().WithContext("data dir modes"));
  }
  auto store = store::Store::Open(cfg.manager.DatabasePath(), SystemClock::Instance().NowUnixMs());
  if (!store) return StartupError(store.error().WithContext("open database"));
  // Env values given on create are sealed at rest (store/secret_box.h); records written before
  // are sealed now. Without the key the server does not start: it would write them in plain.
  {
    auto box = store::SecretBox::LoadOrCreate(data + "/secrets.key");
    if (!box) return StartupError(box.error().WithContext("secrets key"));
    (*store)->SetSecretBox(std::make_shared<const store::SecretBox>(std::move(*box)));
    auto sealed = (*store)->SealPlainSecrets();
    if (!sealed) return StartupError(sealed.error().WithContext("seal env values at rest"));
    if (*sealed > 0) spdlog::info("sealed the env values of {} earlier records", *sealed);
  }
  if (need_db_key) {
    store::KeyStore keys(**store);
    auto usable = keys.CountUsable(SystemClock::Instance().NowUnixMs());
    if (!usable) return StartupError(usable.error().WithContext("count API keys"));
    if (*usable == 0) return ConfigError(kNoKeys);
  }
  core::DirTemplateCatalog templates(cfg.manager.TemplatesDir());
  isolation::ns::NsBackendOptions bo;
  bo.state_dir = data + "/sandboxes";
  if (cfg.workspace_pool == "xfs") {  // xfs_pool.h: workspace images on a reflink file system
    auto pool = isolation::ns::EnsureXfsPool(data + "/workspace-pool.xfs", data + "/xfs",
                                             static_cast<uint64_t>(cfg.workspace_pool_gb) << 30);
    if (!pool) return StartupError(pool.error().WithContext("workspace pool"));
    bo.state_dir = data + "/xfs/sandboxes";
  }
  bo.sandboxd_path = sandboxd;
  bo.allow_packet_sockets = cfg.allow_packet_sockets;
  bo.exec_spare = cfg.exec_spare;
  bo.cgroup_name = CgroupNameFor(std::filesystem::weakly_canonical(data, ec).string());
  bo.default_workspace_bytes = static_cast<uint64_t>(cfg.manager.limits.default_workspace_mb) << 20;
  if (cfg.network_enabled) {
    isolation::net::HostNetworkOptions no;
    no.state_dir = bo.state_dir;
    no.subnet = cfg.network_subnet;
    no.uplink = cfg.network_uplink;
    for (size_t start = 0; start < cfg.dns_upstreams.size();) {
      size_t end = cfg.dns_upstreams.find(',', start);
      if (end == std::string::npos) end = cfg.dns_upstreams.size();
      if (end > start) no.dns_upstreams.push_back(cfg.dns_upstreams.substr(start, end - start));
      start = end + 1;
    }
    auto net = isolation::net::HostNetwork::Make(no);
    if (!net && net.error().code() == ErrorCode::kInvalidArgument) {
      return ConfigError(net.error().detail());
    }
    if (net) {
      bo.network = *net;
    } else {
      spdlog::warn("networked sandboxes are unavailable: {}", net.error().detail());
    }
  }
  // One backend of this server by name, with its options.
  auto make_backend = [&](const std::string& name) -> Result<std::unique_ptr<isolation::Backend>> {
    if (name != "microvm") return isolation::ns::MakeNsBackend(bo);
    // A VM per sandbox (isolation/microvm/); its guest comes from scripts/microvm-guest.sh.
    isolation::microvm::MicrovmOptions mo =
        MicrovmOptionsFor(data, sandboxd, data + "/microvm-sandboxes", bo.cgroup_name + "-vm");
    mo.accel = cfg.microvm_accel;
    mo.network = bo.network;  // one HostNetwork for both (microvm_backend.h says why)
    // Tests shorten it to see a hung guest ended quickly.
    if (const char* h = std::getenv("AGENT_SANDBOX_MICROVM_HEARTBEAT_TIMEOUT_MS")) {
      mo.heartbeat_timeout_ms = std::atoll(h);
    }
    auto made = isolation::microvm::MakeMicrovmBackend(mo);
    if (made) spdlog::info("backend microvm: guest from {}", mo.guest_dir);
    return made;
  };
  // The default backend must run; the others run where this host can (GET /v1/backends says
  // why one cannot), so a guest built later needs only a restart, not another flag.
  isolation::BackendSet backends;
  {
    auto backend = make_backend(cfg.backend);
    if (!backend) return StartupError(backend.error().WithContext(cfg.backend + " backend"));
    // Decided now when every create needs it: the log says which, the first create waits not.
    if (cfg.backend == "microvm") (void)(*backend)->accelerator();
    backends.Add(std::move(*backend));
  }
  for (const std::string& name : cfg.extra_backends) {
    if (name == cfg.backend) continue;
    auto backend = make_backend(name);
    if (backend) {
      backends.Add(std::move(*backend));
    } else {
      spdlog::info("backend {} not available (a create that asks for it gets why): {}", name,
                   backend.error().ToString());
      backends.AddUnavailable(name, std::move(backend).error());
    }
  }
  isolation::Backend& default_backend = *backends.default_backend();
  // Sandboxes of `agent-sandbox run`s that were SIGKILLed with their watchers
  // (cli/run_leftovers.h); live runs' and our own sandboxes are not touched.
  RemoveDeadRunLeftovers(data, sandboxd);

  // Bind before recovering, so a second server on the same port fails without touching
  // sandboxes the first one owns.
  api::ApiContext ctx;
  ctx.stream_keepalive_ms = cfg.stream_keepalive_seconds * 1000;
  ctx.proxy_budget = api::BufferBudget::Create(static_cast<uint64_t>(cfg.proxy_buffer_mb) << 20);
  ctx.proxy_timeout_ms = cfg.proxy_timeout_seconds * 1000;
  // localhost and its subdomains resolve to this machine in browsers (RFC 6761).
  ctx.preview.domain = !cfg.preview_domain.empty() ? cfg.preview_domain
                       : cfg.port != 0             ? "localhost:" + std::to_string(cfg.port)
                                                   : "localhost";
  ctx.preview.scheme = cfg.preview_scheme;
  ctx.e2b_internet_default = cfg.e2b_internet_default;
  ctx.preview.max_ttl_seconds = cfg.preview_max_ttl_seconds;
  // E2B's envd access tokens (api/e2b_token.h): without the secret only E2B's sandbox traffic
  // is off, so a bad file is a warning, not a failed start.
  if (auto secret = api::LoadOrCreateE2bSecret(data + "/e2b-token.key")) {
    ctx.e2b_secret = std::move(*secret);
  } else {
    spdlog::warn("E2B sandbox traffic disabled: {}", secret.error().ToString());
  }
  {
    std::error_code exe_ec;
    std::string exe = std::filesystem::read_symlink("/proc/self/exe", exe_ec).string();
    std::string dir = api::FindConsoleDir(cfg.console_dir, exe);
    auto console = std::make_shared<api::ConsoleAssets>(api::LoadConsoleAssets(dir));
    if (console->problem.empty()) {
      spdlog::info("web console: {} files from {}, at /console", console->files.size(), dir);
    } else {
      spdlog::warn("web console not served (503): {}", console->problem);
    }
    ctx.console = std::move(console);
  }
  core::SandboxManager manager(cfg.manager, **store, backends, SystemClock::Instance(), templates);
  ctx.manager = &manager;
  ctx.store = store->get();
  ctx.backend_name = std::string(default_backend.name());
  // Idempotency keys (api/idempotency.h): past the 24 h window, or claimed by a create this
  // server did not finish before it stopped (that create is gone; a retry runs it again).
  if (auto n = store::IdempotencyStore(**store).Prune(SystemClock::Instance().NowUnixMs(),
                                                      store::kIdempotencyRetentionMs, true);
      !n) {
    spdlog::warn("prune idempotency keys: {}", n.error().detail());
  }
  api::AuthOptions ao;
  ao.insecure_no_auth = cfg.insecure_no_auth;
  ao.env_keys = std::move(auth_settings->env_keys);
  ao.event_retention_days = auth_settings->retention_days;
  ao.max_concurrent_requests_per_key = cfg.max_requests_per_key;
  ao.backend_name = std::string(default_backend.name());
  ao.data_dir = data;
  api::AuthLayer auth(std::move(ao), **store, manager, SystemClock::Instance());
  api::Router routes = api::BuildRouter(ctx);
  auth.AddRoutes(routes);
  // MCP over Streamable HTTP at /mcp (ADR 0010), behind the same auth layer.
  mcp::McpHttpOptions mo;
  mo.allowed_origins = McpAllowedOrigins();
  mo.keepalive_ms = ctx.stream_keepalive_ms;
  mcp::McpHttpEndpoint mcp_http(manager, &auth, std::move(mo));
  mcp_http.AddRoutes(routes);
  // Seed A's routes answer errors in seed A's shape, the auth layer's included.
  api::Router router = api::WithSeedAErrorShape(auth.Wrap(routes));
  api::ServerOptions so;
  so.host = cfg.host;
  so.port = cfg.port;
  so.max_file_body_bytes = cfg.manager.limits.max_file_bytes + 64 * 1024;
  so.body_budget = api::BufferBudget::Create(static_cast<uint64_t>(cfg.body_buffer_mb) << 20);
  so.shutdown_grace_s = static_cast<int>(cfg.shutdown_grace_seconds);
  so.max_connections = static_cast<size_t>(cfg.max_connections);
  so.max_connections_per_ip = static_cast<size_t>(cfg.max_connections_per_ip);
  so.reserved_connections = static_cast<size_t>(cfg.reserved_connections);
  so.head_timeout_s = static_cast<int>(cfg.request_head_timeout_seconds);
  api::HttpServer server(so, router);
  if (auto st = server.Listen(); !st) return StartupError(st.error());
  if (auto st = manager.Start(); !st) return StartupError(st.error().WithContext("recover"));
  auth.StartRetention();
  spdlog::info(
      "agent-sandbox {} serving on http://{}:{} (data dir {}, backend {}, max {} "
      "sandboxes)",
      ASB_VERSION, cfg.host, server.port(), data, default_backend.name(),
      cfg.manager.limits.max_sandboxes);
  spdlog::info("preview URLs: {}://<port>-<sandbox>.{}/", ctx.preview.scheme, ctx.preview.domain);
  bool clean = server.Run();
  auth.Stop();
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
  sub->add_option("--log-format", flags->log_format,
                  "Log lines as text or json (env AGENT_SANDBOX_LOG_FORMAT)");
  sub->add_option("--event-retention-days", flags->event_retention_days,
                  "Days the audit trail is kept, 0 = for ever (default 30; env "
                  "AGENT_SANDBOX_EVENT_RETENTION_DAYS)");
  CLI::App* root = &app;
  SetAction(sub, [root, flags] { return Serve(*root, *flags); });
}

}  // namespace asb::cli
