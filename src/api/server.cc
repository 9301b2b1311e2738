// HttpServer: the listener, connection limits, sessions and shutdown (server.h). The streaming
// paths are in server_streams.cc; the state both share is in server_impl.h.
#include "api/server.h"

#include "api/beast_request.h"
#include "api/errors.h"
#include "api/server_body_reader.h"
#include "api/server_impl.h"
#include "api/url.h"
#include "common/ids.h"
#include "common/log.h"

namespace asb::api {

using server_detail::ServeProxy;
using server_detail::WatchPeerClose;

namespace {

// An answer written straight to a socket that is then closed, for connections refused before
// a session exists. It fits in the socket's send buffer, so the non-blocking write does not
// wait. The one error shape, with Retry-After: 1.
std::string OverLimitAnswer(std::string_view message) {
  std::string body = "{\"error\":{\"code\":\"unavailable\",\"message\":\"";
  body += message;
  body += "\"}}";
  return "HTTP/1.1 503 Service Unavailable\r\nServer: agent-sandbox\r\n"
         "Content-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

template <typename Socket>
void AnswerAndClose(Socket& socket, const std::string& answer) {
  beast::error_code wec;
  socket.non_blocking(true, wec);
  socket.write_some(net::buffer(answer), wec);
  socket.shutdown(tcp::socket::shutdown_send, wec);
  socket.close(wec);
}

// The per-address key of a connection: its IP address (IPv4-mapped IPv6 as IPv4).
template <typename Socket>
std::string PeerKey(const Socket& socket) {
  beast::error_code ec;
  tcp::endpoint ep = socket.remote_endpoint(ec);
  if (ec) return "?";
  net::ip::address a = ep.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6());
  }
  return a.to_string();
}

}  // namespace

HttpServer::HttpServer(ServerOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->bound_port; }

Status HttpServer::Listen() {
  beast::error_code ec;
  net::ip::address addr = net::ip::make_address(impl_->options.host, ec);
  if (ec) {
    // Resolve names such as "localhost".
    tcp::resolver resolver(impl_->ioc);
    auto results = resolver.resolve(impl_->options.host, "", ec);
    if (ec || results.empty()) {
      return Fail(Error::InvalidArgument("cannot resolve host " + impl_->options.host));
    }
    addr = results.begin()->endpoint().address();
  }
  tcp::endpoint ep(addr, impl_->options.port);
  auto& acc = impl_->acceptor;
  acc.open(ep.protocol(), ec);
  if (ec) return Fail(Error(ErrorCode::kInternal, "socket: " + ec.message(), ec.value()));
  acc.set_option(net::socket_base::reuse_address(true), ec);
  acc.bind(ep, ec);
  if (ec) {
    ErrorCode code = ec == net::error::address_in_use ? ErrorCode::kConflict : ErrorCode::kInternal;
    return Fail(Error(code,
                      "bind " + impl_->options.host + ":" + std::to_string(impl_->options.port) +
                          ": " + ec.message(),
                      ec.value()));
  }
  acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Fail(Error(ErrorCode::kInternal, "listen: " + ec.message(), ec.value()));
  impl_->bound_port = acc.local_endpoint().port();
  return {};
}

bool HttpServer::Run() {
  Impl& s = *impl_;
  net::co_spawn(s.ioc, s.Accept(), net::detached);
  std::optional<net::signal_set> signals;
  if (s.options.handle_signals) {
    signals.emplace(s.ioc, SIGINT, SIGTERM);
    signals->async_wait([&s](const beast::error_code& ec, int signo) {
      if (ec) return;
      spdlog::info("received signal {}; shutting down gracefully", signo);
      s.BeginShutdown();
    });
  }
  spdlog::info("listening on {}:{}", s.options.host, s.bound_port);
  std::vector<std::thread> threads;
  for (int i = 1; i < s.options.io_threads; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
  bool idle = s.pool.WaitIdle(1000);
  spdlog::info("server stopped{}", idle ? "" : " (handlers still running)");
  return idle;
}

void HttpServer::Stop() {
  Impl* s = impl_.get();
  net::post(s->ioc, [s] { s->BeginShutdown(); });
}

void HttpServer::Impl::BeginShutdown() {
  if (stopping.exchange(true)) return;
  beast::error_code ec;
  acceptor.close(ec);
  // Idle keep-alive connections are closed now; busy ones finish their request first.
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, h] : sessions) {
      net::post(h->executor, [h] {
        if (!h->busy && h->close) h->close();
      });
    }
  }
  net::co_spawn(ioc, Drain(), net::detached);
}

void HttpServer::Impl::MarkAuthenticated(SessionHandle& handle) {
  std::lock_guard<std::mutex> lock(mu);
  if (handle.authenticated) return;
  handle.authenticated = true;
  --unauthenticated;
}

awaitable<void> HttpServer::Impl::Drain() {
  net::steady_timer timer(co_await net::this_coro::executor);
  int64_t deadline = NowMs() + int64_t{options.shutdown_grace_s} * 1000;
  while (SessionCount() > 0 && NowMs() < deadline) {
    timer.expires_after(std::chrono::milliseconds(50));
    co_await timer.async_wait(kTuple);
  }
  if (SessionCount() > 0) {
    spdlog::warn("shutdown grace period over; cutting {} connection(s)", SessionCount());
    std::lock_guard<std::mutex> lock(mu);  // only posts below; nothing here takes `mu`
    for (auto& [id, h] : sessions) {
      h->cut = true;
      net::post(h->executor, [h] {
        if (h->close) h->close();
      });
    }
  }
  // Give cut sessions a moment to unwind (stream bodies get cancelled), then stop.
  deadline = NowMs() + 2000;
  while (SessionCount() > 0 && NowMs() < deadline) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(kTuple);
  }
  ioc.stop();
}

awaitable<void> HttpServer::Impl::Accept() {
  net::steady_timer pause(co_await net::this_coro::executor);
  uint64_t failed = 0;        // accepts failed in a row
  uint64_t refused = 0;       // connections refused in a row at max_connections
  uint64_t peer_refused = 0;  // refused at max_connections_per_ip since the last warning
  int64_t peer_warned_ms = NowMs() - 10000;
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(net::make_strand(ioc), kTuple);
    if (ec) {
      if (stopping || ec == net::error::operation_aborted) co_return;
      // Out of descriptors (EMFILE, ENFILE: a client holding connections up to RLIMIT_NOFILE)
      // or memory: the pending connection keeps the listener readable, so retrying at once
      // spun a core and wrote this warning ~300,000 times a second. Pause, warn once a run.
      if (failed++ == 0) spdlog::warn("accept: {} (retrying every 100 ms)", ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(kTuple);
      continue;
    }
    if (failed > 0) {
      spdlog::info("accept: working again after {} failed attempt(s)", failed);
      failed = 0;
    }
    // Admission (ADR 0014, slow-loris): the total cap, then the per-address cap, then the
    // reserve for authenticated clients; all counted under `mu` with the session table.
    auto handle = std::make_shared<SessionHandle>();
    handle->executor = socket.get_executor();
    handle->peer = PeerKey(socket);
    enum class Refusal { kNone, kTotal, kPeer } refusal = Refusal::kNone;
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      size_t& from_peer = per_peer[handle->peer];
      if (options.max_connections > 0 && sessions.size() >= options.max_connections) {
        refusal = Refusal::kTotal;
      } else if (options.max_connections_per_ip > 0 &&
                 from_peer >= options.max_connections_per_ip) {
        refusal = Refusal::kPeer;
      } else {
        if (options.max_connections > 0 && options.reserved_connections > 0) {
          size_t open_to_all = options.max_connections > options.reserved_connections
                                   ? options.max_connections - options.reserved_connections
                                   : 0;
          handle->probation = unauthenticated >= open_to_all;
        }
        ++from_peer;
        ++unauthenticated;
        id = next_session++;
        sessions.emplace(id, handle);
      }
      if (from_peer == 0) per_peer.erase(handle->peer);
    }
    if (refusal == Refusal::kTotal) {
      static const std::string kOverCap = OverLimitAnswer("too many open connections; retry later");
      AnswerAndClose(socket, kOverCap);
      if (refused++ == 0) {
        spdlog::warn("accept: {} connections open, the most allowed; refusing new ones",
                     options.max_connections);
      }
      continue;
    }
    if (refusal == Refusal::kPeer) {
      static const std::string kOverPeerCap =
          OverLimitAnswer("too many open connections from your address; retry later");
      AnswerAndClose(socket, kOverPeerCap);
      // At most one line per 10 s however many are refused (a log line per refused connection
      // would let the client grow the log at will).
      ++peer_refused;
      if (int64_t now = NowMs(); now - peer_warned_ms >= 10000) {
        spdlog::warn(
            "accept: refused {} connection(s) over the limit of {} per client address "
            "(the latest from {})",
            peer_refused, options.max_connections_per_ip, LogField(handle->peer, 64));
        peer_refused = 0;
        peer_warned_ms = now;
      }
      continue;
    }
    if (refused > 0) {
      spdlog::info("accept: taking connections again after refusing {}", refused);
      refused = 0;
    }
    net::co_spawn(handle->executor, Session(std::move(socket), handle),
                  [this, id, handle](std::exception_ptr e) {
                    if (e) {
                      try {
                        std::rethrow_exception(e);
                      } catch (const std::exception& ex) {
                        spdlog::error("session ended by exception: {}", ex.what());
                      }
                    }
                    std::lock_guard<std::mutex> lock(mu);
                    sessions.erase(id);
                    if (auto it = per_peer.find(handle->peer); it != per_peer.end()) {
                      if (--it->second == 0) per_peer.erase(it);
                    }
                    if (!handle->authenticated) --unauthenticated;
                  });
  }
}

// Runs route.handler, on the blocking pool when the route says so. Exceptions become 500.
awaitable<HttpResponse> HttpServer::Impl::RunHandler(const Route& route, HttpRequest& req) {
  auto call = [&route, &req]() -> HttpResponse {
    try {
      return route.handler(req);
    } catch (const std::exception& e) {
      return ErrorResponse(Error::Internal(std::string("handler threw: ") + e.what()),
                           req.request_id);
    } catch (...) {
      return ErrorResponse(Error::Internal("handler threw"), req.request_id);
    }
  };
  if (!route.options.blocking) co_return call();
  co_return co_await net::async_initiate<decltype(use_awaitable), void(HttpResponse)>(
      [this, &call](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        auto work = net::make_work_guard(net::get_associated_executor(*shared));
        pool.Submit([shared, work, call]() mutable {
          HttpResponse r = call();
          auto ex = net::get_associated_executor(*shared);
          net::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
          work.reset();
        });
      },
      use_awaitable);
}

awaitable<std::optional<HttpResponse>> HttpServer::Impl::RunGate(const HeadGate& gate,
                                                                 const HttpRequest& req) {
  auto call = [&gate, &req]() -> std::optional<HttpResponse> {
    try {
      return gate(req);
    } catch (const std::exception& e) {
      return ErrorResponse(Error::Internal(std::string("gate threw: ") + e.what()), req.request_id);
    }
  };
  co_return co_await net::async_initiate<decltype(use_awaitable),
                                         void(std::optional<HttpResponse>)>(
      [this, &call](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        auto work = net::make_work_guard(net::get_associated_executor(*shared));
        pool.Submit([shared, work, call]() mutable {
          std::optional<HttpResponse> r = call();
          auto ex = net::get_associated_executor(*shared);
          net::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
          work.reset();
        });
      },
      use_awaitable);
}

awaitable<std::optional<HttpResponse>> HttpServer::Impl::ReadBody(
    beast::tcp_stream& stream, beast::flat_buffer& buffer,
    http::request_parser<http::string_body>& parser, size_t limit,
    std::vector<std::unique_ptr<BufferBudget::Lease>>& leases, std::string* gone) {
  // A chunked body is leased a step at a time as it grows; one with a Content-Length at once.
  constexpr uint64_t kLeaseStep = 1 << 20;
  uint64_t leased = 0;
  auto lease = [&](uint64_t bytes) {
    if (!options.body_budget) return true;
    auto l = options.body_budget->Acquire(bytes, 0);
    if (!l) return false;
    leased += bytes;
    leases.push_back(std::move(l));
    return true;
  };
  auto too_large = [limit] {
    return ErrorResponse(413, "payload_too_large",
                         "request body too large (limit " + std::to_string(limit) + " bytes)");
  };
  auto over_budget = [this] {
    spdlog::warn("request bodies held in memory reached --body-buffer-mb ({} MiB); refusing one",
                 options.body_budget->capacity() >> 20);
    HttpResponse r = ErrorResponse(
        503, "unavailable", "the server holds as many request bodies as it may; retry later");
    r.headers.emplace_back("Retry-After", "1");
    return r;
  };
  const boost::optional<uint64_t> length = parser.content_length();
  if (length && *length > limit) co_return too_large();
  if (length && !lease(*length)) co_return over_budget();
  parser.body_limit(limit);  // enforced for chunked bodies
  const auto& head = parser.get();
  if (head[http::field::expect] == "100-continue") {
    http::response<http::empty_body> cont{http::status::continue_, 11};
    stream.expires_after(std::chrono::seconds(options.write_timeout_s));
    co_await http::async_write(stream, cont, kTuple);
  }
  stream.expires_after(std::chrono::seconds(options.body_timeout_s));
  while (!parser.is_done()) {
    auto [bec, bn] = co_await http::async_read_some(stream, buffer, parser, kTuple);
    if (bec == http::error::body_limit) co_return too_large();
    if (bec) {
      *gone = bec.message();
      co_return std::nullopt;
    }
    // What the body holds now, with the string's spare room (it grows by doubling).
    const uint64_t held = parser.get().body().capacity();
    while (!length && held > leased) {
      if (!lease(kLeaseStep)) co_return over_budget();
    }
  }
  co_return std::nullopt;
}

awaitable<void> HttpServer::Impl::Session(tcp::socket socket,
                                          std::shared_ptr<SessionHandle> handle) {
  beast::tcp_stream stream(std::move(socket));
  handle->close = [&stream] {
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream.cancel();
  };
  beast::flat_buffer buffer;
  bool linger = false;  // the last answer refused a body that may still be arriving
  // Set when a route accepted a WebSocket upgrade (HttpResponse::websocket).
  std::shared_ptr<WebSocketSession> websocket_session;
  std::optional<http::request<http::string_body>> upgrade;
  std::string upgrade_log, upgrade_id;
  bool first = true;
  for (;;) {
    handle->busy = false;
    if (stopping) break;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(options.max_header_bytes));
    // The route decides the body limit; until it is known, admit the largest (a declared
    // Content-Length above every limit already fails here).
    parser.body_limit(std::max(options.max_json_body_bytes, options.max_file_body_bytes));
    // The head's deadline (ServerOptions::head_timeout_s): from the accept for the first
    // request; for a later one, the keep-alive idle wait ends with its first byte and the
    // deadline counts from there. Beast's deadline is absolute across the reads it covers, so
    // dripping bytes does not extend it; on expiry the socket is closed.
    if (!first && buffer.size() == 0) {
      stream.expires_after(std::chrono::seconds(options.idle_timeout_s));
      auto [iec, in] = co_await stream.async_read_some(buffer.prepare(4096), kTuple);
      if (iec) break;
      buffer.commit(in);
    }
    first = false;
    stream.expires_after(std::chrono::seconds(options.head_timeout_s));
    auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kTuple);
    if (ec) {
      if (ec == http::error::header_limit || ec == http::error::body_limit) {
        bool header = ec == http::error::header_limit;
        HttpResponse r = header ? ErrorResponse(431, "invalid_request", "request header too large")
                                : ErrorResponse(413, "payload_too_large", "request body too large");
        http::response<http::string_body> res{header ? http::status::request_header_fields_too_large
                                                     : http::status::payload_too_large,
                                              11};
        AddCommonHeaders(res, r, NewId("req_"));
        res.keep_alive(false);
        res.body() = r.body;
        res.prepare_payload();
        co_await http::async_write(stream, res, kTuple);
        linger = true;  // the rest of the header or body may still be arriving
      } else if (ec.category() ==
                     beast::http::make_error_code(http::error::bad_target).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message) {
        HttpResponse r =
            ErrorResponse(400, "invalid_request", "malformed request: " + ec.message());
        http::response<http::string_body> res{http::status::bad_request, 11};
        AddCommonHeaders(res, r, NewId("req_"));
        res.keep_alive(false);
        res.body() = r.body;
        res.prepare_payload();
        co_await http::async_write(stream, res, kTuple);
      }
      break;
    }
    handle->busy = true;
    int64_t start = NowMs();
    const auto& head = parser.get();
    HttpRequest req = ToRequest(parser.get());
    std::string_view rid = req.Header("x-request-id");
    req.request_id = SaneRequestId(rid) ? std::string(rid) : NewId("req_");
    Router::Match match = router.Find(req.method, req.path, req.Header("host"), req.headers);
    if (match.route) {
      req.route = match.route->pattern;
      req.params = match.params;
    }
    std::string sandbox_id = req.Param("id");
    // Before authentication: small, and every client-chosen word escaped and bounded
    // (common/log.h), so a path cannot forge a line or grow the log by its own length.
    const std::string log_method = LogField(req.method, 16);
    const std::string log_route = match.route ? req.route : LogField(req.path);
    spdlog::info("http in  request_id={} method={} route={} sandbox_id={}", req.request_id,
                 log_method, log_route, LogField(sandbox_id, 64));
    bool keep_alive = head.keep_alive() && !stopping;
    std::optional<HttpResponse> early;
    // Refusals before the body is read end the connection: the unread body cannot be skipped.
    auto refuse = [&](HttpResponse r) {
      early = std::move(r);
      keep_alive = false;
      linger = linger || !parser.is_done();
    };
    size_t limit = match.route && match.route->options.file_body ? options.max_file_body_bytes
                                                                 : options.max_json_body_bytes;
    // Request bodies leased from options.body_budget: held until this request's answer is out.
    std::vector<std::unique_ptr<BufferBudget::Lease>> body_leases;
    // RFC 9112 section 3.2: a server answers 400 to an HTTP/1.1 request without a Host header
    // and to any request with more than one (which of two would route it: the API or an app?).
    const size_t hosts = head.count(http::field::host);
    if (hosts > 1 || (hosts == 0 && head.version() >= 11)) {
      refuse(ErrorResponse(
          400, "invalid_request",
          hosts > 1 ? "more than one Host header" : "missing Host header (HTTP/1.1 requires one)"));
    } else if (!parser.is_done() && !match.route) {
      // Nothing would read it: answered without taking a byte of it.
      refuse(Router::NotFoundResponse(match, req.method, req.path));
    } else if (parser.content_length() && *parser.content_length() > limit) {
      refuse(ErrorResponse(413, "payload_too_large",
                           "request body too large (limit " + std::to_string(limit) + " bytes)"));
    } else if (!parser.is_done()) {
      // Who is asking, from the head alone, before a byte of the body is held.
      if (const HeadGate& gate = match.route->options.gate; gate) {
        if (std::optional<HttpResponse> refused = co_await RunGate(gate, req)) {
          refuse(std::move(*refused));
        }
      }
      if (!early && match.route->options.stream_body) {
        // The body is the handler's (BodyReader) or the proxy relay's to read.
        parser.body_limit(limit);
      } else if (!early) {
        std::string gone;
        std::optional<HttpResponse> refused =
            co_await ReadBody(stream, buffer, parser, limit, body_leases, &gone);
        if (!gone.empty()) {
          spdlog::info("http out request_id={} status=- ms={} (client went away: {})",
                       req.request_id, NowMs() - start, gone);
          break;
        }
        if (refused) refuse(std::move(*refused));
      }
    }
    stream.expires_never();
    HttpResponse out;
    // Whether the body has been read to its end; whether a BodyReader took the parser (after
    // which `parser` is spent and neither a relay nor an upgrade may use it).
    bool body_read = parser.is_done();
    bool body_taken = false;
    if (early) {
      out = std::move(*early);
    } else if (!match.route) {
      out = Router::NotFoundResponse(match, req.method, req.path);
    } else {
      req.body = std::move(parser.get().body());
      if (match.route->options.stream_body && match.route->options.blocking && !parser.is_done()) {
        // The handler reads the body as it arrives (an upload streamed into a sandbox). No
        // watch on the peer here: the socket is readable with the body itself; a client that
        // leaves fails the handler's next read instead.
        server_detail::BodyReaderOptions bo;
        bo.body_limit = limit;
        bo.body_timeout_s = options.body_timeout_s;
        bo.write_timeout_s = options.write_timeout_s;
        bo.budget = options.body_budget;
        auto reader = std::make_shared<server_detail::SocketBodyReader>(stream, buffer, parser, bo);
        req.body_reader = reader;
        out = co_await RunHandler(*match.route, req);
        reader->Detach();
        body_read = reader->done();
        body_taken = reader->started();
        if (out.proxy && body_taken) {
          out = ErrorResponse(Error::Internal("a proxy answer after reading the request body"),
                              req.request_id);
        }
      } else if (match.route->options.blocking) {
        // The handler polls `client_gone` (a sync exec cancels its command when its caller has
        // gone). While `watching`, this coroutine is suspended in RunHandler, so the stream is
        // alive when the watch completes on this session's strand.
        auto gone = std::make_shared<std::atomic<bool>>(false);
        auto watching = std::make_shared<bool>(true);
        req.client_gone = gone;
        WatchPeerClose(stream.socket(), watching, [gone] { *gone = true; });
        out = co_await RunHandler(*match.route, req);
        *watching = false;
        beast::error_code cec;
        stream.socket().cancel(cec);
      } else {
        out = co_await RunHandler(*match.route, req);
      }
    }
    if (out.sandbox_id.empty()) out.sandbox_id = sandbox_id;
    if (stopping) keep_alive = false;
    if (!req.key_id.empty()) {
      MarkAuthenticated(*handle);
    } else if (handle->probation) {
      keep_alive = false;  // admitted into the reserve and presented no valid key: one answer
    }
    const std::string log_sandbox = LogField(out.sandbox_id, 64);
    const std::string log_key = LogField(req.key_id, 64);
    if (out.proxy) {
      ProxyRelayOptions po;
      po.request_id = req.request_id;
      po.keep_alive = keep_alive;
      po.write_timeout_s = options.write_timeout_s;
      po.body_timeout_s = options.body_timeout_s;
      po.body_limit = limit;
      ProxyRelayResult pr = co_await ServeProxy(stream, buffer, parser, *out.proxy, po, *handle);
      out.proxy.reset();       // its upstream connection and buffer lease go now
      buffer.shrink_to_fit();  // the relay grew it to a chunk
      spdlog::info(
          "http out request_id={} method={} route={} key_id={} sandbox_id={} status={} "
          "ms={}{}{}",
          req.request_id, log_method, log_route, log_key, log_sandbox,
          pr.status == 0 ? std::string("-") : std::to_string(pr.status), NowMs() - start,
          pr.note.empty() ? "" : " (", pr.note.empty() ? "" : pr.note + ")");
      if (pr.linger) linger = true;
      if (!pr.keep_alive || stopping) break;
      continue;
    }
    if (!early && !body_read) {
      // A streamed-body route answered without reading the body: it cannot be skipped.
      keep_alive = false;
      linger = true;
    }
    bool ok;
    if (out.websocket && out.status == 101 && !body_taken) {
      // Served after the loop: the connection belongs to the WebSocket from now on.
      websocket_session = std::move(out.websocket);
      upgrade.emplace(parser.release());
      upgrade_log = "request_id=" + req.request_id + " method=" + log_method +
                    " route=" + log_route + " key_id=" + log_key + " sandbox_id=" + log_sandbox;
      upgrade_id = req.request_id;
      break;
    }
    if (out.stream) {
      http::response<http::empty_body> res{static_cast<http::status>(out.status), 11};
      AddCommonHeaders(res, out, req.request_id);
      res.set(http::field::cache_control, "no-store");
      res.chunked(true);
      res.keep_alive(keep_alive);
      ok = co_await WriteStream(stream, res, out.stream, handle);
    } else {
      http::response<http::string_body> res{static_cast<http::status>(out.status), 11};
      AddCommonHeaders(res, out, req.request_id);
      res.keep_alive(keep_alive);
      res.body() = std::move(out.body);
      res.prepare_payload();
      stream.expires_after(std::chrono::seconds(options.write_timeout_s));
      auto [wec, wn] = co_await http::async_write(stream, res, kTuple);
      ok = !wec;
    }
    spdlog::info(
        "http out request_id={} method={} route={} key_id={} sandbox_id={} status={} "
        "ms={}{}",
        req.request_id, log_method, log_route, log_key, log_sandbox, out.status, NowMs() - start,
        ok ? "" : " (write failed)");
    if (!ok || !keep_alive) break;
  }
  if (websocket_session) {
    int64_t ws_start = NowMs();
    co_await ServeWebSocket(stream, *upgrade, upgrade_id, websocket_session, handle);
    spdlog::info("http out {} status=101 ms={} (websocket closed)", upgrade_log,
                 NowMs() - ws_start);
  }
  handle->close = nullptr;
  beast::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (linger) {
    // A body we refused may still be arriving: read and drop it for a moment, so that closing
    // does not reset the connection before the client has read our answer.
    std::vector<char> sink(64 * 1024);
    size_t dropped = 0;
    stream.expires_after(std::chrono::seconds(2));
    while (dropped < (64u << 20)) {
      auto [rec, rn] = co_await stream.async_read_some(net::buffer(sink), kTuple);
      if (rec) break;
      dropped += rn;
    }
  }
  stream.close();
}

}  // namespace asb::api
