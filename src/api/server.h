// The HTTP/1.1 server of `agent-sandbox serve`: a Boost.Beast listener and sessions on Asio
// C++20 coroutines, in the shape of Beast's advanced_server and awaitable examples (ADR 0007).
// This header keeps Beast and Asio out of its includers (a Beast TU compiles in ~17 s here):
// only server.cc includes them.
//
// Behaviour:
//  - keep-alive; header limit max_header_bytes (431 above it); body limit 1 MiB for JSON routes
//    and max_file_body_bytes for file uploads (413 above it); "Expect: 100-continue" honoured.
//  - exactly one Host header (RFC 9112 section 3.2): none in an HTTP/1.1 request, or more than
//    one in any request, is 400.
//  - before a body is read: the route's HeadGate (router.h: the key or token check), then a
//    lease of the body's bytes from body_budget; either refusal is answered without reading it.
//  - timeouts apply to I/O only: idle_timeout_s between requests, head_timeout_s for a whole
//    request head (from the accept for the first request, from its first byte for later ones),
//    body_timeout_s while a body arrives, write_timeout_s per write. A running handler (a sync
//    exec) is never cut short by the server; it ends by its own timeout.
//  - connection limits (ADR 0014, slow-loris): max_connections in all,
//    max_connections_per_ip per client address, and reserved_connections of the total kept for
//    clients that present a valid API key (see ServerOptions).
//  - request-derived text in log lines goes through asb::LogField (common/log.h): escaped and
//    bounded, so a hostile path cannot forge or flood log lines.
//  - handlers marked blocking run on a BlockingPool; streams are pulled without blocking.
//  - every request gets an X-Request-Id (the client's if it sent a sane one), echoed in the
//    response, and two log lines: one when it arrives, one when it leaves.
//  - graceful shutdown on SIGTERM/SIGINT (or Stop()): stop accepting, close idle connections,
//    let in-flight requests finish up to shutdown_grace_s, then cut the rest (streams are
//    cancelled, which kills their commands).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "api/buffer_budget.h"
#include "api/router.h"
#include "common/result.h"

namespace asb::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: any free port (see HttpServer::port())
  int io_threads = 2;
  size_t max_header_bytes = 16 * 1024;
  size_t max_json_body_bytes = 1 << 20;
  size_t max_file_body_bytes = (100u << 20) + 64 * 1024;
  int idle_timeout_s = 120;  // keep-alive idle, until a later request's first byte
  // A complete request head (request line and headers) must arrive within this: counted from
  // the accept for a connection's first request, from the first byte for later ones. Without
  // it a client dripping one header line at a time held a connection as long as it liked.
  int head_timeout_s = 10;
  int body_timeout_s = 300;   // reading one request body
  int write_timeout_s = 300;  // one write (a response, a stream chunk)
  int shutdown_grace_s = 30;
  size_t max_blocking_threads = 512;
  // Open client connections at most; one more is answered 503 (the one error shape, with
  // Retry-After: 1) and closed. Without a cap, a client holding idle connections used up
  // RLIMIT_NOFILE and the server could open nothing else (sandboxes, snapshots). 0 = no cap.
  size_t max_connections = 8192;
  // Open connections from one client address at most (IPv4, or the whole IPv6 address); one
  // more is answered 503 like the above. Loopback is not exempt: local clients count too.
  // 0 = no per-address cap.
  size_t max_connections_per_ip = 256;
  // Places of max_connections that connections which have not presented a valid API key may
  // not hold for long: once max_connections - reserved_connections such connections are open,
  // a new connection is admitted "on probation": it may send one request, and unless that
  // request carried a valid key (HttpRequest::key_id set by the auth layer) the connection is
  // closed after the answer. Authenticated connections are not counted. 0 = no reserve.
  size_t reserved_connections = 512;
  bool handle_signals = true;  // SIGTERM/SIGINT start a graceful shutdown
  // The one account of request bodies held in memory, across all connections (ADR 0014, round 3): a
  // body's bytes are leased before they are read (its Content-Length at once; a chunked body
  // 1 MiB at a time as it arrives) and given back when its answer has been written. A body
  // that does not fit is answered 503 unavailable with Retry-After: 1 and its connection
  // closed. nullptr = no account.
  std::shared_ptr<BufferBudget> body_budget;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, const Router& router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and listens. Errors: kInvalidArgument (bad host), kConflict (address in use),
  /// kInternal.
  Status Listen();
  /// The bound port (after Listen()).
  uint16_t port() const;
  /// Serves until a signal or Stop(), then shuts down gracefully. Returns when every
  /// connection is closed and every handler has returned (or the grace period has passed:
  /// then false is returned and handlers may still be running on the pool).
  bool Run();
  /// Starts a graceful shutdown; safe from any thread.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asb::api
