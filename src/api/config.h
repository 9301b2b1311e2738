// Configuration of `agent-sandbox serve` (ADR 0007): the manager's limits
// (core/config.h) plus the listener, from flags and the AGENT_SANDBOX_* environment names of
// seed B. Precedence: built-in defaults < environment < flags. Every value is parsed strictly
// (the whole text must be a number in range); a bad one is an error that `serve` prints as
// "configuration error: AGENT_SANDBOX_PORT: must be an integer in [1, 65535], got 'x'" before
// exiting with status 2.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/config.h"

namespace asb::api {

struct ServeConfig {
  core::ManagerConfig manager;
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  /// Serve without API keys (until the auth issue lands this is the only way to run).
  bool insecure_no_auth = false;
  /// Path of the sandboxd binary; "" = "sandboxd" beside /proc/self/exe.
  std::string sandboxd_path;
  bool allow_packet_sockets = false;  // commands may open AF_PACKET sockets (ADR 0014)
  bool exec_spare = true;             // sandboxd/spare_child.h (ns backend)
  std::string log_level = "info";
  /// Longest wait for in-flight requests at shutdown, seconds.
  int64_t shutdown_grace_seconds = 30;
  /// Quiet time before a stream keepalive, seconds.
  int64_t stream_keepalive_seconds = 10;
  /// Blocking requests (sync exec, files, create...) one non-admin key may have in progress at
  /// once; one more is 429 (api/auth.h, AuthOptions::max_concurrent_requests_per_key).
  /// 0 = no limit.
  int64_t max_requests_per_key = 128;
  /// The HTTP server's connection limits (api/server.h, ServerOptions; ADR 0014): open client
  /// connections in all, from one client address (loopback included), and the part of the
  /// total kept for clients that present a valid key; and the time a request head may take.
  int64_t max_connections = 8192;
  int64_t max_connections_per_ip = 256;
  int64_t reserved_connections = 512;
  int64_t request_head_timeout_seconds = 10;
  /// The ports proxy (api/port_proxy.h): the longest one proxied exchange may take, seconds
  /// (cut then: 504 before the answer's head, a truncated body after it), and the relay buffer
  /// memory of all exchanges together, MiB (192 KiB each; one more waits 1 s, then 503).
  int64_t proxy_timeout_seconds = 300;
  int64_t proxy_buffer_mb = 64;
  /// Request bodies held in memory at once, all connections together, MiB
  /// (api::ServerOptions::body_budget): a body is leased before it is read; past this, 503.
  int64_t body_buffer_mb = 512;
  /// Preview URLs of exposed ports (api/preview.h, ADR 0015): the domain their hosts sit
  /// under ("" = "localhost:<port>", which browsers resolve to this machine), the scheme
  /// clients reach it by, and the longest ttl_seconds a preview token may have.
  std::string preview_domain;
  std::string preview_scheme = "http";
  int64_t preview_max_ttl_seconds = 24 * 3600;
  /// "none": workspace images live in <data>/sandboxes; "xfs": in an XFS (reflink=1) file system
  /// on the sparse loop file <data>/workspace-pool.xfs (made on first use), mounted at
  /// <data>/xfs, so image clones share extents even on an ext4 host.
  std::string workspace_pool = "none";
  /// The isolation backend of a sandbox whose create names none: "ns" or "microvm"
  /// (isolation/microvm/). The server must be able to run it.
  std::string backend = "ns";
  /// The others it runs beside it where this host can ("ns", "microvm"; a create's `backend`
  /// picks one). One it cannot run (no guest kernel, no QEMU) is listed by GET /v1/backends
  /// with the reason; the server starts all the same.
  std::vector<std::string> extra_backends = {"ns", "microvm"};
  /// The microvm backend's accelerator: "auto", "kvm" or "tcg".
  std::string microvm_accel = "auto";
  /// Size of that sparse file, GiB.
  int64_t workspace_pool_gb = 256;
  /// Networked sandboxes (ADR 0013, isolation/net/host_network.h): on/off, their IPv4 range,
  /// the uplink ("" = the default route's interface), upstream resolvers ("" = the host's).
  bool network_enabled = true;
  std::string network_subnet = "10.213.0.0/16";
  std::string network_uplink;
  std::string dns_upstreams;  // comma list "a.b.c.d[:port]"
  /// Whether an E2B create that does not say allowInternetAccess gets outbound network (E2B's
  /// default is on; docs/e2b.md). Only where networking is on.
  bool e2b_internet_default = true;
  /// The web console's built files (api/console.h); "" = beside the binary (console/), then
  /// ../share/agent-sandbox/console, then /usr/share/agent-sandbox/console.
  std::string console_dir;
};

/// One configurable setting: its environment name ("AGENT_SANDBOX_PORT"), its flag name
/// ("port"; "" when the setting has a dedicated flag of another shape, such as
/// --insecure-no-auth), a help line, and how to apply a textual value.
struct Setting {
  std::string env;
  std::string flag;
  std::string help;
  std::function<Status(ServeConfig&, std::string_view)> apply;
};

/// Every setting `serve` understands, in help order.
const std::vector<Setting>& Settings();

/// Applies every AGENT_SANDBOX_* variable that `getenv` returns non-null for. Errors:
/// kInvalidArgument "<ENV_NAME>: <why>".
Status ApplyEnvironment(ServeConfig& cfg, const std::function<const char*(const char*)>& getenv);

/// Applies the value of one setting named by its flag; errors name the flag ("--port: ...").
Status ApplyFlag(ServeConfig& cfg, const Setting& setting, std::string_view value);

/// Checks the result as a whole (core's ManagerConfig::Validate and the listener).
Status ValidateServeConfig(const ServeConfig& cfg);

/// Parsers used by the settings, exposed for tests. Errors: kInvalidArgument with the reason.
Result<int64_t> ParseInteger(std::string_view text, int64_t min, int64_t max);
Result<double> ParseDecimal(std::string_view text, double min, double max);
Result<bool> ParseBool(std::string_view text);

}  // namespace asb::api
