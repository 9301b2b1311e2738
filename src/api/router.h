// The one routing table of the REST API (ADR 0007). Routes are
// (method, template) pairs such as ("GET", "/v1/sandboxes/{id}"); a {name} segment matches one
// non-empty path segment and is handed to the handler as req.params["name"]. A path no route
// matches answers 404 not_found; a path that matches with another method answers 405
// method_not_allowed with an Allow header — both in the one error shape (api/errors.h).
// A host route (AddHost) is chosen by the request's Host header before any path is looked at:
// the preview hosts of exposed ports (api/preview.h), where every method and path is the app's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.h"

namespace asb::api {

/// A check of a request's head alone (method, path, headers, route params), run by the server
/// before it reads a single byte of the request's body: an answer refuses the request, and the
/// server sends it and closes the connection (the unread body cannot be skipped). std::nullopt
/// admits the request. The auth layer's key check and E2B's token check are gates, so that
/// nobody without a key or token can make the server buffer a body (ADR 0014, round 3). May
/// block (it looks up keys): the server runs it on the blocking pool.
using HeadGate = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

/// How the server treats a route's request body and handler.
struct RouteOptions {
  /// The body is raw file bytes (PUT files): limited by max_file_bytes + slack instead of the
  /// 1 MiB JSON limit.
  bool file_body = false;
  /// The handler may block (calls the manager): run it on the blocking pool, not an I/O thread.
  bool blocking = true;
  /// The pattern's last {name} takes the rest of the path, '/' included and possibly empty
  /// (the exposed-ports proxy: /v1/sandboxes/{id}/ports/{port}/{path}).
  bool tail = false;
  /// The handler authenticates the request itself with a preview token (handlers_previews.cc):
  /// the auth layer asks for no API key, and a key grants nothing here.
  bool token_auth = false;
  /// The server does not read the request body before the handler: a handler that answers
  /// HttpResponse::proxy has the server relay it (api/proxy_relay.h); with any other answer the
  /// unread body ends the connection.
  bool stream_body = false;
  /// Checked before the body is read (see HeadGate); unset: none.
  HeadGate gate;
};

/// Whether a request belongs to a host route, by its Host header (`host`, "" = none) or other
/// headers (lower-case names: E2B's E2b-Sandbox-Id, handlers_e2b.cc); fills in the params it
/// names.
using HostMatcher =
    std::function<bool(std::string_view host, const std::map<std::string, std::string>& headers,
                       std::map<std::string, std::string>* params)>;

struct Route {
  std::string method;                 // "*" for a host route: every method
  std::string pattern;                // "/v1/sandboxes/{id}/exec"; a host route's name
  std::vector<std::string> segments;  // pattern split at '/'
  Handler handler;
  RouteOptions options;
  HostMatcher host;  // set: a host route
};

class Router {
 public:
  /// Adds a route. Patterns must start with '/'.
  void Add(std::string method, std::string pattern, Handler handler, RouteOptions options = {});
  /// Adds a host route named `name` (for logs and metrics): every request whose Host header
  /// `match` accepts goes to `handler`, whatever its method and path.
  void AddHost(std::string name, HostMatcher match, Handler handler, RouteOptions options = {});

  struct Match {
    const Route* route = nullptr;  // set when found
    std::map<std::string, std::string> params;
    int status = 0;     // 0 when found, else 404 or 405
    std::string allow;  // for 405: "GET, DELETE"
  };
  /// Finds the route for `method` and the decoded `path`: the first host route that accepts
  /// `host` (the Host header; "" = none) and `headers`, else the path routes.
  Match Find(std::string_view method, std::string_view path, std::string_view host = {},
             const std::map<std::string, std::string>& headers = {}) const;

  /// The 404/405 response of a failed Match.
  static HttpResponse NotFoundResponse(const Match& m, std::string_view method,
                                       std::string_view path);

  /// Finds and runs the handler (sets req.route and req.params), or answers 404/405. Used by
  /// tests and by the server for non-blocking routes.
  HttpResponse Dispatch(HttpRequest& req) const;

  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

}  // namespace asb::api
