#include "api/console.h"
#include "api/errors.h"
#include "api/handlers.h"
#include "api/openapi.h"
#include "common/ids.h"

namespace asb::api {

Handler Wrap(std::function<Result<HttpResponse>(HttpRequest&)> fn) {
  return [fn = std::move(fn)](HttpRequest& req) -> HttpResponse {
    Result<HttpResponse> r = fn(req);
    if (!r) {
      HttpResponse e = ErrorResponse(r.error(), req.request_id);
      return e;
    }
    return std::move(*r);
  };
}

std::string OwnerOf(const HttpRequest& req) { return req.owner; }

Result<std::string> SandboxIdParam(const HttpRequest& req) {
  const std::string& id = req.Param("id");
  if (!IsValidId(id, "sb_")) return Fail(Error::NotFound("sandbox " + id + " not found"));
  return id;
}

Router BuildRouter(ApiContext& ctx) {
  Router router;
  AddHealthRoutes(router, ctx);
  AddSandboxRoutes(router, ctx);
  AddNetworkRoutes(router, ctx);
  AddPoolRoutes(router, ctx);
  AddPortRoutes(router, ctx);
  AddE2bRoutes(router, ctx);
  AddPreviewRoutes(router, ctx);
  AddExecRoutes(router, ctx);
  AddProcessRoutes(router, ctx);
  AddCodeRoutes(router, ctx);
  AddFileRoutes(router, ctx);
  AddSnapshotRoutes(router, ctx);
  AddTemplateRoutes(router, ctx);
  AddOpenApiRoutes(router);
  AddSeedARoutes(router, ctx);
  AddConsoleRoutes(router, ctx.console ? ctx.console : std::make_shared<ConsoleAssets>());
  return router;
}

}  // namespace asb::api
