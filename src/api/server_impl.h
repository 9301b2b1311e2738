// Private to api/server*.cc: the server's state behind HttpServer (server.h), shared by the
// listener and sessions (server.cc) and the streaming paths: NDJSON streams, WebSocket sessions
// and the ports proxy (server_streams.cc). These are the translation units that include Beast
// and Asio for the server (ADR 0007).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "api/blocking_pool.h"
#include "api/buffer_budget.h"
#include "api/proxy_relay.h"
#include "api/server.h"

namespace asb::api {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
using net::awaitable;
using net::use_awaitable;
constexpr auto kTuple = net::as_tuple(net::use_awaitable);

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A session's state that other threads (shutdown, stream notifiers) may touch.
struct SessionHandle {
  net::any_io_executor executor;
  std::atomic<bool> busy{false};
  std::atomic<bool> cut{false};
  // Closed by shutdown; set by the session once its stream exists.
  std::function<void()> close;  // runs on `executor`
  std::string peer;             // the client's address: the per-address count's key
  bool probation = false;       // admitted into the reserve (ServerOptions::reserved_connections)
  bool authenticated = false;   // has presented a valid key; guarded by Impl::mu
};

struct HttpServer::Impl {
  ServerOptions options;
  const Router& router;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  BlockingPool pool;
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::unordered_map<uint64_t, std::shared_ptr<SessionHandle>> sessions;
  std::unordered_map<std::string, size_t> per_peer;  // open connections by client address
  size_t unauthenticated = 0;  // open connections that have presented no valid key
  uint64_t next_session = 1;
  uint16_t bound_port = 0;

  Impl(ServerOptions o, const Router& r)
      : options(std::move(o)),
        router(r),
        ioc(options.io_threads),
        pool(options.max_blocking_threads) {}

  awaitable<void> Accept();
  awaitable<void> Session(tcp::socket socket, std::shared_ptr<SessionHandle> handle);
  awaitable<bool> WriteStream(beast::tcp_stream& stream, http::response<http::empty_body>& head,
                              const std::shared_ptr<StreamBody>& body,
                              const std::shared_ptr<SessionHandle>& handle);
  awaitable<HttpResponse> RunHandler(const Route& route, HttpRequest& req);
  /// Runs a route's HeadGate on the blocking pool (it may look up keys); its answer, if any.
  awaitable<std::optional<HttpResponse>> RunGate(const HeadGate& gate, const HttpRequest& req);
  /// Reads the rest of a request's body, leasing its bytes from options.body_budget first
  /// (ServerOptions::body_budget). Returns the answer that refused it (413 over `limit`, 503
  /// over the budget), std::nullopt once it is read; `*gone` is set when the client went away.
  awaitable<std::optional<HttpResponse>> ReadBody(
      beast::tcp_stream& stream, beast::flat_buffer& buffer,
      http::request_parser<http::string_body>& parser, size_t limit,
      std::vector<std::unique_ptr<BufferBudget::Lease>>& leases, std::string* gone);
  /// Runs `fn` on the blocking pool and resumes with its result.
  /// `fn` is taken by reference and copied before the first suspension (GCC 12 destroys a
  /// coroutine's by-value class parameters twice in this shape).
  awaitable<std::string> RunBlocking(const std::function<std::string()>& fn);
  awaitable<void> ServeWebSocket(beast::tcp_stream& stream,
                                 const http::request<http::string_body>& upgrade,
                                 const std::string& request_id,
                                 const std::shared_ptr<WebSocketSession>& ws_session,
                                 const std::shared_ptr<SessionHandle>& handle);
  void BeginShutdown();
  /// Counts `handle`'s connection as authenticated (no longer against the reserve).
  void MarkAuthenticated(SessionHandle& handle);
  awaitable<void> Drain();
  size_t SessionCount() {
    std::lock_guard<std::mutex> lock(mu);
    return sessions.size();
  }
};

namespace server_detail {

/// Watches a client socket while a handler runs: clears `*alive` once the peer closed or reset
/// the connection, then calls `on_close` (server_streams.cc).
void WatchPeerClose(tcp::socket& socket, std::shared_ptr<bool> alive,
                    std::function<void()> on_closed);
/// Relays a proxied exchange (HttpResponse::proxy) over the session's stream.
awaitable<ProxyRelayResult> ServeProxy(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                       http::request_parser<http::string_body>& parser,
                                       ProxyExchange& x, const ProxyRelayOptions& options,
                                       SessionHandle& handle);

}  // namespace server_detail

}  // namespace asb::api
