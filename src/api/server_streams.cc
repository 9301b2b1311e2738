// HttpServer's streaming paths (server_impl.h): NDJSON and file streams with flow control,
// the blocking pool, WebSocket sessions, the ports proxy and the watch on a client that left.
#include "api/beast_request.h"
#include "api/errors.h"
#include "api/server_impl.h"
#include "common/log.h"

namespace asb::api {

namespace server_detail {

// What a readable client socket holds, looked at without consuming it.
enum class PeerState { kNothing, kData, kClosed };

// recv(2) with MSG_PEEK: 0 is an orderly close, an error other than EAGAIN a reset.
PeerState PeekPeer(tcp::socket& socket) {
  char byte;
  ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return PeerState::kData;
  if (n == 0) return PeerState::kClosed;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return PeerState::kNothing;
  return PeerState::kClosed;
}

// Calls `on_closed` once the client closes or resets its end of `socket`, for as long as `*alive`.
// Readiness with nothing to read is not a close: Asio's epoll reactor is edge-triggered, and an
// edge for bytes an earlier read already took can reach a wait queued after that read (seen under
// ASan's timing as a sync exec cancelled while its caller still waited). Such a wake-up re-arms
// the wait. Bytes of a pipelined next request end the watch. Completions run on the socket's
// strand; the caller clears `*alive` there before `socket` goes away.
void WatchPeerClose(tcp::socket& socket, std::shared_ptr<bool> alive,
                    std::function<void()> on_closed) {
  socket.async_wait(tcp::socket::wait_read, [&socket, alive, on_closed = std::move(on_closed)](
                                                const beast::error_code& ec) mutable {
    if (ec || !*alive) return;
    switch (PeekPeer(socket)) {
      case PeerState::kClosed:
        on_closed();
        return;
      case PeerState::kData:
        return;
      case PeerState::kNothing:
        WatchPeerClose(socket, std::move(alive), std::move(on_closed));
        return;
    }
  });
}

// Carries a ports-proxy exchange on (api/proxy_relay.h). While it runs, the server's shutdown
// (handle->close) closes the upstream too, so a cut session does not wait for it.
awaitable<ProxyRelayResult> ServeProxy(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                       http::request_parser<http::string_body>& parser,
                                       ProxyExchange& x, const ProxyRelayOptions& options,
                                       SessionHandle& handle) {
  beast::tcp_stream upstream(stream.get_executor());
  beast::error_code ec;
  upstream.socket().assign(tcp::v4(), x.fd, ec);
  if (ec) {
    ProxyRelayResult r;
    r.note = "upstream socket: " + ec.message();
    co_return r;
  }
  x.fd = -1;  // the socket owns it now
  std::function<void()> session_close = handle.close;
  handle.close = [&stream, &upstream] {
    beast::error_code sec;
    stream.socket().shutdown(tcp::socket::shutdown_both, sec);
    stream.cancel();
    upstream.socket().shutdown(tcp::socket::shutdown_both, sec);
    upstream.cancel();
  };
  ProxyRelayResult r = co_await RelayProxy(stream, buffer, parser, upstream, x, options);
  handle.close = std::move(session_close);
  co_return r;
}

}  // namespace server_detail

using server_detail::ServeProxy;
using server_detail::WatchPeerClose;

awaitable<bool> HttpServer::Impl::WriteStream(beast::tcp_stream& stream,
                                              http::response<http::empty_body>& head,
                                              const std::shared_ptr<StreamBody>& body,
                                              const std::shared_ptr<SessionHandle>& handle) {
  // Wake-ups: the body's notifier (any thread) and the client going away post to our strand.
  auto ex = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(ex);
  auto pending = std::make_shared<std::atomic<bool>>(false);
  body->SetNotify([ex, timer, pending] {
    if (pending->exchange(true)) return;
    net::post(ex, [timer] { timer->cancel(); });
  });
  // The client closing its end cuts the stream. The watch may fire after this coroutine has
  // ended (it was queued just before), so it touches only shared state until `watching` is
  // cleared on the way out.
  auto closed = std::make_shared<std::atomic<bool>>(false);
  auto watching = std::make_shared<bool>(true);
  WatchPeerClose(stream.socket(), watching, [timer, closed] {
    *closed = true;
    timer->cancel();
  });
  http::response_serializer<http::empty_body> sr(head);
  stream.expires_after(std::chrono::seconds(options.write_timeout_s));
  auto [ec, n] = co_await http::async_write_header(stream, sr, kTuple);
  bool ok = !ec;
  while (ok) {
    if (*closed || handle->cut) {
      ok = false;
      break;
    }
    pending->store(false);
    StreamBody::Chunk chunk = body->Poll();
    if (chunk.abort) {
      ok = false;
      break;
    }
    if (!chunk.data.empty()) {
      stream.expires_after(std::chrono::seconds(options.write_timeout_s));
      auto [wec, wn] =
          co_await net::async_write(stream, http::make_chunk(net::buffer(chunk.data)), kTuple);
      if (wec) {
        ok = false;
        break;
      }
    }
    if (chunk.done) {
      stream.expires_after(std::chrono::seconds(options.write_timeout_s));
      auto [lec, ln] = co_await net::async_write(stream, http::make_chunk_last(), kTuple);
      ok = !lec;
      body->SetNotify(nullptr);
      // Stop the disconnect watcher; the session continues with the next request.
      *watching = false;
      stream.socket().cancel();
      co_return ok;
    }
    if (!chunk.data.empty() || pending->load()) continue;
    timer->expires_after(std::chrono::seconds(1));
    co_await timer->async_wait(kTuple);
  }
  *watching = false;
  body->SetNotify(nullptr);
  body->Cancel();
  co_return false;
}

awaitable<std::string> HttpServer::Impl::RunBlocking(const std::function<std::string()>& fn) {
  co_return co_await net::async_initiate<decltype(use_awaitable), void(std::string)>(
      [this, &fn](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        auto work = net::make_work_guard(net::get_associated_executor(*shared));
        pool.Submit([shared, work, fn]() mutable {
          std::string r;
          try {
            r = fn();
          } catch (const std::exception& e) {
            r = std::string("internal error: ") + e.what();
          }
          auto ex = net::get_associated_executor(*shared);
          net::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
          work.reset();
        });
      },
      use_awaitable);
}

// A WebSocket over the session's connection (RFC 6455; Beast does the framing, pings and the
// closing handshake): a reader coroutine hands each client message to the session on the
// blocking pool, this one sends what the session's Poll() gives, until either side ends.
awaitable<void> HttpServer::Impl::ServeWebSocket(beast::tcp_stream& stream,
                                                 const http::request<http::string_body>& upgrade,
                                                 const std::string& request_id,
                                                 const std::shared_ptr<WebSocketSession>& session,
                                                 const std::shared_ptr<SessionHandle>& handle) {
  struct Shared {
    std::atomic<bool> pending{false};
    bool reader_done = false;  // touched on our strand only
    std::string close_reason;  // set by the reader: a rejected message
  };
  auto ex = co_await net::this_coro::executor;
  auto timer = std::make_shared<net::steady_timer>(ex);
  auto shared = std::make_shared<Shared>();
  stream.expires_never();  // the websocket's own timeouts apply from here
  websocket::stream<beast::tcp_stream&> ws(stream);
  ws.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
  // A browser that offered subprotocols fails the connection unless the 101 selects one: select
  // ours (http_types.h, kWebSocketProtocol), never the one that carries its key.
  bool offers_ours = false;
  for (std::string_view list = upgrade[http::field::sec_websocket_protocol]; !list.empty();) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    offers_ours |= item == kWebSocketProtocol;
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  ws.set_option(
      websocket::stream_base::decorator([request_id, offers_ours](websocket::response_type& res) {
        res.set(http::field::server, "agent-sandbox");
        res.set("X-Request-Id", request_id);
        if (offers_ours) {
          res.set(http::field::sec_websocket_protocol, std::string(kWebSocketProtocol));
        }
      }));
  ws.read_message_max(1 << 20);
  auto [aec] = co_await ws.async_accept(upgrade, kTuple);
  if (aec) {
    session->Cancel();
    co_return;
  }
  session->SetNotify([ex, timer, shared] {
    if (shared->pending.exchange(true)) return;
    net::post(ex, [timer] { timer->cancel(); });
  });
  // The reader: one message at a time, each handled to completion before the next is read.
  net::co_spawn(
      ex,
      [this, &ws, session, shared, timer]() -> awaitable<void> {
        beast::flat_buffer buf;
        for (;;) {
          auto [rec, rn] = co_await ws.async_read(buf, kTuple);
          if (rec) break;
          std::string data = beast::buffers_to_string(buf.data());
          buf.consume(buf.size());
          bool binary = ws.got_binary();
          std::function<std::string()> job = [session, data = std::move(data), binary]() {
            return session->OnMessage(data, binary);
          };
          std::string refused = co_await RunBlocking(job);
          if (!refused.empty()) {
            shared->close_reason = refused;
            break;
          }
        }
        shared->reader_done = true;
        timer->cancel();
      },
      net::detached);
  bool closed = false;
  while (!shared->reader_done && !handle->cut) {
    shared->pending.store(false);
    WebSocketSession::Outgoing out = session->Poll();
    bool failed = false;
    for (auto& m : out.messages) {
      ws.binary(m.binary);
      auto [wec, wn] = co_await ws.async_write(net::buffer(m.data), kTuple);
      if (wec) {
        failed = true;
        break;
      }
    }
    if (failed) break;
    if (out.done) {
      co_await ws.async_close(websocket::close_code::normal, kTuple);  // errors: nothing to do
      closed = true;
      break;
    }
    if (!out.messages.empty() || shared->pending.load()) continue;
    timer->expires_after(std::chrono::seconds(1));
    co_await timer->async_wait(kTuple);
  }
  session->SetNotify(nullptr);
  session->Cancel();
  if (!closed && !shared->close_reason.empty() && ws.is_open()) {
    websocket::close_reason cr(websocket::close_code::policy_error,
                               shared->close_reason.substr(0, 120));
    co_await ws.async_close(cr, kTuple);
  }
  // The reader refers to `ws`: wait until it has ended (closing the socket ends its read).
  if (!shared->reader_done) {
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream.socket().cancel(ec);
  }
  while (!shared->reader_done) {
    timer->expires_after(std::chrono::milliseconds(20));
    co_await timer->async_wait(kTuple);
  }
}

}  // namespace asb::api
