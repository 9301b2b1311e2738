// GET /healthz: liveness of the server process (no manager call, never blocks).
#include <boost/json.hpp>

#include "api/handlers.h"

namespace asb::api {

void AddHealthRoutes(Router& router, ApiContext& /*ctx*/) {
  RouteOptions fast;
  fast.blocking = false;
  router.Add("GET", "/healthz", [](HttpRequest&) {
    boost::json::object o;
    o["status"] = "ok";
    o["version"] = ASB_VERSION;
    return JsonResponse(200, boost::json::serialize(o));
  }, fast);
}

}  // namespace asb::api
