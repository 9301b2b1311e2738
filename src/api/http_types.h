// The HTTP request and response of our own that every handler takes and returns, so handlers
// are plain functions testable without sockets (ADR 0007: a request handler is a
// function of the request). Nothing here includes Beast or Asio; only
// api/server.cc translates between these structs and the wire.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace asb::api {

/// A pull source of bytes: fills up to `n` bytes of `buf` and returns how many, 0 at its end.
using ByteSource = std::function<Result<size_t>(char* buf, size_t n)>;

/// The body of a request on a RouteOptions::stream_body route, read by its (blocking) handler
/// as it arrives, so that an upload moves into the sandbox a chunk at a time and a client sends
/// no faster than the sandbox takes it (ADR 0014, round 3). Used by one thread at a time; valid
/// only while the handler runs.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  /// Reads up to `n` (> 0) bytes of the body into `buf`, waiting for them: each wait is bounded
  /// by the server's body timeout. Returns 0 at the end of the body. Errors: kTooLarge past the
  /// route's body limit, kTimeout, kCancelled (the client went away, the body is malformed, or
  /// the server is stopping).
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  /// The request's Content-Length, when it has one (not chunked).
  virtual std::optional<uint64_t> content_length() const = 0;
  /// The rest of the body, whole, held under the server's budget for buffered bodies
  /// (ServerOptions::body_budget) until the request is answered. Errors: as Read, and
  /// kUnavailable when the budget is spent (answered 503 with Retry-After).
  virtual Result<std::string> ReadAll() = 0;
};

/// One parsed HTTP request. Header names are lower-cased; the path and query values are
/// percent-decoded.
struct HttpRequest {
  std::string method;                          // "GET", "POST", ...
  std::string target;                          // raw request target, "/v1/x?path=a%20b"
  std::string path;                            // decoded path without the query, "/v1/x"
  std::map<std::string, std::string> query;    // decoded query parameters (last one wins)
  std::map<std::string, std::string> headers;  // lower-case name -> value
  std::string body;
  std::string request_id;  // X-Request-Id, echoed or generated
  /// Filled in by the router: the matched route template ("/v1/sandboxes/{id}") and the
  /// values of its {placeholders}.
  std::string route;
  std::map<std::string, std::string> params;
  /// Filled in by the auth layer (api/auth.h) before the handler runs: the tenant the request
  /// acts for ("" = core::kAnyOwner: an admin key, or --insecure-no-auth) and the id of the
  /// API key that authenticated it ("" when auth is off). Never the key itself.
  std::string owner;
  std::string key_id;
  /// Filled in by the auth layer on a call that makes sandboxes (create, fork) for a key with
  /// its own sandbox quota: how many more it may have now (-1: no per-key quota). A fork of
  /// several children makes at most this many; the rest are refused as past the quota.
  int64_t new_sandboxes_left = -1;
  /// Set by the server while a blocking handler runs: becomes true when the client closes its
  /// connection (a long sync exec is then cancelled instead of running on unobserved).
  std::shared_ptr<std::atomic<bool>> client_gone;
  /// Set by the server on a RouteOptions::stream_body route: the unread body (see BodyReader).
  /// `body` is then empty.
  std::shared_ptr<BodyReader> body_reader;

  /// The value of header `name` (lower-case), or "" when absent.
  std::string_view Header(std::string_view name) const;
  /// The value of query parameter `name`, or nullptr when absent.
  const std::string* Query(std::string_view name) const;
  /// The value of path parameter `name` ("" when absent).
  const std::string& Param(const std::string& name) const;
};

/// A response body produced piece by piece (NDJSON streams). The server pulls from it on its
/// I/O thread, so every method must return promptly and never block.
class StreamBody {
 public:
  struct Chunk {
    std::string data;   // bytes to send now (may be empty)
    bool done = false;  // true: the stream has ended after `data`
    /// true: the stream failed after its head was sent. The server closes the connection
    /// without the final chunk, so the client sees a truncated body, never a complete-looking
    /// one. `data` is not sent.
    bool abort = false;
  };
  virtual ~StreamBody() = default;
  /// Takes whatever is ready. Called again after the notifier fires, and at least once a
  /// second regardless (so the body can emit keepalives on its own clock).
  virtual Chunk Poll() = 0;
  /// Registers a callback run (from any thread) when Poll() may have more to give.
  virtual void SetNotify(std::function<void()> notify) = 0;
  /// The client went away or the server is stopping: stop the work behind the stream (an exec
  /// is killed). Poll() is not called afterwards.
  virtual void Cancel() = 0;
};

/// The application side of a WebSocket (RFC 6455) that a route accepted: the server does the
/// upgrade handshake, framing, pings and the closing handshake, and moves whole messages.
class WebSocketSession {
 public:
  struct Message {
    std::string data;
    bool binary = true;  // false: a text frame (UTF-8)
  };
  struct Outgoing {
    std::vector<Message> messages;  // to send now, in order
    bool done = false;              // after them, close the WebSocket normally (1000)
  };
  virtual ~WebSocketSession() = default;
  /// Takes what is ready to send. Never blocks. Called after the notifier fires and at least
  /// once a second.
  virtual Outgoing Poll() = 0;
  /// Registers a callback run (from any thread) when Poll() may have more to give.
  virtual void SetNotify(std::function<void()> notify) = 0;
  /// One message from the client. May block (it runs on the blocking pool); the next message
  /// is read only after it returned. A non-empty result closes the WebSocket with code 1008
  /// (policy violation) and that text as the reason.
  virtual std::string OnMessage(std::string data, bool binary) = 0;
  /// The client went away or the server is stopping. Poll() is not called afterwards.
  virtual void Cancel() = 0;
};

struct ProxyExchange;

/// One HTTP response. Either `body` (sent with Content-Length) or `stream` (sent chunked), or,
/// with status 101, `websocket` (the server completes the upgrade and runs the session), or
/// `proxy` (the server carries on an exchange with an upstream and relays its answer; `status`
/// is then only what the auth layer records: 200, the exchange was started).
struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::shared_ptr<StreamBody> stream;
  /// For the request log line only: the sandbox the request concerned, if any.
  std::string sandbox_id;
  /// With status 101: the WebSocket to run after the upgrade (last, so that positional
  /// initializers of the members above stay valid).
  std::shared_ptr<WebSocketSession> websocket;
  std::shared_ptr<ProxyExchange> proxy;
};

/// An HTTP exchange with an upstream (the ports proxy, api/port_proxy.h) that the server
/// carries on after the handler returned, on its I/O threads and without a pool thread
/// (api/proxy_relay.h): it writes `request_head` to `fd`, relays the client's request body as
/// it arrives, reads the upstream's answer head, sends the head `respond` makes of it and
/// relays the answer's body. Both bodies move one `chunk_bytes` chunk at a time, each read
/// waiting for the write before it, so a slow reader on either side slows the other side
/// instead of filling memory. An upgrade (`websocket`) answered 101 becomes a byte relay.
struct ProxyExchange {
  using Headers = std::vector<std::pair<std::string, std::string>>;
  int fd = -1;                // owned: the connected upstream socket, closed by the destructor
  std::string request_head;   // request line and headers for the upstream, through the blank line
  bool chunked_body = false;  // the client's body is chunked: it is re-chunked upstream
  bool websocket = false;     // the head asks for Upgrade: websocket
  size_t chunk_bytes = 64 * 1024;
  /// The whole exchange (everything but a WebSocket relay after its 101) ends by then: before
  /// the answer's head 504 timeout, after it the connection is cut (the body is truncated).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  /// The longest wait for one read or write of the upstream.
  int idle_timeout_s = 60;
  /// Makes the client's head of the upstream's status and headers (status, content_type,
  /// headers of `*head`); false: `*head` is an error answer to send whole instead.
  std::function<bool(int status, const Headers& headers, HttpResponse* head)> respond;
  std::string what;  // names the upstream in messages: "port 8000"
  /// Held until the exchange ends: the sandbox's activity mark, the buffer budget's lease.
  std::vector<std::shared_ptr<void>> keepalive;

  ProxyExchange() = default;
  ProxyExchange(const ProxyExchange&) = delete;
  ProxyExchange& operator=(const ProxyExchange&) = delete;
  ~ProxyExchange();
};

/// WebSocket subprotocols of a browser client (ADR 0022), which cannot set an Authorization
/// header on a WebSocket: it offers `Sec-WebSocket-Protocol: agent-sandbox.v1,
/// agent-sandbox.bearer.<base64url of the API key, no padding>`. The auth layer takes the key
/// from the second (api/auth.h, WebSocketProtocolKey); the server's 101 selects the first, never
/// the one that carries the key.
inline constexpr std::string_view kWebSocketProtocol = "agent-sandbox.v1";
inline constexpr std::string_view kWebSocketBearerPrefix = "agent-sandbox.bearer.";

/// A handler: a function of the request. Handlers may block (they call the sandbox manager);
/// the server runs them off its I/O threads.
using Handler = std::function<HttpResponse(HttpRequest&)>;

/// Builds a JSON response with `status` and a serialized body.
HttpResponse JsonResponse(int status, std::string json_body);
/// 204 No Content.
HttpResponse NoContent();

}  // namespace asb::api
