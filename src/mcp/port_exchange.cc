#include "mcp/port_exchange.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <optional>

namespace asb::mcp {

namespace http = boost::beast::http;

namespace {

constexpr int64_t kPollMs = 200;  // how often a wait looks at the cancel flag
constexpr uint32_t kHeaderLimit = 64 * 1024;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Head(const std::string& sandbox_id, const PortRequest& req) {
  std::string h = req.method + " " + req.path + " HTTP/1.1\r\n";
  for (const auto& [name, value] : req.headers) h += name + ": " + value + "\r\n";
  h += "Host: 127.0.0.1:" + std::to_string(req.port) + "\r\n";
  h += "X-Forwarded-Prefix: /v1/sandboxes/" + sandbox_id + "/ports/" + std::to_string(req.port) +
       "\r\n";
  h += "Connection: close\r\n";
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    h += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  }
  return h + "\r\n";
}

class Exchange {
 public:
  Exchange(UniqueFd fd, const PortRequest& req) : fd_(std::move(fd)), req_(req) {
    deadline_ = NowMs() + req.timeout_ms;
    int fl = fcntl(fd_.get(), F_GETFL);
    if (fl >= 0) (void)fcntl(fd_.get(), F_SETFL, fl | O_NONBLOCK);
  }

  // Waits for `events`; nullopt when ready, else the error.
  std::optional<ToolError> Wait(short events) {
    for (;;) {
      if (req_.cancelled && req_.cancelled->load()) {
        return ToolError{"cancelled", "the request was cancelled"};
      }
      int64_t left = deadline_ - NowMs();
      if (left <= 0) {
        return ToolError{"timeout", "port " + std::to_string(req_.port) +
                                        " did not answer within " +
                                        std::to_string(req_.timeout_ms) + " ms"};
      }
      pollfd p{fd_.get(), events, 0};
      int n = poll(&p, 1, static_cast<int>(std::min(left, kPollMs)));
      if (n > 0) return std::nullopt;
      if (n < 0 && errno != EINTR) return ToolError{"backend_error", "waiting for the port failed"};
    }
  }

  std::optional<ToolError> Send(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        if (auto e = Wait(POLLOUT)) return e;
      } else {
        return ToolError{"backend_error", "port " + std::to_string(req_.port) +
                                              " closed the connection while the request was sent"};
      }
    }
    return std::nullopt;
  }

  // Some bytes into `out` ("" at EOF); nullopt on success.
  std::optional<ToolError> Receive(std::string* out) {
    char buf[64 * 1024];
    for (;;) {
      ssize_t n = recv(fd_.get(), buf, sizeof buf, 0);
      if (n >= 0) {
        out->assign(buf, static_cast<size_t>(n));
        return std::nullopt;
      }
      if (errno != EAGAIN && errno != EINTR) {
        out->clear();  // a reset: treated as the end
        return std::nullopt;
      }
      if (auto e = Wait(POLLIN)) return e;
    }
  }

 private:
  UniqueFd fd_;
  const PortRequest& req_;
  int64_t deadline_ = 0;
};

ToolError Malformed(const PortRequest& req, std::string_view what) {
  return {"backend_error", "port " + std::to_string(req.port) + " " + std::string(what)};
}

}  // namespace

ToolResult<PortResponse> ExchangeOverSocket(UniqueFd fd, const std::string& sandbox_id,
                                            const PortRequest& req) {
  Exchange x(std::move(fd), req);
  if (auto e = x.Send(Head(sandbox_id, req))) return tl::unexpected<ToolError>(*e);
  if (auto e = x.Send(req.body)) return tl::unexpected<ToolError>(*e);

  http::response_parser<http::string_body> p;
  p.header_limit(kHeaderLimit);
  p.body_limit(boost::none);
  p.eager(true);
  if (req.method == "HEAD") p.skip(true);
  PortResponse out;
  std::string in, piece;
  while (!p.is_done()) {
    if (auto e = x.Receive(&piece)) return tl::unexpected<ToolError>(*e);
    boost::beast::error_code ec;
    if (piece.empty()) {  // EOF: the end of a body without a length, else too early
      if (!p.is_header_done()) return tl::unexpected(Malformed(req, "closed before answering"));
      p.put_eof(ec);
      if (ec) return tl::unexpected(Malformed(req, "closed before its answer was complete"));
      break;
    }
    in += piece;
    while (!in.empty() && !p.is_done()) {
      size_t used = p.put(boost::asio::buffer(in), ec);
      in.erase(0, used);
      if (ec == http::error::need_more) break;
      if (ec) return tl::unexpected(Malformed(req, "answered something that is not HTTP/1.1"));
      if (used == 0) break;
    }
    if (p.is_header_done() && p.get().body().size() > req.max_body_bytes) {
      out.truncated = true;
      break;
    }
  }
  const auto& res = p.get();
  out.status = static_cast<int>(res.result_int());
  const std::string prefix = "/v1/sandboxes/" + sandbox_id + "/ports/" + std::to_string(req.port);
  for (const auto& f : res.base()) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value(f.value());
    if (name == "location" && value.size() > 1 && value[0] == '/' && value[1] != '/') {
      value = prefix + value;
    }
    out.headers.emplace_back(std::move(name), std::move(value));
  }
  out.body = res.body();
  if (out.body.size() > req.max_body_bytes) {
    out.body.resize(req.max_body_bytes);
    out.truncated = true;
  }
  return out;
}

}  // namespace asb::mcp
