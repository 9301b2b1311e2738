// Warm pools (docs/adr/0027-warm-pools.md, core/warm_pool.h), the operator's (scope admin):
//   GET /v1/pools                   200 {"pools": [pool...]}
//   PUT /v1/pools/{template}        {size, network?}  200 pool: the wanted size of the pool of
//                                   that template (network: its networked pool); 0 ends it
// A pool is {"template", "network", "size", "ready", "hits", "misses", "last_error"}.
#include <boost/json.hpp>

#include "api/handlers.h"
#include "api/json_body.h"
#include "core/sandbox_manager.h"

namespace asb::api {
namespace {

namespace json = boost::json;

json::object PoolJson(const core::WarmPoolStatus& p) {
  json::object o;
  o["template"] = p.template_name;
  o["network"] = p.network;
  o["size"] = p.size;
  o["ready"] = p.ready;
  o["hits"] = p.hits;
  o["misses"] = p.misses;
  o["last_error"] = p.last_error.empty() ? json::value(nullptr) : json::value(p.last_error);
  return o;
}

}  // namespace

void AddPoolRoutes(Router& router, ApiContext& ctx) {
  core::SandboxManager* m = ctx.manager;
  router.Add("GET", "/v1/pools", Wrap([m](HttpRequest&) -> Result<HttpResponse> {
               json::array pools;
               for (const auto& p : m->pools().Pools()) pools.emplace_back(PoolJson(p));
               json::object o;
               o["pools"] = std::move(pools);
               return JsonResponse(200, json::serialize(o));
             }));
  router.Add("PUT", "/v1/pools/{template}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               const std::string& name = req.Param("template");
               // The template must exist now: a pool of nothing would only log failures.
               if (auto t = m->templates().Find(name); !t) {
                 return Fail(Error::NotFound(t.error().message()));
               }
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto size,
                                    body.Integer("size", 0, m->config().limits.max_sandboxes));
               ASB_ASSIGN_OR_RETURN(auto network, body.Bool("network"));
               ASB_TRY(body.Finish());
               if (!size) return Fail(Error::InvalidArgument("size: required"));
               ASB_TRY(m->pools().Resize(name, network.value_or(false), *size));
               for (const auto& p : m->pools().Pools()) {
                 if (p.template_name == name && p.network == network.value_or(false)) {
                   return JsonResponse(200, json::serialize(PoolJson(p)));
                 }
               }
               core::WarmPoolStatus ended;  // size 0 of a pool that never served: gone
               ended.template_name = name;
               ended.network = network.value_or(false);
               return JsonResponse(200, json::serialize(PoolJson(ended)));
             }));
}

}  // namespace asb::api
