// A small blocking HTTP/1.1 client for the CLI verbs and tests (ADR 0007). One
// connection per request; no TLS (the server listens on loopback or behind a proxy). Beast
// stays inside http_client.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace asb::api {

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // empty when streamed
  /// The "error.code" and "error.message" of an error body, or "" when absent.
  std::string error_code;
  std::string error_message;
};

class HttpClient {
 public:
  /// `base_url` is "http://host:port" (a trailing '/' and a path prefix are allowed);
  /// `api_key` (may be empty) is sent as "Authorization: Bearer <key>". Errors:
  /// kInvalidArgument for a URL that is not http://host[:port][/prefix].
  static Result<HttpClient> Create(std::string_view base_url, std::string api_key);

  /// Sends one request and reads the whole answer. `target` is a path with query
  /// ("/v1/sandboxes?x=1"), appended to the URL's prefix. No timeout: a sync exec may take
  /// as long as its own timeout. Errors: kUnavailable (cannot connect), kBackend (broken
  /// answer). HTTP error statuses are not errors: see ClientResponse::status.
  Result<ClientResponse> Request(std::string_view method, std::string_view target,
                                 std::string_view body = {},
                                 std::string_view content_type = "application/json") const;

  /// Like Request, but hands the body to `on_data` piece by piece as it arrives (for NDJSON
  /// streams) when the status is 2xx; `on_data` returns false to stop reading. Error bodies
  /// are collected into ClientResponse::body as usual.
  Result<ClientResponse> Stream(std::string_view method, std::string_view target,
                                std::string_view body, std::string_view content_type,
                                const std::function<bool(std::string_view)>& on_data) const;

  /// Adds a header sent with every later request of this client (e.g. "Idempotency-Key");
  /// a second call with the same name replaces the first. Names and values are sent as given:
  /// the caller keeps them free of CR and LF.
  void SetHeader(std::string name, std::string value);

  /// A deadline for each later request of this client, from connecting to the last byte of
  /// its answer, milliseconds (0, the default: none). Past it the request fails with
  /// kTimeout; a Stream's `on_data` has been given what arrived before.
  void SetTimeout(int64_t ms) { timeout_ms_ = ms; }

  const std::string& host() const { return host_; }
  const std::string& port() const { return port_; }

 private:
  HttpClient() = default;
  std::string host_;
  std::string port_;
  std::string prefix_;
  std::string api_key_;
  std::vector<std::pair<std::string, std::string>> headers_;
  int64_t timeout_ms_ = 0;
};

}  // namespace asb::api
