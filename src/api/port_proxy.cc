#include "api/port_proxy.h"

#include <chrono>

#include "api/errors.h"
#include "api/text.h"

namespace asb::api {
namespace {

// Hop-by-hop headers (RFC 9110 7.6.1), those we set ourselves, credentials, and Expect (the
// server answers 100-continue itself before it relays the body).
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
                                 "expect",
                                 "authorization",
                                 "x-api-key",
                                 "x-request-id"};
  for (const char* n : kNames) {
    if (lower_name == n) return true;
  }
  return false;
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

void AddHeader(std::string* head, std::string_view name, std::string_view value) {
  head->append(name).append(": ").append(value).append("\r\n");
}

// The client's head of the upstream's answer (ProxyExchange::respond).
bool Respond(const std::string& prefix, const std::string& what, bool websocket, int status,
             const ProxyExchange::Headers& headers, HttpResponse* out) {
  if (websocket && status == 101) {
    out->status = 101;
    out->content_type.clear();
    for (const auto& [name, value] : headers) {
      std::string lower = AsciiLower(name);
      if (lower == "content-length" || lower == "transfer-encoding") continue;
      out->headers.emplace_back(name, value);
    }
    return true;
  }
  if (status < 200 || status > 599) {
    *out = ErrorResponse(Error::Backend(what + " answered status " + std::to_string(status)));
    return false;
  }
  out->status = status;
  out->content_type.clear();
  for (const auto& [name, value] : headers) {
    std::string lower = AsciiLower(name);
    if (lower == "content-type") {
      out->content_type = value;
      continue;
    }
    if (Dropped(lower) || lower == "server") continue;
    // Redirects within the app stay behind the proxy.
    if (lower == "location" && !prefix.empty() && value.size() > 1 && value[0] == '/' &&
        value[1] != '/') {
      out->headers.emplace_back(name, prefix + value);
    } else {
      out->headers.emplace_back(name, value);
    }
  }
  return true;
}

}  // namespace

std::shared_ptr<void> LeaseProxyBuffers(const PortProxyOptions& options,
                                        std::string_view request_id, HttpResponse* refused) {
  if (!options.budget) return std::make_shared<int>(0);
  std::shared_ptr<BufferBudget::Lease> lease =
      options.budget->Acquire(kProxyLeaseBytes, options.budget_wait_ms);
  if (lease) return lease;
  *refused = ErrorResponse(
      Error::Unavailable("the port proxy's buffer memory (" +
                         std::to_string(options.budget->capacity() >> 10) +
                         " KiB for the whole server) is in use by other requests; retry later"),
      request_id);
  refused->headers.emplace_back("Retry-After", "1");
  return nullptr;
}

Result<int64_t> ParsePort(std::string_view digits) {
  int64_t v = 0;
  if (digits.empty() || digits.size() > 5) {
    return Fail(Error::InvalidArgument("port must be 1..65535"));
  }
  for (char c : digits) {
    if (c < '0' || c > '9') return Fail(Error::InvalidArgument("port must be 1..65535"));
    v = v * 10 + (c - '0');
  }
  if (v < 1 || v > 65535) return Fail(Error::InvalidArgument("port must be 1..65535"));
  return v;
}

UpstreamRequest PathFormUpstream(const HttpRequest& req, const std::string& sandbox_id,
                                 int64_t port) {
  UpstreamRequest up;
  up.target = UpstreamTarget(req.target);
  up.prefix = "/v1/sandboxes/" + sandbox_id + "/ports/" + std::to_string(port);
  return up;
}

std::shared_ptr<ProxyExchange> MakeProxyExchange(UniqueFd fd, const HttpRequest& req,
                                                 const UpstreamRequest& upstream, int64_t port,
                                                 const PortProxyOptions& options) {
  auto x = std::make_shared<ProxyExchange>();
  x->fd = fd.Release();
  x->chunk_bytes = kProxyChunkBytes;
  x->deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options.timeout_ms);
  x->idle_timeout_s = options.idle_timeout_s;
  x->what = "port " + std::to_string(port);
  x->websocket = AsciiLower(req.Header("upgrade")) == "websocket";

  const std::string& prefix = upstream.prefix;
  std::string& h = x->request_head;
  h = req.method + " " + upstream.target + " HTTP/1.1\r\n";
  for (const auto& [name, value] : req.headers) {
    if (Dropped(name) || (name == "cookie" && upstream.cookie)) continue;
    AddHeader(&h, name, value);
  }
  if (upstream.cookie && !upstream.cookie->empty()) AddHeader(&h, "Cookie", *upstream.cookie);
  AddHeader(&h, "Host",
            upstream.host.empty() ? "127.0.0.1:" + std::to_string(port) : upstream.host);
  if (!prefix.empty()) AddHeader(&h, "X-Forwarded-Prefix", prefix);
  if (!req.Header("host").empty()) AddHeader(&h, "X-Forwarded-Host", req.Header("host"));
  if (!upstream.forwarded_proto.empty()) {
    AddHeader(&h, "X-Forwarded-Proto", upstream.forwarded_proto);
  }
  if (x->websocket) {
    AddHeader(&h, "Upgrade", "websocket");
    AddHeader(&h, "Connection", "Upgrade");
  } else {
    AddHeader(&h, "Connection", "close");
  }
  // The server has parsed the framing: a Content-Length it accepted, or chunked.
  if (std::string_view cl = req.Header("content-length"); !cl.empty()) {
    AddHeader(&h, "Content-Length", cl);
  } else if (!req.Header("transfer-encoding").empty()) {
    AddHeader(&h, "Transfer-Encoding", "chunked");
    x->chunked_body = true;
  } else if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    AddHeader(&h, "Content-Length", "0");
  }
  h += "\r\n";
  x->respond = [prefix, what = x->what, ws = x->websocket](
                   int status, const ProxyExchange::Headers& headers, HttpResponse* out) {
    return Respond(prefix, what, ws, status, headers, out);
  };
  return x;
}

}  // namespace asb::api
