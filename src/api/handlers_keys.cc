// API key routes (api/AUTH.md; scope admin, enforced by the auth layer):
//   POST   /v1/keys               create  201 key + "key" (the raw key, shown this once)
//   GET    /v1/keys               list    200 {"keys":[...]}
//   GET    /v1/keys/{id}          get     200 key
//   POST   /v1/keys/{id}/revoke   revoke  200 key (enabled false; answers 401 from now on)
//   POST   /v1/keys/{id}/enable   enable  200 key
//   POST   /v1/keys/{id}/rotate   rotate  201 new key + "key"; the old one answers 401
//   DELETE /v1/keys/{id}          delete  204
// Seed A's names answer too: /admin/keys (POST, GET), /admin/keys/{id} (GET, DELETE),
// /admin/keys/{id}/revoke, /admin/keys/{id}/rotate.
// Create body: {"name": "...", "scopes": ["exec"] | "exec,metrics", "rate_limit": 60,
// "max_sandboxes": 5, "expires_at": "2027-01-01T00:00:00Z" | "expires_in": "30d"}.
#include <boost/json.hpp>
#include <cstdio>
#include <ctime>

#include "api/auth.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/text.h"
#include "common/ids.h"

namespace asb::api {

namespace json = boost::json;

Result<int64_t> ParseRfc3339Ms(std::string_view text) {
  std::string s(text);
  int y, mo, d, h, mi, sec;
  char tail[32] = {0};
  int got = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%31s", &y, &mo, &d, &h, &mi, &sec, tail);
  std::string rest = got == 7 ? tail : "";
  bool frac_ok = !rest.empty() && rest.back() == 'Z';
  if (frac_ok && rest.size() > 1) {
    frac_ok = rest[0] == '.' && rest.find_first_not_of("0123456789", 1) == rest.size() - 1;
  }
  if (got != 7 || !frac_ok || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
      sec > 60) {
    return Fail(Error::InvalidArgument("not an RFC 3339 UTC time: '" + s + "'"));
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  int64_t ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  if (rest.size() > 2) {
    std::string frac = rest.substr(1, rest.size() - 2);
    frac.resize(3, '0');
    ms += std::stoll(frac);
  }
  return ms;
}

Result<int64_t> ParseExpiry(std::string_view text, int64_t now_ms) {
  if (text.empty() || text == "never") return 0;
  std::string s(text);
  char unit = s.back();
  int64_t mult = unit == 'd'   ? 86'400'000
                 : unit == 'h' ? 3'600'000
                 : unit == 'm' ? 60'000
                 : unit == 's' ? 1000
                               : 0;
  if (mult != 0 && s.size() > 1 && s.find_first_not_of("0123456789", 0) == s.size() - 1 &&
      s.size() <= 10) {
    int64_t n = std::stoll(s.substr(0, s.size() - 1));
    if (n <= 0) return Fail(Error::InvalidArgument("expires: the duration must be > 0"));
    return now_ms + n * mult;
  }
  auto t = ParseRfc3339Ms(s);
  if (!t) {
    return Fail(Error::InvalidArgument(
        "expires: must be 'never', a duration such as 30d, 12h, 45m, 90s, or an RFC 3339 UTC "
        "time such as 2027-01-31T00:00:00Z; got '" +
        s + "'"));
  }
  int64_t ms = *t;
  if (ms <= now_ms) return Fail(Error::InvalidArgument("expires: must be in the future"));
  return ms;
}

std::string KeyJson(const store::KeyRecord& k, int64_t now_ms, std::string_view raw_key) {
  json::object o;
  o["id"] = k.id;
  o["name"] = k.name;
  o["prefix"] = k.key_prefix;
  json::array scopes;
  for (const auto& s : k.scopes) scopes.emplace_back(s);
  o["scopes"] = std::move(scopes);
  o["rate_limit"] = k.rate_limit_per_minute;
  o["max_sandboxes"] = k.max_sandboxes;
  o["created_at"] = FormatRfc3339(k.created_at_ms);
  o["last_used_at"] = k.last_used_at_ms ? json::value(FormatRfc3339(k.last_used_at_ms)) : nullptr;
  o["expires_at"] = k.expires_at_ms ? json::value(FormatRfc3339(k.expires_at_ms)) : nullptr;
  o["enabled"] = k.enabled;
  o["status"] = k.Status(now_ms);
  o["lineage"] = k.lineage;
  o["replaced_by"] = k.replaced_by.empty() ? json::value(nullptr) : json::value(k.replaced_by);
  if (!raw_key.empty()) o["key"] = raw_key;
  return json::serialize(o);
}

namespace {

Result<std::string> KeyIdParam(const HttpRequest& req) {
  const std::string& id = req.Param("id");
  if (!IsValidId(id, "key_")) return Fail(Error::NotFound("key " + id + " not found"));
  return id;
}

Result<store::NewKey> ParseNewKey(std::string_view text, int64_t now_ms) {
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(text));
  store::NewKey k;
  ASB_ASSIGN_OR_RETURN(auto name, body.String("name"));
  if (!name) return Fail(Error::InvalidArgument("name: required"));
  k.name = *name;
  // scopes: an array of names or one comma-separated string.
  auto arr = body.StringArray("scopes");
  if (arr) {
    if (*arr) {
      ASB_ASSIGN_OR_RETURN(k.scopes, store::ParseScopes(store::JoinScopes(**arr)));
    }
  } else {
    ASB_ASSIGN_OR_RETURN(auto text_scopes, body.String("scopes"));
    if (!text_scopes) return Fail(arr.error());
    ASB_ASSIGN_OR_RETURN(k.scopes, store::ParseScopes(*text_scopes));
  }
  ASB_ASSIGN_OR_RETURN(auto rate, body.Integer("rate_limit", 0, 1'000'000'000));
  if (rate) k.rate_limit_per_minute = *rate;
  ASB_ASSIGN_OR_RETURN(auto maxsb, body.Integer("max_sandboxes", 0, 1'000'000));
  if (maxsb) k.max_sandboxes = *maxsb;
  ASB_ASSIGN_OR_RETURN(auto expires_at, body.String("expires_at"));
  ASB_ASSIGN_OR_RETURN(auto expires_in, body.String("expires_in"));
  ASB_TRY(body.Finish());
  if (expires_at && expires_in) {
    return Fail(Error::InvalidArgument("give expires_at or expires_in, not both"));
  }
  if (expires_at || expires_in) {
    ASB_ASSIGN_OR_RETURN(k.expires_at_ms,
                         ParseExpiry(expires_at ? *expires_at : *expires_in, now_ms));
  }
  return k;
}

}  // namespace

void AddKeyRoutes(Router& router, AuthLayer& auth) {
  auto create = Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
    int64_t now = auth.clock().NowUnixMs();
    ASB_ASSIGN_OR_RETURN(store::NewKey nk, ParseNewKey(req.body, now));
    ASB_ASSIGN_OR_RETURN(store::CreatedKey c, auth.keys().Create(nk, now));
    return JsonResponse(201, KeyJson(c.record, now, c.raw_key));
  });
  auto list = Wrap([&auth](HttpRequest&) -> Result<HttpResponse> {
    int64_t now = auth.clock().NowUnixMs();
    ASB_ASSIGN_OR_RETURN(auto all, auth.keys().List());
    std::string body = "{\"keys\":[";
    for (size_t i = 0; i < all.size(); ++i) {
      if (i) body += ",";
      body += KeyJson(all[i], now);
    }
    body += "]}";
    return JsonResponse(200, body);
  });
  auto get = Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
    ASB_ASSIGN_OR_RETURN(std::string id, KeyIdParam(req));
    ASB_ASSIGN_OR_RETURN(auto k, auth.keys().Get(id));
    return JsonResponse(200, KeyJson(k, auth.clock().NowUnixMs()));
  });
  auto set_enabled = [&auth](bool enabled) {
    return Wrap([&auth, enabled](HttpRequest& req) -> Result<HttpResponse> {
      ASB_ASSIGN_OR_RETURN(std::string id, KeyIdParam(req));
      int64_t now = auth.clock().NowUnixMs();
      ASB_TRY(auth.keys().SetEnabled(id, enabled, now));
      ASB_ASSIGN_OR_RETURN(auto k, auth.keys().Get(id));
      return JsonResponse(200, KeyJson(k, now));
    });
  };
  auto rotate = Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
    ASB_ASSIGN_OR_RETURN(std::string id, KeyIdParam(req));
    int64_t now = auth.clock().NowUnixMs();
    ASB_ASSIGN_OR_RETURN(store::CreatedKey c, auth.keys().Rotate(id, now));
    return JsonResponse(201, KeyJson(c.record, now, c.raw_key));
  });
  auto del = Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
    ASB_ASSIGN_OR_RETURN(std::string id, KeyIdParam(req));
    ASB_TRY(auth.keys().Delete(id));
    return NoContent();
  });
  for (std::string base : {"/v1/keys", "/admin/keys"}) {
    router.Add("POST", base, create);
    router.Add("GET", base, list);
    router.Add("GET", base + "/{id}", get);
    router.Add("POST", base + "/{id}/revoke", set_enabled(false));
    router.Add("POST", base + "/{id}/enable", set_enabled(true));
    router.Add("POST", base + "/{id}/rotate", rotate);
    router.Add("DELETE", base + "/{id}", del);
  }
}

}  // namespace asb::api
