// GET /openapi.json: the OpenAPI document (api/openapi.h).
#include "api/handlers.h"
#include "api/openapi.h"

namespace asb::api {

void AddOpenApiRoutes(Router& router) {
  RouteOptions fast;
  fast.blocking = false;
  router.Add(
      "GET", "/openapi.json",
      [](HttpRequest&) { return JsonResponse(200, std::string(OpenApiJson())); }, fast);
}

}  // namespace asb::api
