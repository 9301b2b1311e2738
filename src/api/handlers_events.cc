// Audit trail routes (api/AUTH.md; scope exec — a non-admin key reads only its own
// lineage's events, an admin key reads all):
//   GET /v1/events?sandbox_id=&key_id=&since=&limit=&cursor=&order=
//   GET /v1/sandboxes/{id}/events?since=&limit=&cursor=&order=
// 200 {"events":[{seq, time, request_id, key_id, sandbox_id, action, target, status, result,
// exit_code, duration_ms}, ...], "next_cursor": "<seq>" | null}, newest first (`order=desc`,
// the default: a console and a person want the latest) or oldest first (`order=asc`, for a
// reader that follows the trail). `since` is an RFC 3339 time or Unix milliseconds; `limit`
// 1..1000 (default 100); `cursor` is the next_cursor of the previous page in the same order. A
// sandbox the caller cannot see, and did not create, answers 404.
#include <boost/json.hpp>

#include "api/auth.h"
#include "api/config.h"
#include "api/handlers.h"
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

json::object EventJson(const store::EventRecord& e) {
  json::object o;
  o["seq"] = e.seq;
  o["time"] = FormatRfc3339(e.time_ms);
  o["request_id"] = e.request_id;
  o["key_id"] = e.key_id.empty() ? json::value(nullptr) : json::value(e.key_id);
  o["sandbox_id"] = e.sandbox_id.empty() ? json::value(nullptr) : json::value(e.sandbox_id);
  o["action"] = e.action;
  o["target"] = e.target;
  o["status"] = e.status;
  o["result"] = e.result;
  o["exit_code"] = e.exit_code ? json::value(*e.exit_code) : json::value(nullptr);
  o["duration_ms"] = e.duration_ms;
  return o;
}

Result<store::EventFilter> ParsePaging(const HttpRequest& req) {
  store::EventFilter f;
  if (const std::string* since = req.Query("since")) {
    if (!since->empty() && since->find_first_not_of("0123456789") == std::string::npos) {
      ASB_ASSIGN_OR_RETURN(f.since_ms, ParseInteger(*since, 0, INT64_MAX / 2));
    } else {
      auto t = ParseRfc3339Ms(*since);
      if (!t) return Fail(Error::InvalidArgument("since: " + t.error().message()));
      f.since_ms = *t;
    }
  }
  if (const std::string* limit = req.Query("limit")) {
    auto n = ParseInteger(*limit, 1, 1000);
    if (!n) return Fail(Error::InvalidArgument("limit: " + n.error().message()));
    f.limit = *n;
  }
  if (const std::string* order = req.Query("order")) {
    if (*order != "asc" && *order != "desc") {
      return Fail(Error::InvalidArgument("order: asc or desc"));
    }
    f.newest_first = *order == "desc";
  } else {
    f.newest_first = true;
  }
  if (const std::string* cursor = req.Query("cursor")) {
    auto n = ParseInteger(*cursor, 0, INT64_MAX / 2);
    if (!n) return Fail(Error::InvalidArgument("cursor: not a cursor from next_cursor"));
    (f.newest_first ? f.before_seq : f.after_seq) = *n;
  }
  if (!req.owner.empty()) f.owner = req.owner;  // a tenant sees its own lineage's events
  return f;
}

HttpResponse Page(const std::vector<store::EventRecord>& events, const store::EventFilter& f) {
  json::array list;
  for (const auto& e : events) list.emplace_back(EventJson(e));
  json::object o;
  o["events"] = std::move(list);
  bool more = static_cast<int64_t>(events.size()) == f.limit;
  o["next_cursor"] = more ? json::value(std::to_string(events.back().seq)) : json::value(nullptr);
  return JsonResponse(200, json::serialize(o));
}

// The caller may read the events of sandbox `id` if it may see the sandbox now, or if its
// lineage created it (a destroyed sandbox keeps its trail). Another tenant's sandbox answers
// 404 even though that tenant's own failed attempts on it are recorded under its key.
Status CheckVisible(AuthLayer& auth, const HttpRequest& req, const std::string& id) {
  if (auth.manager().lifecycle().Get(OwnerOf(req), id)) return {};
  store::EventFilter created;
  created.sandbox_id = id;
  if (!req.owner.empty()) created.owner = req.owner;
  created.limit = 1000;
  ASB_ASSIGN_OR_RETURN(auto events, auth.events().List(created));
  for (const auto& e : events) {
    if (e.action == "sandbox.create" && e.status == 201) return {};
  }
  return Fail(Error::NotFound("sandbox " + id + " not found"));
}

}  // namespace

void AddEventRoutes(Router& router, AuthLayer& auth) {
  router.Add("GET", "/v1/events", Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(store::EventFilter f, ParsePaging(req));
               if (const std::string* s = req.Query("sandbox_id"); s && !s->empty()) {
                 f.sandbox_id = *s;
               }
               if (const std::string* k = req.Query("key_id"); k && !k->empty()) f.key_id = *k;
               ASB_ASSIGN_OR_RETURN(auto events, auth.events().List(f));
               return Page(events, f);
             }));
  router.Add("GET", "/v1/sandboxes/{id}/events",
             Wrap([&auth](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(store::EventFilter f, ParsePaging(req));
               f.sandbox_id = id;
               ASB_TRY(CheckVisible(auth, req, id));
               ASB_ASSIGN_OR_RETURN(auto events, auth.events().List(f));
               HttpResponse r = Page(events, f);
               r.sandbox_id = id;
               return r;
             }));
}

}  // namespace asb::api
