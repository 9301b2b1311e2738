#include "api/auth.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "api/audit.h"
#include "api/errors.h"
#include "api/text.h"
#include "common/ids.h"
#include "common/log.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace {

// Routes that need their sandbox running (its commands, files, processes, ports, code): these
// wake a paused sandbox made with auto_resume. Lifecycle routes (pause, resume, timeout, GET,
// DELETE) and snapshots never do.
bool WakesPausedSandbox(std::string_view pattern) {
  constexpr std::string_view kBase = "/v1/sandboxes/{id}/";
  if (pattern.substr(0, kBase.size()) != kBase) return false;
  const std::string_view rest = pattern.substr(kBase.size());
  for (std::string_view p :
       {"exec", "files", "processes", "archive", "ports", "code", "contexts"}) {
    if (rest.substr(0, p.size()) == p) return true;
  }
  return false;
}

constexpr int64_t kWindowMs = 60'000;
constexpr int64_t kTouchEveryMs = 30'000;

// Health, and the web console's static files (api/console.h): the app asks for a key itself.
// Routes anyone may call. The OpenAPI document is one: it describes routes and shapes and holds
// no secret, and clients and code generators fetch it before they have a key.
bool IsPublic(std::string_view pattern) {
  return pattern == "/healthz" || pattern == "/health" || pattern == "/readyz" ||
         pattern == "/ready" || pattern == "/" || pattern == "/console" ||
         pattern == "/console/{path}" || pattern == "/openapi.json";
}

std::string_view RequiredScope(std::string_view pattern) {
  if (pattern == "/metrics") return store::kScopeMetrics;
  // Warm pools hold capacity every tenant shares: sizing them is the operator's.
  if (pattern.rfind("/v1/keys", 0) == 0 || pattern.rfind("/admin/", 0) == 0 ||
      pattern.rfind("/v1/pools", 0) == 0) {
    return store::kScopeAdmin;
  }
  return store::kScopeExec;
}

bool IEqualsPrefix(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// base64url (RFC 4648 section 5) without padding; nullopt on any other character. The
// alphabet is mapped onto base64's and decoded by api/text.h's Base64Decode.
std::optional<std::string> DecodeBase64Url(std::string_view in) {
  std::string std_alphabet(in);
  for (char& c : std_alphabet) {
    if (c == '+' || c == '/' || c == '=') return std::nullopt;
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  auto out = Base64Decode(std_alphabet, "key");
  if (!out) return std::nullopt;
  return std::move(*out);
}

}  // namespace

std::string WebSocketProtocolKey(const HttpRequest& req) {
  if (!IEqualsPrefix(Trim(req.Header("upgrade")), "websocket")) return "";
  std::string_view list = req.Header("sec-websocket-protocol");
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = Trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (item.rfind(kWebSocketBearerPrefix, 0) == 0) {
      auto key = DecodeBase64Url(item.substr(kWebSocketBearerPrefix.size()));
      return key ? *key : "";
    }
  }
  return "";
}

namespace {

// The raw key of a request: "Authorization: Bearer <key>" (scheme case-insensitive, RFC 6750
// section 2.1), else "X-API-Key: <key>", else (a WebSocket upgrade from a browser, which cannot
// set headers) the bearer subprotocol of WebSocketProtocolKey(). "" when none is present.
std::string RawKeyOf(const HttpRequest& req) {
  std::string_view auth = Trim(req.Header("authorization"));
  if (IEqualsPrefix(auth, "bearer ")) return std::string(Trim(auth.substr(7)));
  std::string_view header = Trim(req.Header("x-api-key"));
  if (!header.empty()) return std::string(header);
  return WebSocketProtocolKey(req);
}

double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

std::string WireResult(int status, const std::string& body) {
  if (status < 400) return "ok";
  try {
    // {"error":{"code":...}}: the code only.
    auto pos = body.find("\"code\":\"");
    if (pos != std::string::npos) {
      auto end = body.find('"', pos + 8);
      if (end != std::string::npos && end - pos - 8 < 40)
        return body.substr(pos + 8, end - pos - 8);
    }
  } catch (...) {
  }
  return "error";
}

std::string ExecResultWord(const ExecEnd& e) {
  if (e.error || !e.exit_code) return "error";
  if (e.timed_out) return "timed_out";
  return *e.exit_code == 0 ? "exit_zero" : "exit_nonzero";
}

}  // namespace

bool Principal::HasScope(std::string_view scope) const {
  if (admin) return true;
  return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

int64_t RateLimiter::Admit(const std::string& key, int64_t limit, int64_t now_ms) {
  if (limit <= 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  std::deque<int64_t>& w = windows_[key];
  while (!w.empty() && w.front() <= now_ms - kWindowMs) w.pop_front();
  if (static_cast<int64_t>(w.size()) < limit) {
    w.push_back(now_ms);
    return 0;
  }
  // Admitted again when the oldest entry leaves the window: at oldest + 60 s.
  int64_t wait_ms = w.front() + kWindowMs - now_ms;
  return std::max<int64_t>(1, (wait_ms + 999) / 1000);
}

bool ConcurrencyLimiter::Acquire(const std::string& key, int64_t limit) {
  if (limit <= 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& n = in_flight_[key];
  if (n >= limit) return false;
  ++n;
  return true;
}

void ConcurrencyLimiter::Release(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_flight_.find(key);
  if (it == in_flight_.end()) return;
  if (--it->second <= 0) in_flight_.erase(it);
}

AuthLayer::AuthLayer(AuthOptions options, store::Store& store, core::SandboxManager& manager,
                     Clock& clock)
    : options_(std::move(options)),
      store_(store),
      manager_(manager),
      clock_(clock),
      keys_(store),
      events_(store) {
  for (const std::string& k : options_.env_keys) env_key_hashes_.push_back(store::HashApiKey(k));
  options_.env_keys.clear();  // keep hashes only
}

AuthLayer::~AuthLayer() { Stop(); }

void AuthLayer::AddRoutes(Router& router) {
  AddObserveRoutes(router, *this);
  AddKeyRoutes(router, *this);
  AddEventRoutes(router, *this);
}

Router AuthLayer::Wrap(const Router& inner) {
  Router out;
  for (const Route& r : inner.routes()) {
    Handler h = [this, route = r](HttpRequest& req) { return Handle(route, req); };
    RouteOptions options = r.options;
    // The key is checked from the head, before the server reads the body (router.h, HeadGate):
    // a caller without a valid key cannot make the server hold its body. Routes that check a
    // token of their own keep their own gate.
    if (!options_.insecure_no_auth && !IsPublic(r.pattern) && !r.options.token_auth) {
      options.gate = [this, method = r.method,
                      pattern = r.pattern](const HttpRequest& req) -> std::optional<HttpResponse> {
        const int64_t start = clock_.MonotonicMs();
        auto pr = Authenticate(req);
        if (pr) return std::nullopt;
        HttpResponse out = Refusal(pr.error(), req);
        metrics_.ObserveHttp(method, pattern, out.status, Seconds(clock_.MonotonicMs() - start));
        return out;
      };
    }
    if (r.host) {
      out.AddHost(r.pattern, r.host, std::move(h), std::move(options));
    } else {
      out.Add(r.method, r.pattern, std::move(h), std::move(options));
    }
  }
  return out;
}

HttpResponse AuthLayer::Refusal(const Error& e, const HttpRequest& req) {
  bool missing = e.code() == ErrorCode::kUnauthenticated && e.message() == "missing API key";
  metrics_.CountAuth(e.code() != ErrorCode::kUnauthenticated ? "error"
                     : missing                               ? "missing"
                                                             : "invalid");
  HttpResponse out = ErrorResponse(e, req.request_id);
  if (e.code() == ErrorCode::kUnauthenticated) {
    out.headers.emplace_back("WWW-Authenticate", "Bearer");
  }
  return out;
}

Result<Principal> AuthLayer::Authenticate(const HttpRequest& req) {
  const std::string raw = RawKeyOf(req);
  if (raw.empty()) return Fail(Error::Unauthenticated("missing API key"));
  std::string hash = store::HashApiKey(raw);
  bool env_match = false;
  for (const std::string& h : env_key_hashes_) env_match |= store::ConstantTimeEquals(h, hash);
  if (env_match) {
    Principal p;
    p.key_id = "key_" + hash.substr(0, 16);
    p.lineage = p.key_id;
    p.admin = true;
    p.scopes = {std::string(store::kScopeAdmin)};
    return p;
  }
  auto rec = keys_.FindByRawKey(raw);
  int64_t now = clock_.NowUnixMs();
  if (!rec) {
    if (rec.error().code() == ErrorCode::kNotFound) {
      return Fail(Error::Unauthenticated("invalid API key"));
    }
    return Fail(rec.error().WithContext("look up API key"));
  }
  if (!rec->Usable(now)) return Fail(Error::Unauthenticated("invalid API key"));
  bool touch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t& last = last_touch_ms_[rec->id];
    if (now - last >= kTouchEveryMs) {
      last = now;
      touch = true;
    }
  }
  if (touch) {
    if (auto st = keys_.Touch(rec->id, now); !st) {
      spdlog::warn("key_id={} last_used update failed: {}", rec->id, st.error().ToString());
    }
  }
  Principal p;
  p.key_id = rec->id;
  p.lineage = rec->lineage;
  p.scopes = rec->scopes;
  p.admin = rec->HasScope(store::kScopeAdmin);
  p.rate_limit_per_minute = rec->rate_limit_per_minute;
  p.max_sandboxes = rec->max_sandboxes;
  return p;
}

std::mutex& AuthLayer::QuotaLock(const std::string& lineage) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& m = quota_locks_[lineage];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

void AuthLayer::Audit(store::EventRecord e) {
  auto r = events_.Append(e);
  metrics_.CountAudit(r ? "ok" : "error");
  if (!r) {
    spdlog::error("request_id={} audit event lost: {}", e.request_id, r.error().ToString());
  }
}

HttpResponse AuthLayer::Handle(const Route& route, HttpRequest& req) {
  const int64_t start = clock_.MonotonicMs();
  const int64_t start_unix = clock_.NowUnixMs();
  auto observe_http = [this, &route](int status, int64_t t0) {
    metrics_.ObserveHttp(route.method, route.pattern, status, Seconds(clock_.MonotonicMs() - t0));
  };
  // Preview hosts check their own token (handlers_previews.cc); an API key opens nothing there.
  if (IsPublic(route.pattern) || route.options.token_auth) {
    HttpResponse out = route.handler(req);
    observe_http(out.status, start);
    return out;
  }

  Principal p;
  std::optional<HttpResponse> refused;
  bool holds_place = false;  // a place of concurrency_ taken for this request
  if (options_.insecure_no_auth) {
    p.admin = true;
  } else if (auto pr = Authenticate(req); !pr) {
    HttpResponse out = Refusal(pr.error(), req);
    observe_http(out.status, start);
    return out;  // no key: nothing to audit
  } else {
    p = std::move(*pr);
    req.key_id = p.key_id;
    if (int64_t wait = limiter_.Admit(p.key_id, p.rate_limit_per_minute, clock_.MonotonicMs());
        wait > 0) {
      metrics_.CountAuth("rate_limited");
      refused = ErrorResponse(
          Error::LimitExceeded("rate limit of " + std::to_string(p.rate_limit_per_minute) +
                               " requests per minute exceeded; retry in " + std::to_string(wait) +
                               " s"),
          req.request_id);
      refused->headers.emplace_back("Retry-After", std::to_string(wait));
    } else if (std::string_view scope = RequiredScope(route.pattern); !p.HasScope(scope)) {
      metrics_.CountAuth("forbidden");
      refused = ErrorResponse(
          Error::PermissionDenied("this API key lacks the '" + std::string(scope) + "' scope"),
          req.request_id);
    } else if (route.options.blocking && !p.admin &&
               !concurrency_.Acquire(p.key_id, options_.max_concurrent_requests_per_key)) {
      metrics_.CountAuth("concurrency_limited");
      refused = ErrorResponse(
          Error::LimitExceeded("this API key already has " +
                               std::to_string(options_.max_concurrent_requests_per_key) +
                               " requests in progress, the most it may have at once; retry "
                               "when one finishes"),
          req.request_id);
      refused->headers.emplace_back("Retry-After", "1");
    } else {
      metrics_.CountAuth("ok");
      if (route.options.blocking && !p.admin && options_.max_concurrent_requests_per_key > 0) {
        holds_place = true;
      }
    }
  }
  // Gives the place back however the handler ends (it may throw: the server answers 500).
  struct PlaceGuard {
    ConcurrencyLimiter& limiter;
    const std::string& key;
    bool held;
    ~PlaceGuard() {
      if (held) limiter.Release(key);
    }
  } place_guard{concurrency_, p.key_id, holds_place};

  CallInfo call = DescribeCall(route, req);
  req.owner = p.admin ? std::string(core::kAnyOwner) : p.lineage;
  // An uploaded snapshot is new, like a created sandbox: it belongs to the caller's lineage
  // (as kAnyOwner an admin's import was stored with no owner, outside the per-owner limits).
  if (call.action == "snapshot.import") req.owner = p.lineage;
  // A paused sandbox made with auto_resume wakes for a request that needs it running, which is
  // then served (E2B's autoResume); others still answer 409 "paused".
  if (!refused && WakesPausedSandbox(route.pattern) && IsValidId(req.Param("id"), "sb_")) {
    if (Status st = manager_.lifecycle().WakeIfAutoResume(req.owner, req.Param("id"));
        !st && st.error().code() != ErrorCode::kNotFound) {
      refused = ErrorResponse(st.error(), req.request_id);
    }
  }
  HttpResponse out;
  if (refused) {
    out = std::move(*refused);
  } else if (call.create || call.fork) {
    // An admin's new sandboxes belong to its lineage too (a fork keeps kAnyOwner, so that an
    // admin can fork any tenant's snapshot).
    if (call.create) req.owner = p.lineage;
    if (p.max_sandboxes > 0) {
      std::lock_guard<std::mutex> quota(QuotaLock(p.lineage));
      auto live = manager_.lifecycle().List(p.lineage);
      if (live && static_cast<int64_t>(live->size()) >= p.max_sandboxes) {
        metrics_.CountAuth("quota");
        out = ErrorResponse(
            Error::LimitExceeded("this API key may have at most " +
                                 std::to_string(p.max_sandboxes) + " sandboxes at once"),
            req.request_id);
      } else {
        req.new_sandboxes_left = p.max_sandboxes - static_cast<int64_t>(live ? live->size() : 0);
        out = route.handler(req);
      }
    } else {
      out = route.handler(req);
    }
  } else {
    out = route.handler(req);
  }

  if (call.create) {
    std::string tmpl = "other";
    std::string backend = options_.backend_name;  // a failed create's: the default's
    if (out.status == 201) {
      // A string field of the created sandbox, as SandboxJson wrote it (no escapes: template and
      // backend names are plain). Typed audit facts would spare this scan of the text.
      auto field = [&](std::string_view key, std::string* value) {
        const std::string open = "\"" + std::string(key) + "\":\"";
        auto pos = out.body.find(open);
        if (pos == std::string::npos) return;
        auto end = out.body.find('"', pos + open.size());
        if (end != std::string::npos)
          *value = out.body.substr(pos + open.size(), end - pos - open.size());
      };
      field("template", &tmpl);
      field("backend", &backend);
    } else if (manager_.templates().Find(call.target)) {
      tmpl = call.target;
    } else if (call.target.empty()) {
      tmpl = manager_.config().default_template;
    }
    metrics_.ObserveCreate(backend, tmpl, WireResult(out.status, out.body),
                           Seconds(clock_.MonotonicMs() - start));
  }

  store::EventRecord ev;
  ev.time_ms = start_unix;
  ev.request_id = req.request_id;
  ev.key_id = p.key_id;
  ev.owner = p.lineage;
  ev.action = call.action;
  ev.target = call.target;
  ev.status = out.status;
  ev.result = WireResult(out.status, out.body);
  ev.sandbox_id = out.sandbox_id;
  if (ev.sandbox_id.empty() && route.pattern.rfind("/v1/sandboxes/{id}", 0) == 0 &&
      IsValidId(req.Param("id"), "sb_")) {  // any other bytes name no sandbox
    ev.sandbox_id = req.Param("id");
  }
  if (out.sandbox_id.empty()) out.sandbox_id = ev.sandbox_id;

  if (out.stream && out.status != 101) {  // not a connection handed over (ports proxy)
    bool exec = call.exec;
    bool audited = call.audited;
    std::string pattern = route.pattern;
    std::string method = route.method;
    int status = out.status;
    out.stream = ObserveStream(out.stream, exec,
                               [this, ev, exec, audited, pattern, method, status, start](
                                   uint64_t bytes, const ExecEnd& end, bool cancelled) mutable {
                                 int64_t ms = clock_.MonotonicMs() - start;
                                 metrics_.AddStreamBytes(pattern, bytes);
                                 metrics_.ObserveHttp(method, pattern, status, Seconds(ms));
                                 if (exec)
                                   metrics_.ObserveExec("stream", ExecResultWord(end), Seconds(ms));
                                 if (!audited) return;
                                 ev.duration_ms = ms;
                                 if (exec) {
                                   ev.exit_code = end.exit_code;
                                   if (cancelled) {
                                     ev.result = "cancelled";
                                   } else if (end.error) {
                                     ev.result = "error";
                                   } else if (end.timed_out) {
                                     ev.result = "timed_out";
                                   }
                                 }
                                 Audit(std::move(ev));
                               });
    return out;
  }

  int64_t ms = clock_.MonotonicMs() - start;
  metrics_.ObserveHttp(route.method, route.pattern, out.status, Seconds(ms));
  ExecEnd end;
  if (call.exec && out.status == 200) {
    end = ExecEndOfJson(out.body);
    ev.exit_code = end.exit_code;
    if (end.timed_out) ev.result = "timed_out";
  } else {
    end.error = true;
  }
  if (call.exec && !refused) metrics_.ObserveExec("sync", ExecResultWord(end), Seconds(ms));
  if (call.audited) {
    ev.duration_ms = ms;
    Audit(std::move(ev));
  }
  return out;
}

void AuthLayer::StartRetention() {
  if (options_.event_retention_days <= 0 || retention_thread_.joinable()) return;
  retention_thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(retention_mu_);
    while (!retention_stop_) {
      int64_t cutoff = clock_.NowUnixMs() - options_.event_retention_days * 86'400'000;
      lock.unlock();
      auto n = events_.PurgeBefore(cutoff);
      if (!n) {
        spdlog::warn("audit retention purge failed: {}", n.error().ToString());
      } else if (*n > 0) {
        spdlog::info("audit retention: deleted {} events older than {} days", *n,
                     options_.event_retention_days);
      }
      lock.lock();
      retention_cv_.wait_for(lock, std::chrono::hours(1), [this] { return retention_stop_; });
    }
  });
}

void AuthLayer::Stop() {
  {
    std::lock_guard<std::mutex> lock(retention_mu_);
    retention_stop_ = true;
  }
  retention_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
}

}  // namespace asb::api
