// MCP's Streamable HTTP transport at /mcp on the server itself (ADR 0010), per the MCP
// specification revision 2025-06-18, basic/transports "Streamable HTTP" (and 2025-03-26 for
// batching). The routes sit in the REST routing table behind the auth layer, so /mcp takes the
// same keys, scopes, rate limits and tenancy as the REST API (no or a bad key: 401 with
// WWW-Authenticate: Bearer; the scope is exec). The tools act on the SandboxManager in-process
// with the caller's owner (mcp/manager_backend.h).
//
//   POST /mcp    one JSON-RPC message (or, for revisions 2025-03-26/2024-11-05, a batch).
//                - initialize (no Mcp-Session-Id): a new session; its id comes back in the
//                  Mcp-Session-Id header of the answer;
//                - anything else needs Mcp-Session-Id: missing → 400, unknown, ended, expired
//                  or another key's → 404 (the client then starts a new session);
//                - only notifications/responses → 202 with no body;
//                - tools/call → 200 text/event-stream: progress notifications as SSE events,
//                  then the response, then the stream ends; a client that goes away cancels
//                  the call (its exec is killed);
//                - other requests, and batches → 200 application/json with the answer(s).
//   GET  /mcp    405 (this server sends no server-initiated messages, as the spec allows).
//   DELETE /mcp  ends the session named by Mcp-Session-Id (its running calls are cancelled):
//                204; 400 without the header; 404 for an unknown session.
// Checks on every request, in this order: Origin (DNS rebinding, spec "Security Warning": an
// Origin header must name a loopback host or one of allowed_origins, else 403), Accept (POST:
// application/json and text/event-stream, wildcards allowed, absent = */*; else 406),
// Content-Type application/json (POST; else 415), MCP-Protocol-Version (when present it must
// be a revision this server speaks; else 400). HTTP-level errors use the REST error shape
// {"error":{"code","message"}}, except JSON that does not parse, which is answered 400 with a
// JSON-RPC parse error (-32700).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/http_types.h"
#include "api/router.h"
#include "core/sandbox_manager.h"

namespace asb::api {
class AuthLayer;
}

namespace asb::mcp {

struct McpHttpOptions {
  /// Origins ("https://app.example.com", exact match, no trailing '/') allowed besides
  /// loopback ones (http(s)://localhost, 127.0.0.1, [::1], any port).
  std::vector<std::string> allowed_origins;
  /// A session with no request for this long is forgotten (its id then answers 404).
  int64_t session_idle_timeout_s = 3600;
  /// Live sessions at most; an initialize beyond it answers 429 limit_exceeded.
  size_t max_sessions = 1000;
  /// Live sessions of one API key at most (429 beyond it), so that one tenant cannot hold all
  /// max_sessions for the idle timeout. Not applied without authentication (no key id).
  size_t max_sessions_per_key = 100;
  /// Quiet time after which an SSE stream sends a comment line, milliseconds.
  int64_t keepalive_ms = 15'000;
};

class McpHttpEndpoint {
 public:
  /// `manager` must outlive the endpoint. `auth` (may be null: every caller acts as
  /// core::kAnyOwner, as with --insecure-no-auth) identifies the caller's tenant and key.
  McpHttpEndpoint(core::SandboxManager& manager, api::AuthLayer* auth, McpHttpOptions options);
  /// Ends every session, cancelling and waiting for running tool calls.
  ~McpHttpEndpoint();
  McpHttpEndpoint(const McpHttpEndpoint&) = delete;
  McpHttpEndpoint& operator=(const McpHttpEndpoint&) = delete;

  /// Adds POST, GET and DELETE /mcp to `router` (before the auth layer wraps it).
  void AddRoutes(api::Router& router);

  /// Live sessions (for tests and metrics).
  size_t session_count() const;

  struct Session;

 private:
  api::HttpResponse Post(api::HttpRequest& req);
  api::HttpResponse Delete(api::HttpRequest& req);
  // The session named by the request's Mcp-Session-Id, or the 400/404 answer.
  std::shared_ptr<Session> Find(const api::HttpRequest& req, api::HttpResponse* refusal);
  std::shared_ptr<Session> NewSession(const api::HttpRequest& req, api::HttpResponse* refusal);
  // Forgets sessions idle longer than the timeout; returns them for destruction outside mu_.
  std::vector<std::shared_ptr<Session>> TakeExpired();

  core::SandboxManager& manager_;
  api::AuthLayer* auth_;
  McpHttpOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
};

/// The Origin rule above: true when `origin` is empty (non-browser clients send none), names
/// a loopback host, or is in `allowed`. Exposed for unit tests.
bool OriginAllowed(std::string_view origin, const std::vector<std::string>& allowed);

/// True when an Accept header value admits `type` ("text/event-stream"): exact, "text/*" or
/// "*/*" (parameters and q-values are ignored, except q=0 which refuses). Empty admits all.
bool AcceptAdmits(std::string_view accept, std::string_view type);

}  // namespace asb::mcp
