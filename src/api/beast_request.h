// From a request Beast has parsed to our HttpRequest (api/http_types.h): the one translation
// the server applies to every request, shared by api/server.cc and the HTTP fuzz target
// (fuzz/fuzz_http.cc) so that the fuzzer drives exactly what the server runs; and the common
// headers of every answer (server.cc, proxy_relay.cc). Includes Beast: include it only from
// those.
#pragma once

#include <boost/beast/http.hpp>
#include <cctype>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "api/url.h"

namespace asb::api {

/// Whether a client's X-Request-Id may be echoed: 1-128 of [A-Za-z0-9-_.:].
inline bool SaneRequestId(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ':')) {
      return false;
    }
  }
  return true;
}

/// Method, raw target, decoded path and query (api/url.h) and lower-cased headers (the last
/// of a repeated header wins). The body and request id are left to the caller.
inline HttpRequest ToRequest(
    const boost::beast::http::request<boost::beast::http::string_body>& in) {
  HttpRequest req;
  req.method = std::string(in.method_string());
  req.target = std::string(in.target());
  SplitTarget(req.target, &req.path, &req.query);
  for (const auto& field : in) {
    std::string name(field.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers[name] = std::string(field.value());
  }
  return req;
}

/// The headers every answer carries (Server, X-Request-Id), its Content-Type when set, and
/// the response's own headers.
template <typename Body>
void AddCommonHeaders(boost::beast::http::response<Body>& res, const HttpResponse& r,
                      const std::string& request_id) {
  namespace http = boost::beast::http;
  res.set(http::field::server, "agent-sandbox");
  res.set("X-Request-Id", request_id);
  if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);
  for (const auto& [name, value] : r.headers) res.set(name, value);
}

}  // namespace asb::api
