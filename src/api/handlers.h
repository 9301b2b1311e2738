// The REST handlers, one file per resource (ADR 0007): sandboxes
// (handlers_sandboxes.cc), exec (handlers_exec.cc), files (handlers_files.cc) and health
// (handlers_health.cc). Each Add*Routes() puts its routes into the one routing table;
// BuildRouter() (routes.cc) calls them all. Handlers are plain functions of HttpRequest, so unit
// tests can drive them without sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "api/http_types.h"
#include "api/port_proxy.h"
#include "api/preview.h"
#include "api/router.h"
#include "common/result.h"

namespace asb::core {
class NetworkService;
class SandboxManager;
struct SandboxInfo;
}  // namespace asb::core
namespace asb::store {
class Store;
}  // namespace asb::store

namespace asb::api {

class BufferBudget;
struct ConsoleAssets;

/// What the handlers share. The manager must outlive the router.
struct ApiContext {
  core::SandboxManager* manager = nullptr;
  /// The database, for Idempotency-Key of create (store/idempotency.h); nullptr: a create
  /// with the header answers 503 unavailable (tests that build routes without a database).
  store::Store* store = nullptr;
  /// Quiet time after which a stream sends {"type":"keepalive"}, milliseconds.
  int64_t stream_keepalive_ms = 10'000;
  /// Largest JSON body accepted (the server enforces it too), bytes.
  uint64_t max_json_body_bytes = 1 << 20;
  /// The ports proxy (handlers_ports.cc): the server's one account of its relay buffers
  /// (nullptr: unaccounted), and the longest a proxied exchange may take, milliseconds.
  std::shared_ptr<BufferBudget> proxy_budget;
  int64_t proxy_timeout_ms = 300'000;
  /// The isolation backend's short name (isolation::Backend::name(): "ns"), for /healthz.
  std::string backend_name = "ns";
  /// Preview URLs of exposed ports (handlers_previews.cc; their tokens live in `store`).
  PreviewOptions preview;
  /// The web console's files (api/console.h), loaded at start; nullptr or empty: the console
  /// routes answer 503 (not built).
  std::shared_ptr<const ConsoleAssets> console;
  /// The secret of E2B's envd access tokens (api/e2b_token.h); "" = E2B's sandbox traffic
  /// answers 503 (the control plane works without it).
  std::string e2b_secret;
  /// An E2B create that does not set allow_internet_access gets network where the backend
  /// offers it (ServeConfig::e2b_internet_default).
  bool e2b_internet_default = true;
};

/// Adapts a handler that returns Result<HttpResponse>: errors leave through ErrorResponse().
Handler Wrap(std::function<Result<HttpResponse>(HttpRequest&)> fn);

/// The owner a request acts for: req.owner as the auth layer (api/auth.h) set it — a key's
/// lineage for non-admin keys, core::kAnyOwner for admin keys and --insecure-no-auth.
std::string OwnerOf(const HttpRequest& req);

/// A sandbox as every route shows it (id, status, template, limits, env_keys — names only,
/// values may be secrets — RFC 3339 times, source_snapshot_id), as a JSON response with
/// `status` and the sandbox id attached for the request log.
HttpResponse SandboxResponse(int status, const core::SandboxInfo& s);

/// The {id} path parameter if it is a well-formed sandbox id; kNotFound otherwise (an id such
/// as "../x" never reaches the manager).
Result<std::string> SandboxIdParam(const HttpRequest& req);

void AddHealthRoutes(Router& router, ApiContext& ctx);

/// The 200 answer of /healthz and its alias /health (seed B's Health shape):
/// {"status": "ok", "version": ASB_VERSION, "backend": `backend`, e.g. "ns"}.
HttpResponse HealthResponse(std::string_view backend);
void AddSandboxRoutes(Router& router, ApiContext& ctx);
/// /v1/sandboxes/{id}/contexts[...] and /v1/sandboxes/{id}/code[/stream], the code interpreter
/// (handlers_code.cc, ADR 0019).
void AddCodeRoutes(Router& router, ApiContext& ctx);
/// GET/PUT /v1/sandboxes/{id}/network (handlers_network.cc, ADR 0013).
void AddNetworkRoutes(Router& router, ApiContext& ctx);
/// GET /v1/pools, PUT /v1/pools/{template}: warm pools (handlers_pools.cc, ADR 0027).
void AddPoolRoutes(Router& router, ApiContext& ctx);
/// /v1/sandboxes/{id}/ports/{port}/... reverse proxy (handlers_ports.cc, ADR 0013).
void AddPortRoutes(Router& router, ApiContext& ctx);
/// The answer that proxies `req` to 127.0.0.1:`port` of sandbox `id`, acting for `owner` (the
/// ports proxy and the preview hosts; api/port_proxy.h): leases the exchange's buffers (a
/// full budget is a 503 answer), connects, and hands the exchange to the server as `upstream`
/// says. Errors: NetworkService::ConnectPort's.
Result<HttpResponse> ProxyToPort(core::NetworkService& m, const std::string& owner,
                                 const std::string& id, int64_t port, const HttpRequest& req,
                                 const UpstreamRequest& upstream, const PortProxyOptions& options);
/// /v1/sandboxes/{id}/previews and the preview hosts (handlers_previews.cc; ADR 0015).
void AddPreviewRoutes(Router& router, ApiContext& ctx);
void AddExecRoutes(Router& router, ApiContext& ctx);
void AddFileRoutes(Router& router, ApiContext& ctx);
/// Snapshots, rollback, fork and archives (handlers_snapshots.cc; ADR 0008).
void AddSnapshotRoutes(Router& router, ApiContext& ctx);

/// Templates: GET /v1/templates[/{name}], DELETE /admin/templates/{name} (handlers_templates.cc;
/// ADR 0012).
void AddTemplateRoutes(Router& router, ApiContext& ctx);
/// Background processes, their streams and WebSocket (handlers_procs.cc; ADR 0011).
void AddProcessRoutes(Router& router, ApiContext& ctx);

/// E2B's control plane and sandbox traffic (handlers_e2b.cc; docs/e2b.md, ADR 0023). Before
/// AddPreviewRoutes: its host route claims ports 49983 and 49999 of the preview hosts.
void AddE2bRoutes(Router& router, ApiContext& ctx);

/// Seed A's /exec/* session routes (handlers_seed_a.cc; ADR 0007).
/// Sessions are kept in ctx.store (without one, the session routes answer 503).
void AddSeedARoutes(Router& router, ApiContext& ctx);

/// The whole routing table of the REST API.
Router BuildRouter(ApiContext& ctx);

}  // namespace asb::api
