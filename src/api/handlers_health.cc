// GET /healthz: liveness of the server process (no manager call, never blocks):
// {"status": "ok", "version", "backend"} (seed B's Health shape).
#include <boost/json.hpp>

#include "api/handlers.h"

namespace asb::api {

HttpResponse HealthResponse(std::string_view backend) {
  boost::json::object o;
  o["status"] = "ok";
  o["version"] = ASB_VERSION;
  o["backend"] = backend;
  return JsonResponse(200, boost::json::serialize(o));
}

void AddHealthRoutes(Router& router, ApiContext& ctx) {
  RouteOptions fast;
  fast.blocking = false;
  router.Add(
      "GET", "/healthz",
      [backend = ctx.backend_name](HttpRequest&) { return HealthResponse(backend); }, fast);
}

}  // namespace asb::api
