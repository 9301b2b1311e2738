// The auth layer of the REST API (api/AUTH.md): API keys, scopes, rate
// limits, per-key sandbox quotas, tenancy, the audit trail and the HTTP metrics, wrapped
// around every route of the routing table (AuthLayer::Wrap), so handlers stay plain functions
// that read req.owner through OwnerOf().
//
// Per request, in this order:
//  1. public routes (/healthz, /health, /readyz, /ready, /openapi.json, and the web console's
//     files at /, /console, /console/{path}) pass without a key, and so do routes with
//     RouteOptions::token_auth (the preview hosts, which check a preview token instead);
//  2. the key comes from "Authorization: Bearer <key>" or "X-API-Key: <key>" (a WebSocket
//     upgrade may carry it in a subprotocol instead: WebSocketProtocolKey); none → 401
//     unauthorized with "WWW-Authenticate: Bearer"; unknown, revoked, expired or rotated-out
//     → 401 (the same answer, so a caller learns nothing about other keys);
//  3. over the key's per-minute limit → 429 limit_exceeded with Retry-After (seconds until
//     the oldest request of the last 60 s leaves the window: a sliding-window log, so N
//     requests pass in any 60 s and the N+1st does not);
//  4. the route's scope: /metrics needs metrics, /v1/keys, /v1/pools and /admin/* need admin,
//     the rest needs exec; admin holds every scope → else 403 forbidden;
//  5. req.owner = the key's lineage (non-admin), or kAnyOwner (admin; but a create by an admin
//     key records the admin's lineage as owner); req.key_id = the key's id;
//  6. POST /v1/sandboxes or a snapshot fork over the key's max_sandboxes (live sandboxes of
//     its lineage) → 429; a blocking route while the key already has
//     AuthOptions::max_concurrent_requests_per_key of them in progress → 429;
//  7. the handler runs; then HTTP metrics, and an audit event for every mutating call and
//     every exec (streams: when the stream ends, with the exit code it carried).
//
// Keys from AGENT_SANDBOX_API_KEYS are admin keys with no limits; their id is "key_" + the
// first 16 hex digits of their SHA-256, stable across restarts, and never the key itself.
// With --insecure-no-auth steps 1-6 are skipped (everything acts as kAnyOwner), metrics and
// audit still run.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/http_types.h"
#include "api/metrics.h"
#include "api/router.h"
#include "common/clock.h"
#include "common/result.h"
#include "store/events.h"
#include "store/keys.h"

namespace asb::core {
class SandboxManager;
}

namespace asb::api {

/// Who a request acts for, once authenticated.
struct Principal {
  std::string key_id;   // "" with --insecure-no-auth
  std::string lineage;  // the tenant: owner of the sandboxes the key creates
  std::vector<std::string> scopes;
  int64_t rate_limit_per_minute = 0;  // 0 = unlimited
  int64_t max_sandboxes = 0;          // 0 = unlimited
  bool admin = false;
  bool HasScope(std::string_view scope) const;  // admin holds every scope
};

/// A sliding-window log per key: at most `limit` admitted requests in any 60 s.
class RateLimiter {
 public:
  /// Admits (and records) a request of `key` at `now_ms`, returning 0, or returns the
  /// seconds (>= 1) until one would be admitted. limit <= 0: always admitted.
  int64_t Admit(const std::string& key, int64_t limit, int64_t now_ms);

 private:
  std::mutex mu_;
  std::map<std::string, std::deque<int64_t>> windows_;
};

/// How many requests each key has in progress, capped per key. Keeps one tenant from holding
/// every thread of the server's blocking pool (sync execs hold theirs for the command's whole
/// run), which would make every other tenant's calls wait.
class ConcurrencyLimiter {
 public:
  /// Takes a place for `key` and returns true, or returns false when `key` already holds
  /// `limit` places. limit <= 0: always true (and nothing is counted).
  bool Acquire(const std::string& key, int64_t limit);
  /// Gives back a place that Acquire took with limit > 0.
  void Release(const std::string& key);

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> in_flight_;  // keys with none are erased
};

struct AuthOptions {
  bool insecure_no_auth = false;
  /// Requests of one non-admin key that may run on the server's blocking pool at once (sync
  /// execs, file transfers, creates: every route with RouteOptions::blocking). One more is 429
  /// limit_exceeded with Retry-After: 1. The default is a quarter of the pool's 512 threads
  /// (ServerOptions::max_blocking_threads), so three tenants at their cap still leave threads
  /// for everybody else. 0 = no limit. Admin keys are not limited.
  int64_t max_concurrent_requests_per_key = 128;
  /// Raw admin keys (AGENT_SANDBOX_API_KEYS). Kept only as hashes.
  std::vector<std::string> env_keys;
  /// Audit events older than this are deleted (hourly); 0 = kept for ever.
  int64_t event_retention_days = 30;
  /// For /metrics labels and /readyz.
  std::string backend_name = "ns";
  /// /readyz checks free space here.
  std::string data_dir;
  /// /readyz fails below these.
  uint64_t min_free_disk_bytes = 256ull << 20;
  uint64_t min_available_memory_bytes = 128ull << 20;
};

class AuthLayer {
 public:
  /// Every reference must outlive the layer (and the router it wraps).
  AuthLayer(AuthOptions options, store::Store& store, core::SandboxManager& manager, Clock& clock);
  ~AuthLayer();
  AuthLayer(const AuthLayer&) = delete;
  AuthLayer& operator=(const AuthLayer&) = delete;

  /// Adds the auth layer's routes: /v1/keys (+ /admin/keys aliases), /v1/events,
  /// /v1/sandboxes/{id}/events, /metrics, /readyz, /ready and /health.
  void AddRoutes(Router& router);
  /// A router whose every route runs behind the steps of the file comment. Step 2 runs twice
  /// for a request with a body: once as the route's HeadGate (router.h), before the server
  /// reads the body, and again in the handler.
  Router Wrap(const Router& inner);

  /// The principal of `req`. Errors: kUnauthenticated (no key: message "missing API key";
  /// else "invalid API key").
  Result<Principal> Authenticate(const HttpRequest& req);

  /// Starts the hourly retention purge (runs one purge at once). Stop() or the destructor
  /// ends it.
  void StartRetention();
  void Stop();

  Metrics& metrics() { return metrics_; }
  store::KeyStore& keys() { return keys_; }
  store::EventStore& events() { return events_; }
  const AuthOptions& options() const { return options_; }
  core::SandboxManager& manager() { return manager_; }
  store::Store& store() { return store_; }
  Clock& clock() { return clock_; }

  /// Writes an audit event (failures are logged and counted, never answered).
  void Audit(store::EventRecord e);

  /// The lock held around "count the lineage's live sandboxes, then create/fork" (step 6),
  /// so that concurrent creates cannot pass a max_sandboxes limit together. MCP's creates
  /// (mcp/manager_backend.h) take it too.
  std::mutex& QuotaLock(const std::string& lineage);

 private:
  HttpResponse Handle(const Route& route, HttpRequest& req);
  /// The answer to a request whose key failed Authenticate (401 with WWW-Authenticate, or the
  /// lookup's error), counted in the auth metrics.
  HttpResponse Refusal(const Error& e, const HttpRequest& req);

  AuthOptions options_;
  store::Store& store_;
  core::SandboxManager& manager_;
  Clock& clock_;
  store::KeyStore keys_;
  store::EventStore events_;
  Metrics metrics_;
  RateLimiter limiter_;
  ConcurrencyLimiter concurrency_;
  std::vector<std::string> env_key_hashes_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> quota_locks_;
  std::map<std::string, int64_t> last_touch_ms_;
  std::mutex retention_mu_;
  std::condition_variable retention_cv_;
  bool retention_stop_ = false;
  std::thread retention_thread_;
};

/// Route handlers of the auth layer (one file per resource).
void AddKeyRoutes(Router& router, AuthLayer& auth);      // handlers_keys.cc
void AddEventRoutes(Router& router, AuthLayer& auth);    // handlers_events.cc
void AddObserveRoutes(Router& router, AuthLayer& auth);  // handlers_observe.cc

}  // namespace asb::api

namespace asb::api {

/// The API key a WebSocket upgrade carries in its `agent-sandbox.bearer.<base64url>`
/// subprotocol (http_types.h, kWebSocketBearerPrefix), decoded; "" when the request is no
/// upgrade (Upgrade: websocket), offers no such protocol, or its value is not base64url.
std::string WebSocketProtocolKey(const HttpRequest& req);

/// Parses a key expiry: "" or "never" → 0 (never); a duration from `now_ms` ("90d", "12h",
/// "30m", "45s"); or an RFC 3339 UTC time ("2027-01-31T00:00:00Z", fractions allowed).
/// Returns Unix ms. Errors: kInvalidArgument (anything else, or a time not after now).
Result<int64_t> ParseExpiry(std::string_view text, int64_t now_ms);

/// Parses "2027-01-31T00:00:00Z" (fractions of a second allowed, UTC only) to Unix ms.
/// Errors: kInvalidArgument.
Result<int64_t> ParseRfc3339Ms(std::string_view text);

/// The JSON object of a key as the API shows it (never the hash; the raw key only in the
/// answer of create/rotate, added by the caller).
std::string KeyJson(const store::KeyRecord& k, int64_t now_ms, std::string_view raw_key = {});

}  // namespace asb::api
