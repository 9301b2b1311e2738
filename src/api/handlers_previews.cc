// Preview URLs of exposed ports (docs/adr/0015-preview-urls.md, api/preview.h):
//   POST   /v1/sandboxes/{id}/previews               {port, ttl_seconds?}
//                                                    201 preview + "token" + "url" (shown once)
//   GET    /v1/sandboxes/{id}/previews[?port=N]      200 {"previews": [...]} (never a token)
//   DELETE /v1/sandboxes/{id}/previews/{preview_id}  204; the token stops working at once
//   any    <port>-sb-<hex>.<preview domain>/<path>   the app on that port (a host route)
// The first three are API routes (a key with the exec scope, the sandbox's tenant). The host
// route takes no API key: a preview token, from the query (answered by a redirect that sets
// the cookie) or from the cookie, bound to exactly that sandbox and port. E2B's SDKs name the
// same hosts with the id as it is ("3000-sb_<hex>.<domain>", sandbox.getHost(3000)) and open
// them with the sandbox's traffic access token in E2B-Traffic-Access-Token (docs/e2b.md; the
// trafficAccessToken of api/e2b_token.h, which opens every port of that one sandbox but not
// envd). A sandbox made with allow_public_traffic needs neither on its ports.
#include <boost/json.hpp>

#include "api/e2b_token.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/text.h"
#include "common/clock.h"
#include "common/ids.h"
#include "core/sandbox_manager.h"
#include "store/preview_tokens.h"

namespace asb::api {
namespace {

namespace json = boost::json;

// The one answer for every token that does not open this host, so that a caller learns nothing
// about tokens of other sandboxes or ports.
constexpr char kBadToken[] =
    "invalid, expired or revoked preview token for this host; ask for a new preview URL "
    "(POST /v1/sandboxes/{id}/previews)";

// Cookies of this host's name that one request may make the server look up: a browser sends
// few; a client sending hundreds would make each request hundreds of database lookups.
constexpr size_t kMaxPreviewCookieTries = 8;

struct Deps {
  core::SandboxLifecycle* sandboxes = nullptr;
  core::NetworkService* network = nullptr;
  store::Store* store = nullptr;
  PreviewOptions preview;
  PortProxyOptions proxy;
  std::string e2b_secret;  // "" = E2B's traffic token opens nothing
};

int64_t NowMs() { return SystemClock::Instance().NowUnixMs(); }

Result<store::PreviewTokenStore> Tokens(const Deps& d) {
  if (d.store == nullptr) {
    return Fail(Error::Unavailable("preview URLs need the server's database"));
  }
  return store::PreviewTokenStore(*d.store);
}

json::object PreviewJson(const Deps& d, const store::PreviewTokenRecord& r) {
  json::object o;
  o["id"] = r.id;
  o["sandbox_id"] = r.sandbox_id;
  o["port"] = r.port;
  o["host"] = PreviewHostName(d.preview.domain, r.sandbox_id, r.port);
  o["created_by"] = r.created_by;
  o["created_at"] = FormatRfc3339(r.created_at_ms);
  o["expires_at"] = FormatRfc3339(r.expires_at_ms);
  return o;
}

// The sandbox of the {id} parameter, as the caller's tenant sees it.
Result<core::SandboxInfo> CallersSandbox(const Deps& d, const HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
  return d.sandboxes->Get(OwnerOf(req), id);
}

Result<HttpResponse> Create(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
  ASB_ASSIGN_OR_RETURN(std::optional<int64_t> port, body.Integer("port", 1, 65535));
  ASB_ASSIGN_OR_RETURN(std::optional<int64_t> ttl,
                       body.Integer("ttl_seconds", 1, d.preview.max_ttl_seconds));
  ASB_TRY(body.Finish());
  if (!port) return Fail(Error::InvalidArgument("port: required, 1..65535"));
  if (s.state != core::SandboxState::kRunning) {
    return Fail(Error::Conflict("sandbox " + s.id + " is not running"));
  }
  ASB_ASSIGN_OR_RETURN(store::PreviewTokenStore tokens, Tokens(d));
  const int64_t now = NowMs();
  const int64_t seconds =
      ttl.value_or(std::min(kDefaultPreviewTtlSeconds, d.preview.max_ttl_seconds));
  store::NewPreviewToken t;
  t.sandbox_id = s.id;
  t.port = *port;
  t.owner = s.owner;
  t.created_by = req.key_id;
  t.expires_at_ms = now + seconds * 1000;
  ASB_ASSIGN_OR_RETURN(store::CreatedPreviewToken c,
                       tokens.Create(t, now, kMaxPreviewTokensPerSandbox));
  json::object o = PreviewJson(d, c.record);
  o["token"] = c.raw_token;
  o["url"] = PreviewUrl(d.preview, s.id, *port, c.raw_token);
  HttpResponse r = JsonResponse(201, json::serialize(o));
  r.headers.emplace_back("Cache-Control", "no-store");
  r.sandbox_id = s.id;
  return r;
}

Result<HttpResponse> List(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  std::optional<int64_t> port;
  if (const std::string* p = req.Query("port")) {
    ASB_ASSIGN_OR_RETURN(port, ParsePort(*p));
  }
  ASB_ASSIGN_OR_RETURN(store::PreviewTokenStore tokens, Tokens(d));
  ASB_ASSIGN_OR_RETURN(auto list, tokens.List(s.id, NowMs()));
  json::array out;
  for (const auto& r : list) {
    if (!port || r.port == *port) out.push_back(PreviewJson(d, r));
  }
  json::object o;
  o["previews"] = std::move(out);
  HttpResponse r = JsonResponse(200, json::serialize(o));
  r.sandbox_id = s.id;
  return r;
}

Result<HttpResponse> Revoke(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  const std::string& preview_id = req.Param("preview_id");
  if (!IsValidId(preview_id, "pv_")) {
    return Fail(Error::NotFound("preview token " + preview_id + " not found"));
  }
  ASB_ASSIGN_OR_RETURN(store::PreviewTokenStore tokens, Tokens(d));
  ASB_TRY(tokens.Revoke(s.id, preview_id));
  HttpResponse r = NoContent();
  r.sandbox_id = s.id;
  return r;
}

// A paused sandbox made with auto_resume wakes for its port's traffic (after the token check):
// the request is then proxied. A sandbox gone meanwhile is the proxy's to report.
Status WakeForTraffic(const Deps& d, const std::string& owner, const std::string& id) {
  Status st = d.sandboxes->WakeIfAutoResume(owner, id);
  if (!st && st.error().code() != ErrorCode::kNotFound) return st;
  return {};
}

// A request on a preview host: {id} and {port} come from the Host header.
Result<HttpResponse> Serve(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
  ASB_ASSIGN_OR_RETURN(int64_t port, ParsePort(req.Param("port")));
  // The token leaves the request here, whatever happens next: the app never sees it.
  std::optional<std::string> from_query;
  std::vector<std::string> from_cookies;  // this host's cookie, and any shadowing it
  const bool secure = d.preview.scheme == "https";
  const std::string cookie_name = PreviewCookieName(id, port, secure);
  UpstreamRequest up;
  up.target = RemoveQueryParam(req.target, kPreviewTokenParam, &from_query);
  if (auto h = req.headers.find("cookie"); h != req.headers.end()) {
    up.cookie = RemovePreviewCookies(h->second, cookie_name, &from_cookies);
  }
  up.forwarded_proto = d.preview.scheme;
  // E2B's headers never reach the app: the traffic token opens this host; envd's access token
  // (X-Access-Token) does not, but it is a secret the app must not see either.
  req.headers.erase("x-access-token");
  // A sandbox made with allow_public_traffic (E2B's allowPublicTraffic: true) answers on its
  // ports to anyone: no token is asked for, and none reaches the app.
  if (auto s = d.sandboxes->Get(core::kAnyOwner, id); s && s->allow_public_traffic) {
    req.headers.erase("e2b-traffic-access-token");
    ASB_TRY(WakeForTraffic(d, s->owner, id));
    return ProxyToPort(*d.network, s->owner, id, port, req, up, d.proxy);
  }
  if (auto h = req.headers.find("e2b-traffic-access-token"); h != req.headers.end()) {
    const std::string token = h->second;
    req.headers.erase(h);
    if (!CheckE2bTrafficToken(d.e2b_secret, id, token)) {
      return Fail(Error::Unauthenticated(kBadToken));
    }
    auto s = d.sandboxes->Get(core::kAnyOwner, id);
    if (!s) return Fail(Error::Unauthenticated(kBadToken));  // a token outlives no sandbox
    ASB_TRY(WakeForTraffic(d, s->owner, id));
    return ProxyToPort(*d.network, s->owner, id, port, req, up, d.proxy);
  }
  if (!from_query && from_cookies.empty()) {
    return Fail(
        Error::Unauthenticated("this preview host needs a preview token: open the url that POST "
                               "/v1/sandboxes/{id}/previews answered"));
  }
  // The query's token, else the first cookie whose token is valid for this host: a cookie that
  // another host's app set for the whole preview domain never hides a valid one (ADR 0014, round
  // 3).
  std::vector<std::string> tries =
      from_query ? std::vector<std::string>{*from_query} : std::move(from_cookies);
  if (tries.size() > kMaxPreviewCookieTries) tries.resize(kMaxPreviewCookieTries);
  ASB_ASSIGN_OR_RETURN(store::PreviewTokenStore tokens, Tokens(d));
  const int64_t now = NowMs();
  std::optional<store::PreviewTokenRecord> rec;
  const std::string* raw = nullptr;
  for (const std::string& t : tries) {
    auto r = tokens.Resolve(t, now);
    if (!r && r.error().code() != ErrorCode::kNotFound) return Fail(r.error());
    if (r && r->sandbox_id == id && r->port == port) {
      rec = std::move(*r);
      raw = &t;
      break;
    }
  }
  if (!rec) return Fail(Error::Unauthenticated(kBadToken));
  if (from_query && (req.method == "GET" || req.method == "HEAD")) {
    // The same URL without the token, which the cookie carries from now on: the token leaves
    // the address bar, the history and every Referer.
    HttpResponse r;
    r.status = 302;
    r.content_type.clear();
    r.headers.emplace_back("Location", up.target);
    r.headers.emplace_back(
        "Set-Cookie",
        PreviewSetCookie(cookie_name, *raw, (rec->expires_at_ms - now + 999) / 1000, secure));
    r.headers.emplace_back("Cache-Control", "no-store");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    r.sandbox_id = id;
    return r;
  }
  // The token's owner: a tenant's token reaches only that tenant's sandbox.
  ASB_TRY(WakeForTraffic(d, rec->owner, id));
  return ProxyToPort(*d.network, rec->owner, id, port, req, up, d.proxy);
}

}  // namespace

void AddPreviewRoutes(Router& router, ApiContext& ctx) {
  auto d = std::make_shared<Deps>();
  d->sandboxes = &ctx.manager->lifecycle();
  d->network = &ctx.manager->network();
  d->store = ctx.store;
  d->preview = ctx.preview;
  d->proxy.budget = ctx.proxy_budget;
  d->proxy.timeout_ms = ctx.proxy_timeout_ms;
  d->e2b_secret = ctx.e2b_secret;
  router.Add("POST", "/v1/sandboxes/{id}/previews",
             Wrap([d](HttpRequest& req) { return Create(*d, req); }));
  router.Add("GET", "/v1/sandboxes/{id}/previews",
             Wrap([d](HttpRequest& req) { return List(*d, req); }));
  router.Add("DELETE", "/v1/sandboxes/{id}/previews/{preview_id}",
             Wrap([d](HttpRequest& req) { return Revoke(*d, req); }));
  RouteOptions host;
  host.file_body = true;    // request bodies up to max_file_bytes pass through
  host.stream_body = true;  // ... a chunk at a time, by the server's relay
  host.token_auth = true;
  const std::string domain = ctx.preview.domain;
  router.AddHost(
      "{port}-{id}." + domain,
      [domain](std::string_view h, const std::map<std::string, std::string>&,
               std::map<std::string, std::string>* params) {
        // E2B's getHost() keeps the id's underscore ("3000-sb_<hex>"): the same host.
        std::string name(h);
        if (size_t at = name.find("-sb_"); at != std::string::npos && at <= 5) name[at + 3] = '-';
        std::optional<PreviewHost> p = ParsePreviewHost(name, domain);
        if (!p) return false;
        (*params)["id"] = p->sandbox_id;
        (*params)["port"] = p->port;
        return true;
      },
      Wrap([d](HttpRequest& req) { return Serve(*d, req); }), host);
}

}  // namespace asb::api
