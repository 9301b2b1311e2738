// What the client verbs (client_verbs.cc, cp.cc, exec_tty.cc, snapshot_verbs.cc) share: the
// server's address and key (global --url/--api-key over $AGENT_SANDBOX_URL and
// $AGENT_SANDBOX_API_KEY), one-shot REST calls, and JSON printing.
#pragma once

#include <boost/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

#include "api/http_client.h"
#include "common/result.h"

namespace asb::cli {

/// Global client options, set by main.cc's --url, --api-key and --json (before or after the
/// verb); empty/false = the environment's (or the default) value.
struct ClientGlobals {
  std::string url;
  std::string api_key;
  bool json = false;
};
ClientGlobals& Globals();

/// The server's URL: --url, else $AGENT_SANDBOX_URL, else http://127.0.0.1:8080.
std::string ServerUrl();
/// The API key: --api-key, else $AGENT_SANDBOX_API_KEY, else "".
std::string ApiKey();

Result<api::HttpClient> MakeClient();

/// An HTTP error answer as an Error (code from the body's error.code).
Error ServerError(const api::ClientResponse& r);

/// One request; a status >= 300 is ServerError.
Result<api::ClientResponse> Call(std::string_view method, const std::string& target,
                                 std::string_view body = {},
                                 std::string_view type = "application/json");

/// Like Call, then parses the answer as JSON.
Result<boost::json::value> CallJson(std::string_view method, const std::string& target,
                                    std::string_view body = {});

Result<boost::json::value> ParseJson(const std::string& body);

/// Pretty-prints with two-space indentation; integers as integers, doubles in their shortest
/// round-trip form (0.5, 1, 1e+300), never "1E0".
void Pretty(std::ostream& os, const boost::json::value& v, int indent = 0);

/// A number as text: integers as integers, doubles in shortest round-trip form.
std::string NumberText(const boost::json::value& v);

/// A field as text: strings as they are, numbers by NumberText, others serialized; "" if absent.
std::string Str(const boost::json::object& o, std::string_view key);

/// Reads standard input to its end. Errors: the read's errno (kInternal).
Result<std::string> ReadStdin();

/// "/v1/sandboxes/<id>" with the id percent-encoded.
std::string SandboxPath(const std::string& id);

}  // namespace asb::cli
