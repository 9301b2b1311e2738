// Exposed ports (ADR 0013): an HTTP reverse proxy to 127.0.0.1:{port} inside the
// sandbox, behind the same auth and tenancy as every route, for sandboxes with or without
// network (the connection is made in the sandbox's namespace, not through the bridge).
//   GET                          /v1/sandboxes/{id}/ports/{port}          307 to .../{port}/
//   GET POST PUT PATCH DELETE    /v1/sandboxes/{id}/ports/{port}/{path}   the upstream's answer
// The handler leases the exchange's buffers, connects and hands the exchange to the server,
// which streams both bodies (api/port_proxy.h, api/proxy_relay.h; ADR 0014): no body is held
// whole, and no pool thread waits on the upstream.
#include "api/handlers.h"
#include "api/port_proxy.h"
#include "common/unique_fd.h"
#include "core/sandbox_manager.h"

namespace asb::api {
namespace {

Result<int64_t> PortParam(const HttpRequest& req) { return ParsePort(req.Param("port")); }

Result<HttpResponse> Proxy(core::NetworkService* m, const PortProxyOptions& options,
                           HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
  ASB_ASSIGN_OR_RETURN(int64_t port, PortParam(req));
  return ProxyToPort(*m, OwnerOf(req), id, port, req, PathFormUpstream(req, id, port), options);
}

}  // namespace

Result<HttpResponse> ProxyToPort(core::NetworkService& m, const std::string& owner,
                                 const std::string& id, int64_t port, const HttpRequest& req,
                                 const UpstreamRequest& upstream, const PortProxyOptions& options) {
  HttpResponse out;
  std::shared_ptr<void> lease = LeaseProxyBuffers(options, req.request_id, &out);
  if (!lease) return out;
  ASB_ASSIGN_OR_RETURN(auto conn, m.ConnectPort(owner, id, port));
  UniqueFd fd(conn.fd);
  UpstreamRequest up = upstream;
  up.host = conn.host_header;  // the sandbox's mask_request_host, if it has one
  auto x = MakeProxyExchange(std::move(fd), req, up, port, options);
  x->keepalive = {std::move(lease), std::move(conn.keepalive)};
  out.sandbox_id = id;
  out.content_type.clear();
  out.proxy = std::move(x);
  return out;
}

void AddPortRoutes(Router& router, ApiContext& ctx) {
  core::NetworkService* m = &ctx.manager->network();
  RouteOptions tail;
  tail.tail = true;
  tail.file_body = true;    // request bodies up to max_file_bytes pass through
  tail.stream_body = true;  // ... a chunk at a time, by the server's relay
  PortProxyOptions options;
  options.budget = ctx.proxy_budget;
  options.timeout_ms = ctx.proxy_timeout_ms;
  auto proxy = Wrap([m, options](HttpRequest& req) { return Proxy(m, options, req); });
  router.Add("GET", "/v1/sandboxes/{id}/ports/{port}",
             Wrap([](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(int64_t port, PortParam(req));
               HttpResponse r;
               r.status = 307;
               r.content_type.clear();
               r.headers.emplace_back(
                   "Location", "/v1/sandboxes/" + id + "/ports/" + std::to_string(port) + "/");
               r.sandbox_id = id;
               return r;
             }));
  router.Add("GET", "/v1/sandboxes/{id}/ports/{port}/{path}", proxy, tail);
  router.Add("POST", "/v1/sandboxes/{id}/ports/{port}/{path}", proxy, tail);
  router.Add("PUT", "/v1/sandboxes/{id}/ports/{port}/{path}", proxy, tail);
  router.Add("PATCH", "/v1/sandboxes/{id}/ports/{port}/{path}", proxy, tail);
  router.Add("DELETE", "/v1/sandboxes/{id}/ports/{port}/{path}", proxy, tail);
}

}  // namespace asb::api
