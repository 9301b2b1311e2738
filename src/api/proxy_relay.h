// The server's side of a ports-proxy exchange (api/http_types.h ProxyExchange; ADR 0014): run
// on the client connection's strand after the handler returned, so a proxied request holds no
// pool thread, only its two sockets and one chunk of buffer per direction. Includes Beast:
// only server.cc (and its tests) include it.
//
// Bounds: every read and write of the upstream waits at most ProxyExchange::idle_timeout_s,
// every write to the client write_timeout_s, every read of the client's body body_timeout_s,
// and all of them end by ProxyExchange::deadline. A deadline or timeout before the answer's
// head answers 504 (the one error shape); after it the client connection is cut, so a
// truncated body never looks complete.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string>

#include "api/http_types.h"

namespace asb::api {

struct ProxyRelayOptions {
  std::string request_id;
  bool keep_alive = false;    // the client's connection may serve another request afterwards
  int write_timeout_s = 300;  // one write to the client
  int body_timeout_s = 300;   // one read of the client's request body
  uint64_t body_limit = 0;    // the route's request body limit, bytes
};

struct ProxyRelayResult {
  int status = 0;           // the status the client was answered; 0: none (the client left)
  bool keep_alive = false;  // the connection can serve the next request
  bool linger = false;      // part of the client's request body was not read
  std::string note;         // for the log line: why the exchange ended early; "" when it did not
};

/// Carries `x` on: `request` has parsed the client's head only; `upstream` is connected.
boost::asio::awaitable<ProxyRelayResult> RelayProxy(
    boost::beast::tcp_stream& client, boost::beast::flat_buffer& client_buffer,
    boost::beast::http::request_parser<boost::beast::http::string_body>& request,
    boost::beast::tcp_stream& upstream, ProxyExchange& x, const ProxyRelayOptions& options);

}  // namespace asb::api
