// Exposed ports (issue 10 item 4): an HTTP reverse proxy to 127.0.0.1:{port} inside the
// sandbox, behind the same auth and tenancy as every route, for sandboxes with or without
// network (the connection is made in the sandbox's namespace, not through the bridge).
//   GET                          /v1/sandboxes/{id}/ports/{port}          307 to .../{port}/
//   GET POST PUT PATCH DELETE    /v1/sandboxes/{id}/ports/{port}/{path}   the upstream's answer
// The upstream sees the path after {port} with the query, Host 127.0.0.1:{port},
// X-Forwarded-Prefix (for apps that build links), and never the caller's API key. A WebSocket
// upgrade (Upgrade: websocket) answered 101 turns the connection into a byte relay (server.cc).
// Plain answers are read whole (at most kMaxProxyBody) with Connection: close upstream.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>

#include "api/handlers.h"
#include "common/unique_fd.h"
#include "core/sandbox_manager.h"

namespace asb::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

constexpr uint64_t kMaxProxyBody = 64ull << 20;
constexpr int kUpstreamTimeoutS = 60;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Hop-by-hop headers (RFC 9110 7.6.1) and those we set ourselves.
bool Dropped(const std::string& lower_name) {
  static const char* kNames[] = {"connection",
                                 "keep-alive",
                                 "proxy-connection",
                                 "proxy-authenticate",
                                 "proxy-authorization",
                                 "te",
                                 "trailer",
                                 "transfer-encoding",
                                 "upgrade",
                                 "content-length",
                                 "host",
                                 "authorization",
                                 "x-api-key",
                                 "x-request-id"};
  for (const char* n : kNames) {
    if (lower_name == n) return true;
  }
  return false;
}

Result<int64_t> PortParam(const HttpRequest& req) {
  const std::string& p = req.Param("port");
  int64_t v = 0;
  if (p.empty() || p.size() > 5) return Fail(Error::InvalidArgument("port must be 1..65535"));
  for (char c : p) {
    if (c < '0' || c > '9') return Fail(Error::InvalidArgument("port must be 1..65535"));
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 65535) return Fail(Error::InvalidArgument("port must be 1..65535"));
  return v;
}

// The raw target after /v1/sandboxes/{id}/ports/{port}: "/", "/a/b?x=1".
std::string UpstreamTarget(const std::string& target) {
  size_t pos = 0;
  for (int slashes = 0; slashes < 6; ++slashes) {
    pos = target.find_first_of(slashes == 5 ? "/?" : "/", slashes == 0 ? 0 : pos + 1);
    if (pos == std::string::npos) return "/";
  }
  std::string rest = target.substr(pos);
  if (rest[0] == '?') rest = "/" + rest;
  return rest;
}

Result<HttpResponse> Proxy(core::SandboxManager* m, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
  ASB_ASSIGN_OR_RETURN(int64_t port, PortParam(req));
  ASB_ASSIGN_OR_RETURN(auto conn, m->ConnectPort(OwnerOf(req), id, port));
  UniqueFd fd(conn.fd);
  timeval tv = {kUpstreamTimeoutS, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  boost::asio::io_context io;
  tcp::socket sock(io);
  beast::error_code ec;
  sock.assign(tcp::v4(), fd.Release(), ec);
  if (ec) return Fail(Error(ErrorCode::kBackend, "proxy socket: " + ec.message()));

  const std::string prefix = "/v1/sandboxes/" + id + "/ports/" + std::to_string(port);
  const bool websocket = Lower(req.Header("upgrade")) == "websocket";
  http::request<http::string_body> up;
  up.method_string(req.method);
  up.target(UpstreamTarget(req.target));
  up.version(11);
  for (const auto& [name, value] : req.headers) {
    if (!Dropped(name)) up.set(name, value);
  }
  up.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  up.set("X-Forwarded-Prefix", prefix);
  if (!req.Header("host").empty()) up.set("X-Forwarded-Host", req.Header("host"));
  if (websocket) {
    up.set(http::field::upgrade, "websocket");
    up.set(http::field::connection, "Upgrade");
  } else {
    up.set(http::field::connection, "close");
  }
  up.body() = req.body;
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    up.prepare_payload();
  }
  http::write(sock, up, ec);
  auto upstream_error = [&](std::string_view what) -> tl::unexpected<Error> {
    if (ec == boost::asio::error::would_block || ec == boost::asio::error::timed_out) {
      return Fail(Error::Timeout("port " + std::to_string(port) + " did not answer within " +
                                 std::to_string(kUpstreamTimeoutS) + " s"));
    }
    return Fail(Error(ErrorCode::kBackend, std::string(what) + " port " + std::to_string(port) +
                                               " of the sandbox: " + ec.message()));
  };
  if (ec) return upstream_error("write to");

  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(kMaxProxyBody);
  http::read_header(sock, buf, parser, ec);
  if (ec) return upstream_error("read from");
  HttpResponse out;
  out.sandbox_id = id;
  const auto& head = parser.get();
  if (websocket && head.result_int() == 101) {
    out.status = 101;
    out.content_type.clear();
    for (const auto& f : head) {
      std::string name(f.name_string());
      if (Lower(name) == "content-length" || Lower(name) == "transfer-encoding") continue;
      out.headers.emplace_back(name, std::string(f.value()));
    }
    auto upgraded = std::make_shared<UpgradedStream>();
    upgraded->pending = beast::buffers_to_string(buf.data());
    upgraded->fd = sock.release(ec);
    upgraded->keepalive = conn.keepalive;
    out.stream = std::move(upgraded);
    return out;
  }
  http::read(sock, buf, parser, ec);
  if (ec == http::error::body_limit) {
    return Fail(Error::TooLarge("the answer of port " + std::to_string(port) + " is larger than " +
                                std::to_string(kMaxProxyBody) + " bytes"));
  }
  if (ec) return upstream_error("read from");
  out.status = head.result_int();
  if (out.status < 200 || out.status > 599) {
    return Fail(Error(ErrorCode::kBackend, "port " + std::to_string(port) + " answered status " +
                                               std::to_string(out.status)));
  }
  out.content_type = std::string(head[http::field::content_type]);
  for (const auto& f : head) {
    std::string name(f.name_string());
    std::string lower = Lower(name);
    if (Dropped(lower) || lower == "content-type" || lower == "server") continue;
    std::string value(f.value());
    // Redirects within the app stay behind the proxy.
    if (lower == "location" && value.size() > 1 && value[0] == '/' && value[1] != '/') {
      value = prefix + value;
    }
    out.headers.emplace_back(std::move(name), std::move(value));
  }
  out.body = std::move(parser.get().body());
  return out;
}

}  // namespace

void AddPortRoutes(Router& router, ApiContext& ctx) {
  core::SandboxManager* m = ctx.manager;
  RouteOptions tail;
  tail.tail = true;
  tail.file_body = true;  // request bodies up to max_file_bytes pass through
  auto proxy = Wrap([m](HttpRequest& req) { return Proxy(m, req); });
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
