// The second translation unit of the server that includes Beast and Asio (see proxy_relay.h).
// Its loops follow Beast's relay example (example/doc/http_examples.hpp, `relay`): a parser
// with a buffer_body reads a chunk into our buffer, a serializer with a buffer_body writes it,
// and the next read starts only when the write has completed.
#include "api/proxy_relay.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <chrono>
#include <optional>
#include <tuple>
#include <vector>

#include "api/beast_request.h"
#include "api/errors.h"

namespace asb::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using net::awaitable;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

namespace {

// Informational answers (100, 103) skipped before the real one, at most.
constexpr int kMaxInformational = 8;

// Sends `r` whole (an error before the answer's head) and ends the connection. `r` by
// reference: the callers' temporaries outlive the co_await (GCC 12 mishandles by-value class
// parameters of coroutines, see server.cc RunBlocking).
awaitable<int> SendWhole(beast::tcp_stream& client, const HttpResponse& r, const std::string& rid,
                         int write_timeout_s) {
  http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
  AddCommonHeaders(res, r, rid);
  res.keep_alive(false);
  res.body() = r.body;
  res.prepare_payload();
  client.expires_after(std::chrono::seconds(write_timeout_s));
  auto [ec, n] = co_await http::async_write(client, res, kTuple);
  co_return ec ? 0 : r.status;
}

// Copies bytes from `from` to `to` through `buf` until either fails or ends.
awaitable<void> Pump(tcp::socket& from, tcp::socket& to, net::mutable_buffer buf) {
  for (;;) {
    auto [ec, n] = co_await from.async_read_some(buf, kTuple);
    if (ec) co_return;
    auto [wec, wn] = co_await net::async_write(to, net::buffer(buf.data(), n), kTuple);
    if (wec) co_return;
  }
}

}  // namespace

awaitable<ProxyRelayResult> RelayProxy(beast::tcp_stream& client, beast::flat_buffer& client_buffer,
                                       http::request_parser<http::string_body>& request,
                                       beast::tcp_stream& upstream, ProxyExchange& x,
                                       const ProxyRelayOptions& options) {
  ProxyRelayResult out;
  const std::string& rid = options.request_id;
  // Each wait ends by the exchange's deadline, whatever its own timeout.
  auto due = [&x](int seconds) {
    return std::min(Clock::now() + std::chrono::seconds(seconds), x.deadline);
  };
  auto timed_out = [&x](const beast::error_code& ec) {
    return ec == beast::error::timeout || Clock::now() >= x.deadline;
  };
  auto late = [&x] { return Clock::now() >= x.deadline ? "the proxy's deadline" : "the timeout"; };
  auto upstream_error = [&](const beast::error_code& ec, std::string_view what) {
    if (timed_out(ec)) {
      return ErrorResponse(Error::Timeout(x.what + " did not answer within " + late()), rid);
    }
    return ErrorResponse(
        Error::Backend(std::string(what) + " " + x.what + " of the sandbox: " + ec.message()), rid);
  };
  std::vector<char> chunk(x.chunk_bytes);

  // 1. The request's head, then its body as it arrives, one chunk at a time.
  upstream.expires_at(due(x.idle_timeout_s));
  auto [hec, hn] = co_await net::async_write(upstream, net::buffer(x.request_head), kTuple);
  beast::error_code upstream_broken = hec;
  bool body_done = request.is_done();
  if (!body_done && !upstream_broken) {
    if (request.get()[http::field::expect] == "100-continue") {
      http::response<http::empty_body> cont{http::status::continue_, 11};
      client.expires_at(due(options.write_timeout_s));
      auto [cec, cn] = co_await http::async_write(client, cont, kTuple);
      if (cec) co_return out;  // the client left
    }
    // A read takes at most the buffer's free capacity (Beast's read_size): without room for a
    // chunk, it would move the body ~1 KiB at a time.
    client_buffer.reserve(x.chunk_bytes);
    http::request_parser<http::buffer_body> body(std::move(request));
    body.body_limit(options.body_limit);
    while (!body.is_done()) {
      body.get().body().data = chunk.data();
      body.get().body().size = chunk.size();
      client.expires_at(due(options.body_timeout_s));
      auto [rec, rn] = co_await http::async_read_some(client, client_buffer, body, kTuple);
      if (rec == http::error::need_buffer) rec = {};
      if (rec == http::error::body_limit) {
        out.linger = true;
        out.note = "request body over the limit";
        out.status =
            co_await SendWhole(client,
                               ErrorResponse(413, "payload_too_large",
                                             "request body too large (limit " +
                                                 std::to_string(options.body_limit) + " bytes)"),
                               rid, options.write_timeout_s);
        co_return out;
      }
      if (rec) {
        if (Clock::now() >= x.deadline) {
          out.note = "cut at the proxy's deadline while the request body arrived";
          out.status = co_await SendWhole(
              client,
              ErrorResponse(Error::Timeout("the request did not complete within the proxy's "
                                           "deadline"),
                            rid),
              rid, options.write_timeout_s);
        } else {
          out.note = "client went away: " + rec.message();
        }
        co_return out;
      }
      size_t n = chunk.size() - body.get().body().size;
      if (n == 0) continue;
      upstream.expires_at(due(x.idle_timeout_s));
      beast::error_code wec;
      if (x.chunked_body) {
        std::tie(wec, std::ignore) = co_await net::async_write(
            upstream, http::make_chunk(net::buffer(chunk.data(), n)), kTuple);
      } else {
        std::tie(wec, std::ignore) =
            co_await net::async_write(upstream, net::buffer(chunk.data(), n), kTuple);
      }
      if (wec) {  // the upstream may have answered early (a 413 of its own): read on
        upstream_broken = wec;
        break;
      }
    }
    body_done = body.is_done();
    if (body_done && x.chunked_body) {
      upstream.expires_at(due(x.idle_timeout_s));
      std::tie(upstream_broken, std::ignore) =
          co_await net::async_write(upstream, http::make_chunk_last(), kTuple);
    }
  }
  out.linger = !body_done;

  // 2. The answer's head (informational answers but a 101 skipped).
  beast::flat_buffer ubuf(x.chunk_bytes);  // at most one chunk, and room for one
  ubuf.reserve(x.chunk_bytes);
  std::optional<http::response_parser<http::buffer_body>> rp;
  for (int i = 0;; ++i) {
    rp.emplace();
    rp->header_limit(static_cast<uint32_t>(x.chunk_bytes));
    rp->body_limit(boost::none);
    upstream.expires_at(due(x.idle_timeout_s));
    auto [ec, n] = co_await http::async_read_header(upstream, ubuf, *rp, kTuple);
    if (ec) {
      if (upstream_broken && !timed_out(ec)) ec = upstream_broken;
      out.note = timed_out(ec) ? std::string("no answer within ") + late() : ec.message();
      out.status =
          co_await SendWhole(client, upstream_error(ec, "read from"), rid, options.write_timeout_s);
      co_return out;
    }
    int st = rp->get().result_int();
    if (st >= 100 && st < 200 && st != 101 && i < kMaxInformational) continue;
    break;
  }
  const int status = rp->get().result_int();
  ProxyExchange::Headers headers;
  for (const auto& f : rp->get()) {
    headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  HttpResponse head;
  if (!x.respond(status, headers, &head)) {
    out.note = "unusable answer";
    out.status = co_await SendWhole(client, head, rid, options.write_timeout_s);
    co_return out;
  }

  // 3a. An upgrade: the head, then bytes both ways (half a chunk each) until either side ends.
  if (status == 101) {
    using namespace net::experimental::awaitable_operators;
    http::response<http::empty_body> res{http::status::switching_protocols, 11};
    AddCommonHeaders(res, head, rid);
    client.expires_after(std::chrono::seconds(options.write_timeout_s));
    auto [ec, n] = co_await http::async_write(client, res, kTuple);
    if (ec) co_return out;
    out.status = 101;
    out.note = "relay ended";
    client.expires_never();
    upstream.expires_never();
    if (ubuf.size() > 0) {  // bytes the upstream sent right after its head
      auto [pec, pn] = co_await net::async_write(client.socket(), ubuf.data(), kTuple);
      if (pec) co_return out;
      ubuf.consume(ubuf.size());
    }
    if (client_buffer.size() > 0) {  // the client's bytes that arrived with its request
      auto [bec, bn] = co_await net::async_write(upstream.socket(), client_buffer.data(), kTuple);
      if (bec) co_return out;
      client_buffer.consume(client_buffer.size());
    }
    size_t half = chunk.size() / 2;
    co_await (Pump(client.socket(), upstream.socket(), net::buffer(chunk.data(), half)) ||
              Pump(upstream.socket(), client.socket(), net::buffer(chunk.data() + half, half)));
    co_return out;
  }

  // 3b. The answer's body, one chunk at a time: the next read waits for the client's write.
  http::response<http::buffer_body> res{static_cast<http::status>(status), 11};
  AddCommonHeaders(res, head, rid);
  bool keep_alive = options.keep_alive && body_done;
  if (auto length = rp->content_length()) {
    res.content_length(*length);
  } else if (status != 204 && status != 304) {
    res.chunked(true);
  }
  res.keep_alive(keep_alive);
  http::response_serializer<http::buffer_body> sr{res};
  client.expires_at(due(options.write_timeout_s));
  auto [wec, wn] = co_await http::async_write_header(client, sr, kTuple);
  if (wec) {
    out.note = "client went away: " + wec.message();
    co_return out;
  }
  out.status = status;
  while (!sr.is_done()) {
    if (!rp->is_done()) {
      rp->get().body().data = chunk.data();
      rp->get().body().size = chunk.size();
      upstream.expires_at(due(x.idle_timeout_s));
      auto [ec, n] = co_await http::async_read_some(upstream, ubuf, *rp, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {  // cut: the client must not take a truncated body for the whole
        out.note =
            timed_out(ec) ? std::string("answer cut at ") + late() : "answer cut: " + ec.message();
        co_return out;
      }
      res.body().size = chunk.size() - rp->get().body().size;
      // No bytes (a read that only saw the upstream's end, or only framing): no data pointer.
      // A chunked answer would otherwise get a zero-size chunk, which is its terminator, and
      // then the terminator again (found with an HTTP/1.0 app whose body ends at close).
      res.body().data = res.body().size != 0 ? chunk.data() : nullptr;
      res.body().more = !rp->is_done();
    } else {
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = false;
    }
    client.expires_at(due(options.write_timeout_s));
    auto [cec, cn] = co_await http::async_write(client, sr, kTuple);
    if (cec == http::error::need_buffer) cec = {};
    if (cec) {
      out.note = Clock::now() >= x.deadline ? "answer cut at the proxy's deadline"
                                            : "client went away: " + cec.message();
      co_return out;
    }
  }
  out.keep_alive = keep_alive;
  co_return out;
}

}  // namespace asb::api
