// The only translation unit of the client that includes Beast and Asio (see http_client.h).
#include "api/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <chrono>

namespace asb::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

void FillError(ClientResponse* r) {
  if (r->status < 400) return;
  boost::json::error_code ec;
  boost::json::value v = boost::json::parse(r->body, ec);
  if (ec || !v.is_object()) return;
  const boost::json::value* e = v.as_object().if_contains("error");
  if (e == nullptr || !e->is_object()) return;
  if (auto* c = e->as_object().if_contains("code"); c && c->is_string()) {
    r->error_code = std::string(c->as_string());
  }
  if (auto* m = e->as_object().if_contains("message"); m && m->is_string()) {
    r->error_message = std::string(m->as_string());
  }
}

template <typename Fields>
void CopyHeaders(const Fields& fields, ClientResponse* r) {
  for (const auto& f : fields) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r->headers[name] = std::string(f.value());
  }
}

Error NetError(const beast::error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout) return Error::Timeout(std::string(what) + ": timed out");
  return Error(ErrorCode::kBackend, std::string(what) + ": " + ec.message(), ec.value());
}

}  // namespace

Result<HttpClient> HttpClient::Create(std::string_view base_url, std::string api_key) {
  constexpr std::string_view kScheme = "http://";
  if (base_url.substr(0, kScheme.size()) != kScheme) {
    return Fail(Error::InvalidArgument("URL must start with http://: " + std::string(base_url)));
  }
  std::string_view rest = base_url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  std::string prefix = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  HttpClient c;
  size_t colon = hostport.rfind(':');
  if (!hostport.empty() && hostport[0] == '[') {  // [::1]:8080
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) return Fail(Error::InvalidArgument("bad URL host"));
    c.host_ = std::string(hostport.substr(1, close - 1));
    c.port_ = close + 1 < hostport.size() && hostport[close + 1] == ':'
                  ? std::string(hostport.substr(close + 2))
                  : "80";
  } else if (colon != std::string_view::npos) {
    c.host_ = std::string(hostport.substr(0, colon));
    c.port_ = std::string(hostport.substr(colon + 1));
  } else {
    c.host_ = std::string(hostport);
    c.port_ = "80";
  }
  if (c.host_.empty() || c.port_.empty() ||
      c.port_.find_first_not_of("0123456789") != std::string::npos) {
    return Fail(Error::InvalidArgument("bad URL: " + std::string(base_url)));
  }
  c.prefix_ = std::move(prefix);
  c.api_key_ = std::move(api_key);
  return c;
}

namespace {

struct Exchange {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
};

// Connects within 30 s, or within `timeout_ms` (> 0), which then stays the deadline of the
// whole exchange.
Status Connect(Exchange& x, const std::string& host, const std::string& port, int64_t timeout_ms) {
  tcp::resolver resolver(x.ioc);
  beast::error_code ec;
  auto results = resolver.resolve(host, port, ec);
  if (ec) return Fail(Error::Unavailable("resolve " + host + ": " + ec.message()));
  if (timeout_ms > 0) {
    x.stream.expires_after(std::chrono::milliseconds(timeout_ms));
  } else {
    x.stream.expires_after(std::chrono::seconds(30));
  }
  x.stream.connect(results, ec);
  if (ec) {
    return Fail(Error(ErrorCode::kUnavailable,
                      "cannot connect to " + host + ":" + port + ": " + ec.message(), ec.value()));
  }
  return {};
}

}  // namespace

void HttpClient::SetHeader(std::string name, std::string value) {
  for (auto& h : headers_) {
    if (h.first == name) {
      h.second = std::move(value);
      return;
    }
  }
  headers_.emplace_back(std::move(name), std::move(value));
}

Result<ClientResponse> HttpClient::Request(std::string_view method, std::string_view target,
                                           std::string_view body,
                                           std::string_view content_type) const {
  ClientResponse out;
  bool streamed = false;
  auto r = Stream(method, target, body, content_type, [&](std::string_view data) {
    streamed = true;
    out.body.append(data);
    return true;
  });
  if (!r) return Fail(r.error());
  out.status = r->status;
  out.headers = std::move(r->headers);
  if (!streamed) out.body = std::move(r->body);
  out.error_code = std::move(r->error_code);
  out.error_message = std::move(r->error_message);
  return out;
}

Result<ClientResponse> HttpClient::Stream(
    std::string_view method, std::string_view target, std::string_view body,
    std::string_view content_type, const std::function<bool(std::string_view)>& on_data) const {
  Exchange x;
  ASB_TRY(Connect(x, host_, port_, timeout_ms_));
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(prefix_ + std::string(target));
  req.version(11);
  req.set(http::field::host, host_ + ":" + port_);
  req.set(http::field::user_agent, "agent-sandbox-cli");
  req.keep_alive(false);
  if (!api_key_.empty()) req.set(http::field::authorization, "Bearer " + api_key_);
  for (const auto& [name, value] : headers_) req.set(name, value);
  if (!body.empty() || method == "POST" || method == "PUT") {
    req.set(http::field::content_type, content_type);
    req.body() = std::string(body);
    req.prepare_payload();
  }
  beast::error_code ec;
  if (timeout_ms_ <= 0) x.stream.expires_never();  // else the deadline Connect set holds
  http::write(x.stream, req, ec);
  if (ec) return Fail(NetError(ec, "send request"));

  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(x.stream, x.buffer, parser, ec);
  if (ec) return Fail(NetError(ec, "read response"));
  ClientResponse out;
  out.status = static_cast<int>(parser.get().result_int());
  CopyHeaders(parser.get().base(), &out);
  bool stream_out = out.status >= 200 && out.status < 300;
  std::string collected;
  std::vector<char> buf(64 * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = buf.data();
    parser.get().body().size = buf.size();
    http::read_some(x.stream, x.buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return Fail(NetError(ec, "read response body"));
    size_t n = buf.size() - parser.get().body().size;
    if (n == 0) continue;
    std::string_view piece(buf.data(), n);
    if (stream_out) {
      if (!on_data(piece)) break;
    } else {
      collected.append(piece);
    }
  }
  out.body = std::move(collected);
  FillError(&out);
  x.stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return out;
}

}  // namespace asb::api
