// The HTTP/1.1 server of `agent-sandbox serve`: a Boost.Beast listener and sessions on Asio
// C++20 coroutines, in the shape of Beast's advanced_server and awaitable examples (STYLE.md).
// This header keeps Beast and Asio out of its includers (a Beast TU compiles in ~17 s here):
// only server.cc includes them.
//
// Behaviour:
//  - keep-alive; header limit max_header_bytes (431 above it); body limit 1 MiB for JSON routes
//    and max_file_body_bytes for file uploads (413 above it); "Expect: 100-continue" honoured.
//  - timeouts apply to I/O only: idle_timeout_s between requests, body_timeout_s while a body
//    arrives, write_timeout_s per write. A running handler (a sync exec) is never cut short by
//    the server; it ends by its own timeout.
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
  int idle_timeout_s = 120;   // keep-alive idle and header read
  int body_timeout_s = 300;   // reading one request body
  int write_timeout_s = 300;  // one write (a response, a stream chunk)
  int shutdown_grace_s = 30;
  size_t max_blocking_threads = 512;
  // Open client connections at most; one more is answered 503 (the one error shape, with
  // Retry-After: 1) and closed. Without a cap, a client holding idle connections used up
  // RLIMIT_NOFILE and the server could open nothing else (sandboxes, snapshots). 0 = no cap.
  size_t max_connections = 8192;
  bool handle_signals = true;  // SIGTERM/SIGINT start a graceful shutdown
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
