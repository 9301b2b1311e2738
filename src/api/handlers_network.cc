// Network policy of a sandbox (ADR 0013; isolation/net/policy.h has the rule syntax):
//   GET /v1/sandboxes/{id}/network   200 policy
//   PUT /v1/sandboxes/{id}/network   {allow_out?, deny_out?, bandwidth_kbit?, burst_kbit?}
//                                    200 policy (replaces the whole policy, effective at once)
#include "api/handlers.h"
#include "core/sandbox_manager.h"
#include "isolation/net/policy.h"

namespace asb::api {

void AddNetworkRoutes(Router& router, ApiContext& ctx) {
  core::NetworkService* m = &ctx.manager->network();
  router.Add("GET", "/v1/sandboxes/{id}/network",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(auto p, m->GetNetwork(OwnerOf(req), id));
               HttpResponse r = JsonResponse(200, isolation::net::PolicyToJson(p));
               r.sandbox_id = id;
               return r;
             }));
  router.Add("PUT", "/v1/sandboxes/{id}/network",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(
                   auto policy, isolation::net::PolicyFromJson(req.body.empty() ? "{}" : req.body));
               ASB_ASSIGN_OR_RETURN(auto p, m->SetNetwork(OwnerOf(req), id, policy));
               HttpResponse r = JsonResponse(200, isolation::net::PolicyToJson(p));
               r.sandbox_id = id;
               return r;
             }));
}

}  // namespace asb::api
