// The ports proxy's exchange (ADR 0013; hardened in ADR 0014): what the handler of
// /v1/sandboxes/{id}/ports/{port}/{path} (handlers_ports.cc) hands the server once it has a
// connection to 127.0.0.1:{port} inside the sandbox. The server carries the exchange on
// (api/proxy_relay.h), streaming both bodies in bounded chunks; nothing here touches sockets.
//  - The upstream sees the path after {port} with the query, Host 127.0.0.1:{port},
//    X-Forwarded-Prefix (for apps that build links), X-Forwarded-Host, never the caller's API
//    key, and Connection: close (one exchange per connection). A preview host
//    (handlers_previews.cc) sends the whole path, without the preview token in the query or
//    the Cookie header, and no prefix.
//  - The body keeps the client's framing: Content-Length as sent, a chunked body re-chunked.
//  - The answer keeps its status and end-to-end headers; an absolute-path Location is
//    prefixed so that redirects stay behind the proxy.
//  - Each exchange leases kProxyLeaseBytes from the server's one BufferBudget for its life.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/buffer_budget.h"
#include "api/http_types.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::api {

/// The relay's chunk: the most bytes one read of either body takes.
constexpr size_t kProxyChunkBytes = 64 * 1024;
/// What an exchange leases: its chunk buffer and the read buffers of the upstream and the
/// client connection, each room for one chunk.
constexpr uint64_t kProxyLeaseBytes = 3 * kProxyChunkBytes;

struct PortProxyOptions {
  /// The server's budget; nullptr: not accounted.
  std::shared_ptr<BufferBudget> budget;
  /// How long a request waits for room in the budget before it is answered 503.
  int64_t budget_wait_ms = 1000;
  /// The whole exchange, from the handler to the answer's last byte, milliseconds.
  int64_t timeout_ms = 300'000;
  /// One read or write of the upstream, seconds.
  int idle_timeout_s = 60;
};

/// Leases an exchange's buffers. nullptr with `*refused` set (503 unavailable, Retry-After: 1,
/// in the one error shape) when the budget stayed full for options.budget_wait_ms.
std::shared_ptr<void> LeaseProxyBuffers(const PortProxyOptions& options,
                                        std::string_view request_id, HttpResponse* refused);

/// A port's decimal digits as a path segment or host label shows them. Errors:
/// kInvalidArgument "port must be 1..65535".
Result<int64_t> ParsePort(std::string_view digits);

/// What the upstream is sent in place of the client's request line and a few headers.
struct UpstreamRequest {
  /// The request target upstream: "/", "/a/b?x=1".
  std::string target;
  /// The path the client saw before `target` ("/v1/sandboxes/{id}/ports/{port}"): sent as
  /// X-Forwarded-Prefix and put before an absolute Location of the answer. "" (a preview
  /// host, where the app has the whole origin): neither.
  std::string prefix;
  /// Replaces the client's Cookie header ("" drops it); nullopt: forwarded as sent.
  std::optional<std::string> cookie;
  /// X-Forwarded-Proto, "" = not sent.
  std::string forwarded_proto;
  /// The Host header upstream; "" = "127.0.0.1:<port>".
  std::string host;
};

/// The path form's upstream request: the target after /v1/sandboxes/{id}/ports/{port} of
/// `req`, with that prefix.
UpstreamRequest PathFormUpstream(const HttpRequest& req, const std::string& sandbox_id,
                                 int64_t port);

/// The exchange of `req` with 127.0.0.1:`port` of a sandbox over the connected socket `fd`, as
/// `upstream` says, due by now + options.timeout_ms.
std::shared_ptr<ProxyExchange> MakeProxyExchange(UniqueFd fd, const HttpRequest& req,
                                                 const UpstreamRequest& upstream, int64_t port,
                                                 const PortProxyOptions& options);

}  // namespace asb::api
