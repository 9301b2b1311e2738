#include "api/idempotency.h"

#include <algorithm>
#include <boost/json.hpp>
#include <vector>

#include "common/clock.h"
#include "store/idempotency.h"
#include "store/keys.h"

namespace asb::api {

namespace json = boost::json;

namespace {

void Canonical(const json::value& v, std::string* out) {
  if (v.is_object()) {
    const json::object& o = v.as_object();
    std::vector<std::string_view> names;
    names.reserve(o.size());
    for (const auto& kv : o) names.push_back(kv.key());
    std::sort(names.begin(), names.end());
    *out += '{';
    for (size_t i = 0; i < names.size(); ++i) {
      if (i) *out += ',';
      *out += json::serialize(json::string(names[i]));
      *out += ':';
      Canonical(o.at(names[i]), out);
    }
    *out += '}';
  } else if (v.is_array()) {
    *out += '[';
    bool first = true;
    for (const auto& e : v.as_array()) {
      if (!first) *out += ',';
      first = false;
      Canonical(e, out);
    }
    *out += ']';
  } else {
    *out += json::serialize(v);
  }
}

}  // namespace

std::string IdempotencyScope(const HttpRequest& req) {
  return req.owner.empty() ? "key:" + req.key_id : req.owner;
}

Result<std::string> CanonicalJson(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::string("{}");
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return Fail(Error::InvalidArgument("body: not JSON"));
  std::string out;
  Canonical(v, &out);
  return out;
}

Result<HttpResponse> RunIdempotent(store::Store* store, const HttpRequest& req,
                                   std::string_view key,
                                   const std::function<Result<HttpResponse>()>& create) {
  ASB_TRY(store::ValidateIdempotencyKey(key));
  if (store == nullptr) {
    return Fail(Error::Unavailable("Idempotency-Key: this server has no database for it"));
  }
  ASB_ASSIGN_OR_RETURN(std::string canonical, CanonicalJson(req.body));
  const std::string fingerprint = store::HashApiKey(canonical);  // SHA-256 hex
  const std::string scope = IdempotencyScope(req);
  store::IdempotencyStore idem(*store);
  ASB_ASSIGN_OR_RETURN(store::IdempotencyClaim claim,
                       idem.Begin(scope, key, fingerprint, SystemClock::Instance().NowUnixMs(),
                                  store::kIdempotencyRetentionMs));
  using Kind = store::IdempotencyClaim::Kind;
  switch (claim.kind) {
    case Kind::kMismatch:
      return Fail(Error::Conflict(
          "Idempotency-Key: already used with a different request body (a key names one "
          "request; use a new key for a different sandbox)"));
    case Kind::kInProgress:
      return Fail(Error::Conflict(
          "Idempotency-Key: the first request with this key is still in progress; retry "
          "after it has finished"));
    case Kind::kReplay: {
      HttpResponse r = JsonResponse(claim.status, std::move(claim.body));
      r.headers.emplace_back("Idempotent-Replayed", "true");
      return r;
    }
    case Kind::kNew:
      break;
  }
  Result<HttpResponse> r = create();
  if (!r || r->status < 200 || r->status >= 300) {
    (void)idem.Abandon(scope, key);  // not remembered: a retry runs again
    return r;
  }
  // The sandbox exists either way: if its answer cannot be stored, the key is freed rather
  // than left "in progress".
  if (!idem.Complete(scope, key, r->status, r->body, r->sandbox_id)) (void)idem.Abandon(scope, key);
  return r;
}

}  // namespace asb::api
