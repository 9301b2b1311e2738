#include "api/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "api/preview.h"

namespace asb::api {

namespace {

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

constexpr int64_t kBig = std::numeric_limits<int64_t>::max() / 4;
// Lifetimes in seconds: a hundred years at most, so that now + seconds * 1000 (milliseconds)
// can never overflow (a breaker's --paused-timeout-seconds of 2^61 expired a sandbox at once).
constexpr int64_t kMaxLifetimeSeconds = 100LL * 365 * 24 * 3600;

using Apply = std::function<Status(ServeConfig&, std::string_view)>;

Apply Int(int64_t min, int64_t max, std::function<void(ServeConfig&, int64_t)> set) {
  return [=](ServeConfig& c, std::string_view v) -> Status {
    ASB_ASSIGN_OR_RETURN(int64_t n, ParseInteger(v, min, max));
    set(c, n);
    return {};
  };
}

Apply Dec(double min, double max, std::function<void(ServeConfig&, double)> set) {
  return [=](ServeConfig& c, std::string_view v) -> Status {
    ASB_ASSIGN_OR_RETURN(double d, ParseDecimal(v, min, max));
    set(c, d);
    return {};
  };
}

Apply Bool(std::function<void(ServeConfig&, bool)> set) {
  return [=](ServeConfig& c, std::string_view v) -> Status {
    ASB_ASSIGN_OR_RETURN(bool b, ParseBool(v));
    set(c, b);
    return {};
  };
}

std::vector<Setting> MakeSettings() {
  std::vector<Setting> s;
  auto add = [&](std::string env, std::string flag, std::string help, Apply apply) {
    s.push_back(Setting{"AGENT_SANDBOX_" + env, flag, std::move(help), std::move(apply)});
  };
  add("HOST", "host", "address to listen on (default 127.0.0.1)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v.empty()) return Fail(Error::InvalidArgument("must not be empty"));
        c.host = std::string(v);
        return {};
      });
  add("PORT", "port", "TCP port to listen on (default 8080; 0 = any free port)",
      Int(0, 65535, [](ServeConfig& c, int64_t n) { c.port = static_cast<uint16_t>(n); }));
  add("DATA_DIR", "data-dir", "data directory (default /var/lib/agent-sandbox)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v.empty() || v[0] != '/')
          return Fail(Error::InvalidArgument("must be an absolute path"));
        c.manager.data_dir = std::string(v);
        return {};
      });
  add("MAX_SANDBOXES", "max-sandboxes", "sandboxes at once",
      Int(1, 100000, [](ServeConfig& c, int64_t n) { c.manager.limits.max_sandboxes = n; }));
  add("MAX_FORK_COUNT", "max-fork-count", "children one fork of a running sandbox may ask for",
      Int(1, 100000, [](ServeConfig& c, int64_t n) { c.manager.limits.max_fork_count = n; }));
  add("DEFAULT_TIMEOUT_SECONDS", "default-timeout-seconds", "default sandbox TTL",
      Int(1, kMaxLifetimeSeconds,
          [](ServeConfig& c, int64_t n) { c.manager.limits.default_timeout_seconds = n; }));
  add("MAX_TIMEOUT_SECONDS", "max-timeout-seconds", "longest sandbox TTL",
      Int(1, kMaxLifetimeSeconds,
          [](ServeConfig& c, int64_t n) { c.manager.limits.max_timeout_seconds = n; }));
  add("PAUSED_TIMEOUT_SECONDS", "paused-timeout-seconds",
      "how long a paused sandbox is kept before it is destroyed (default 86400)",
      Int(1, kMaxLifetimeSeconds,
          [](ServeConfig& c, int64_t n) { c.manager.limits.paused_timeout_seconds = n; }));
  add("WARM_POOLS", "warm-pools",
      "ready sandboxes kept per template: base=2,python=1,base+network=1 (docs/adr/0027)",
      [](ServeConfig& c, std::string_view v) -> Status {
        c.manager.warm_pools.clear();
        std::string_view rest = v;
        while (!rest.empty()) {
          const size_t comma = rest.find(',');
          std::string_view item = rest.substr(0, comma);
          rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
          if (item.empty()) continue;
          const size_t eq = item.find('=');
          core::ManagerConfig::WarmPoolTarget t;
          std::string_view name = item.substr(0, eq);
          constexpr std::string_view kNet = "+network";
          if (name.size() > kNet.size() && name.substr(name.size() - kNet.size()) == kNet) {
            t.network = true;
            name.remove_suffix(kNet.size());
          }
          t.template_name = std::string(name);
          char* end = nullptr;
          const std::string n(eq == std::string_view::npos ? "" : item.substr(eq + 1));
          t.size = std::strtoll(n.c_str(), &end, 10);
          if (eq == std::string_view::npos || name.empty() || n.empty() || *end != '\0' ||
              t.size < 0) {
            return Fail(Error::InvalidArgument("\"" + std::string(item) +
                                               "\": want template=size or template+network=size"));
          }
          c.manager.warm_pools.push_back(std::move(t));
        }
        return {};
      });
  add("WARM_POOL_REFILL_PER_SECOND", "warm-pool-refill-per-second",
      "pooled sandboxes made per second at most while refilling (default 4)",
      Int(1, 1000, [](ServeConfig& c, int64_t n) { c.manager.warm_pool_refill_per_second = n; }));
  add("METRICS_INTERVAL_SECONDS", "metrics-interval-seconds",
      "how often each running sandbox's use is sampled for its metrics history (default 5)",
      Int(1, 3600, [](ServeConfig& c, int64_t n) { c.manager.metrics_interval_seconds = n; }));
  add("DEFAULT_CPUS", "default-cpus", "default CPU cores per sandbox",
      Dec(0.01, 1024, [](ServeConfig& c, double d) { c.manager.limits.default_cpus = d; }));
  add("MAX_CPUS", "max-cpus", "most CPU cores per sandbox (default: the host's CPUs)",
      Dec(0.01, 1024, [](ServeConfig& c, double d) { c.manager.limits.max_cpus = d; }));
  add("DEFAULT_MEMORY_MB", "default-memory-mb", "default memory limit, MiB",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.default_memory_mb = n; }));
  add("MAX_MEMORY_MB", "max-memory-mb", "largest memory limit, MiB",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.max_memory_mb = n; }));
  add("DEFAULT_PIDS_LIMIT", "default-pids-limit", "default process limit",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.default_pids_limit = n; }));
  add("MAX_PIDS_LIMIT", "max-pids-limit", "largest process limit",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.max_pids_limit = n; }));
  add("DEFAULT_WORKSPACE_MB", "default-workspace-mb", "default /workspace quota, MiB",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.default_workspace_mb = n; }));
  add("MAX_WORKSPACE_MB", "max-workspace-mb", "largest /workspace quota, MiB",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.max_workspace_mb = n; }));
  add("TMP_SIZE_MB", "tmp-size-mb", "size of each sandbox's /tmp, MiB",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.limits.tmp_size_mb = n; }));
  add("DEFAULT_EXEC_TIMEOUT_SECONDS", "default-exec-timeout-seconds", "default command timeout",
      Int(1, kMaxLifetimeSeconds,
          [](ServeConfig& c, int64_t n) { c.manager.limits.default_exec_timeout_seconds = n; }));
  add("MAX_EXEC_TIMEOUT_SECONDS", "max-exec-timeout-seconds", "longest command timeout",
      Int(1, kMaxLifetimeSeconds,
          [](ServeConfig& c, int64_t n) { c.manager.limits.max_exec_timeout_seconds = n; }));
  add("MAX_EXEC_OUTPUT_BYTES", "max-exec-output-bytes", "most output kept per command, bytes",
      Int(1, kBig, [](ServeConfig& c, int64_t n) {
        c.manager.limits.max_exec_output_bytes = static_cast<uint64_t>(n);
      }));
  add("MAX_FILE_BYTES", "max-file-bytes", "largest file upload or download, bytes",
      Int(1, kBig, [](ServeConfig& c, int64_t n) {
        c.manager.limits.max_file_bytes = static_cast<uint64_t>(n);
      }));
  add("MAX_SNAPSHOT_BYTES", "max-snapshot-bytes", "content of one snapshot, bytes (413 past it)",
      Int(1, kBig, [](ServeConfig& c, int64_t n) {
        c.manager.snapshots.max_snapshot_bytes = static_cast<uint64_t>(n);
      }));
  add("MAX_SNAPSHOTS_PER_SANDBOX", "max-snapshots-per-sandbox", "snapshots per sandbox (429)",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.snapshots.max_per_sandbox = n; }));
  add("MAX_SNAPSHOTS_PER_OWNER", "max-snapshots-per-owner", "snapshots per owner (429)",
      Int(1, kBig, [](ServeConfig& c, int64_t n) { c.manager.snapshots.max_per_owner = n; }));
  add("MAX_SNAPSHOT_TOTAL_BYTES", "max-snapshot-total-bytes",
      "stored snapshot bytes per owner (413 past it)", Int(1, kBig, [](ServeConfig& c, int64_t n) {
        c.manager.snapshots.max_total_bytes_per_owner = static_cast<uint64_t>(n);
      }));
  add("BACKEND", "backend",
      "isolation of a sandbox whose create names none: ns (Linux namespaces, the default) or "
      "microvm (a QEMU microVM with a kernel of its own; its guest comes from "
      "scripts/microvm-guest.sh; no snapshots of memory or pause to disk yet)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v != "ns" && v != "microvm")
          return Fail(Error::InvalidArgument("must be ns or microvm"));
        c.backend = std::string(v);
        return {};
      });
  add("BACKENDS", "backends",
      "comma list of the backends a create may name beside --backend (ns, microvm), each run "
      "where this host can; none: only --backend. GET /v1/backends says why one cannot run",
      [](ServeConfig& c, std::string_view v) -> Status {
        std::vector<std::string> names;
        for (size_t start = 0; start <= v.size();) {
          size_t end = std::min(v.find(',', start), v.size());
          std::string_view name = v.substr(start, end - start);
          if (!name.empty() && name != "none") {
            if (name != "ns" && name != "microvm") {
              return Fail(Error::InvalidArgument("must name ns or microvm, or be none"));
            }
            names.emplace_back(name);
          }
          start = end + 1;
        }
        c.extra_backends = std::move(names);
        return {};
      });
  add("MICROVM_ACCEL", "microvm-accel",
      "the microvm backend's accelerator: auto (KVM if a test boot proves it works, else TCG), "
      "kvm or tcg",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v != "auto" && v != "kvm" && v != "tcg") {
          return Fail(Error::InvalidArgument("must be auto, kvm or tcg"));
        }
        c.microvm_accel = std::string(v);
        return {};
      });
  add("WORKSPACE_POOL", "workspace-pool",
      "where workspace images live: none (the data dir) or xfs (a reflink XFS loop file the "
      "server makes in the data dir, so snapshot, fork and rollback clone in O(1))",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v != "none" && v != "xfs") return Fail(Error::InvalidArgument("must be none or xfs"));
        c.workspace_pool = std::string(v);
        return {};
      });
  add("WORKSPACE_POOL_GB", "workspace-pool-gb",
      "size of the xfs pool's sparse file, GiB (the most all workspaces and snapshot images hold)",
      Int(1, 1 << 20, [](ServeConfig& c, int64_t n) { c.workspace_pool_gb = n; }));
  add("REAP_INTERVAL_SECONDS", "reap-interval-seconds", "how often expired sandboxes are reaped",
      Int(1, 86400, [](ServeConfig& c, int64_t n) { c.manager.reap_interval_seconds = n; }));
  add("DEFAULT_TEMPLATE", "default-template", "template used when a create names none",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v.empty()) return Fail(Error::InvalidArgument("must not be empty"));
        c.manager.default_template = std::string(v);
        return {};
      });
  add("SANDBOXD", "sandboxd", "path of the sandboxd binary (default: beside agent-sandbox)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v.empty() || v[0] != '/')
          return Fail(Error::InvalidArgument("must be an absolute path"));
        c.sandboxd_path = std::string(v);
        return {};
      });
  add("ALLOW_PACKET_SOCKETS", "allow-packet-sockets",
      "true: commands may open AF_PACKET sockets (raw capture in the sandbox's own network; "
      "off, socket(AF_PACKET) fails with EAFNOSUPPORT)",
      Bool([](ServeConfig& c, bool b) { c.allow_packet_sockets = b; }));
  add("EXEC_SPARE", "exec-spare",
      "true (default): each sandbox keeps one child already in its cgroups for the next command "
      "(on cgroup v1 a command's own move waits ~10 ms after a quiet moment); false: none",
      Bool([](ServeConfig& c, bool b) { c.exec_spare = b; }));
  add("INSECURE_NO_AUTH", "", "true: serve without API keys",
      Bool([](ServeConfig& c, bool b) { c.insecure_no_auth = b; }));
  add("LOG_LEVEL", "", "trace, debug, info, warn, error",
      [](ServeConfig& c, std::string_view v) -> Status {
        static const char* kLevels[] = {"trace", "debug",    "info", "warn",
                                        "error", "critical", "off"};
        for (const char* l : kLevels) {
          if (v == l) {
            c.log_level = std::string(v);
            return {};
          }
        }
        return Fail(Error::InvalidArgument("must be one of trace, debug, info, warn, error, off"));
      });
  add("NETWORK", "", "false: refuse network: true (no bridge, no nftables)",
      Bool([](ServeConfig& c, bool b) { c.network_enabled = b; }));
  add("E2B_INTERNET_DEFAULT", "e2b-internet-default",
      "false: E2B creates that do not set allowInternetAccess get no outbound network",
      Bool([](ServeConfig& c, bool b) { c.e2b_internet_default = b; }));
  add("NETWORK_SUBNET", "network-subnet", "IPv4 range of networked sandboxes (10.213.0.0/16)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v.empty()) return Fail(Error::InvalidArgument("must not be empty"));
        c.network_subnet = std::string(v);
        return {};
      });
  add("NETWORK_UPLINK", "network-uplink", "interface sandbox traffic leaves by (default route's)",
      [](ServeConfig& c, std::string_view v) -> Status {
        c.network_uplink = std::string(v);
        return {};
      });
  add("DNS_UPSTREAM", "dns-upstream", "upstream resolvers, a.b.c.d[:port],... (the host's)",
      [](ServeConfig& c, std::string_view v) -> Status {
        c.dns_upstreams = std::string(v);
        return {};
      });
  add("SHUTDOWN_GRACE_SECONDS", "shutdown-grace-seconds", "wait for in-flight requests at stop",
      Int(0, 3600, [](ServeConfig& c, int64_t n) { c.shutdown_grace_seconds = n; }));
  add("STREAM_KEEPALIVE_SECONDS", "stream-keepalive-seconds", "quiet time before a keepalive",
      Int(1, 3600, [](ServeConfig& c, int64_t n) { c.stream_keepalive_seconds = n; }));
  add("MAX_REQUESTS_PER_KEY", "max-requests-per-key",
      "blocking requests one API key may have in progress at once, 0 = no limit",
      Int(0, 100000, [](ServeConfig& c, int64_t n) { c.max_requests_per_key = n; }));
  add("MAX_CONNECTIONS", "max-connections",
      "open client connections at most (503 past it), 0 = no limit",
      Int(0, 1 << 20, [](ServeConfig& c, int64_t n) { c.max_connections = n; }));
  add("MAX_CONNECTIONS_PER_IP", "max-connections-per-ip",
      "open connections from one client address, loopback included (503 past it), 0 = no limit",
      Int(0, 1 << 20, [](ServeConfig& c, int64_t n) { c.max_connections_per_ip = n; }));
  add("RESERVED_CONNECTIONS", "reserved-connections",
      "of max-connections, places only clients with a valid API key keep (below it)",
      Int(0, 1 << 20, [](ServeConfig& c, int64_t n) { c.reserved_connections = n; }));
  add("REQUEST_HEAD_TIMEOUT_SECONDS", "request-head-timeout-seconds",
      "time a request line and headers may take in all (the connection is closed past it)",
      Int(1, 3600, [](ServeConfig& c, int64_t n) { c.request_head_timeout_seconds = n; }));
  add("PROXY_TIMEOUT_SECONDS", "proxy-timeout-seconds",
      "longest exchange through the ports proxy, whole (default 300; 60 s per read on top)",
      Int(1, 86400, [](ServeConfig& c, int64_t n) { c.proxy_timeout_seconds = n; }));
  add("PROXY_BUFFER_MB", "proxy-buffer-mb",
      "relay buffers of all ports-proxy exchanges, MiB (default 64: 341 at once; then 503)",
      Int(1, 1 << 20, [](ServeConfig& c, int64_t n) { c.proxy_buffer_mb = n; }));
  add("BODY_BUFFER_MB", "body-buffer-mb",
      "request bodies held in memory at once, all connections together, MiB (default 512; a "
      "body past it: 503 with Retry-After)",
      Int(1, 1 << 20, [](ServeConfig& c, int64_t n) { c.body_buffer_mb = n; }));
  add("PREVIEW_DOMAIN", "preview-domain",
      "domain of preview hosts <port>-<sandbox>.DOMAIN[:port] (default localhost:<port>)",
      [](ServeConfig& c, std::string_view v) -> Status {
        ASB_TRY(ValidatePreviewDomain(v));
        c.preview_domain = std::string(v);
        return {};
      });
  add("CONSOLE_DIR", "console-dir",
      "the web console's built files (default: console/ beside the binary, then "
      "../share/agent-sandbox/console, then /usr/share/agent-sandbox/console)",
      [](ServeConfig& c, std::string_view v) -> Status {
        c.console_dir = std::string(v);
        return {};
      });
  add("PREVIEW_SCHEME", "preview-scheme",
      "scheme of preview URLs: http, or https behind a TLS proxy (Secure cookie)",
      [](ServeConfig& c, std::string_view v) -> Status {
        if (v != "http" && v != "https")
          return Fail(Error::InvalidArgument("must be http or https"));
        c.preview_scheme = std::string(v);
        return {};
      });
  add("PREVIEW_MAX_TTL_SECONDS", "preview-max-ttl-seconds",
      "longest ttl_seconds of a preview token (default 86400; a request's default is 3600)",
      Int(1, 365 * 86400, [](ServeConfig& c, int64_t n) { c.preview_max_ttl_seconds = n; }));
  return s;
}

}  // namespace

const std::vector<Setting>& Settings() {
  static const std::vector<Setting> settings = MakeSettings();
  return settings;
}

Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max) {
  std::string s(text);
  std::string range = "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                      "], got " + Quote(text);
  if (s.empty() || s.find_first_not_of("+-0123456789") != std::string::npos) {
    return Fail(Error::InvalidArgument(range));
  }
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < min || v > max) {
    return Fail(Error::InvalidArgument(range));
  }
  return static_cast<int64_t>(v);
}

Result<double> ParseDecimal(std::string_view text, double min, double max) {
  std::string s(text);
  char buf[64];
  snprintf(buf, sizeof(buf), "must be a number in [%g, %g], got ", min, max);
  std::string why = buf + Quote(text);
  if (s.empty() || s.find_first_not_of("+-0123456789.eE") != std::string::npos) {
    return Fail(Error::InvalidArgument(why));
  }
  errno = 0;
  char* end = nullptr;
  double v = strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    return Fail(Error::InvalidArgument(why));
  }
  return v;
}

Result<bool> ParseBool(std::string_view text) {
  if (text == "true" || text == "1" || text == "yes") return true;
  if (text == "false" || text == "0" || text == "no" || text.empty()) return false;
  return Fail(Error::InvalidArgument("must be true or false, got " + Quote(text)));
}

Status ApplyEnvironment(ServeConfig& cfg, const std::function<const char*(const char*)>& getenv) {
  for (const Setting& s : Settings()) {
    const char* v = getenv(s.env.c_str());
    if (v == nullptr) continue;
    ASB_TRY_CTX(s.apply(cfg, v), s.env);
  }
  return {};
}

Status ApplyFlag(ServeConfig& cfg, const Setting& setting, std::string_view value) {
  ASB_TRY_CTX(setting.apply(cfg, value), "--" + setting.flag);
  return {};
}

Status ValidateServeConfig(const ServeConfig& cfg) {
  ASB_TRY(cfg.manager.Validate());
  if (cfg.max_connections > 0 && cfg.reserved_connections >= cfg.max_connections) {
    return Fail(Error::InvalidArgument(
        "reserved-connections (" + std::to_string(cfg.reserved_connections) +
        ") must be below max-connections (" + std::to_string(cfg.max_connections) + ")"));
  }
  return {};
}

}  // namespace asb::api
