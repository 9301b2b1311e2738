// Access tokens of E2B's in-sandbox traffic (docs/e2b.md, ADR 0023). The `e2b` SDKs send no API
// key to envd: they send the `envdAccessToken` that create and connect answered, as
// X-Access-Token. Ours is "e2bt_" + the hex HMAC-SHA256 (OpenSSL) of the sandbox id under a
// server secret, so connect answers the same token again without storing it, a token opens
// exactly one sandbox, and it dies with the sandbox (ids are never reused). The secret is 32
// random bytes kept in <data_dir>/e2b-token.key (mode 0600); deleting that file revokes every
// token at the next start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::api {

/// What every envd access token starts with.
inline constexpr std::string_view kE2bTokenPrefix = "e2bt_";

/// Reads the secret from `path`, creating it (0600, 32 bytes of getrandom(2) as 64 hex digits)
/// when missing. Errors: kInternal when the file cannot be read or made, or holds no secret.
Result<std::string> LoadOrCreateE2bSecret(const std::string& path);

/// The access token of sandbox `sandbox_id` under `secret`.
std::string E2bAccessToken(std::string_view secret, std::string_view sandbox_id);

/// Whether `token` is the access token of `sandbox_id` (constant-time compare). False for an
/// empty secret: without one no token opens anything.
bool CheckE2bAccessToken(std::string_view secret, std::string_view sandbox_id,
                         std::string_view token);

/// The traffic access token of `sandbox_id` (create's trafficAccessToken): it opens the
/// sandbox's own servers (its ports through preview hosts, sandbox.getHost(port), and the code
/// interpreter's context calls on port 49999) but not envd, which takes only the access token
/// above, nor the interpreter's code runs (/execute needs the access token too; ADR 0015). E2B
/// keeps the two apart for the same reason: a URL handed to a browser must not run commands.
std::string E2bTrafficToken(std::string_view secret, std::string_view sandbox_id);
/// Whether `token` is the traffic token of `sandbox_id` (constant-time compare).
bool CheckE2bTrafficToken(std::string_view secret, std::string_view sandbox_id,
                          std::string_view token);

/// The parts of an E2B signed file URL (sandbox.downloadUrl / uploadUrl): its query's `path`,
/// the operation ("read" for GET, "write" for POST), `username` ("" when absent), `signature`
/// and `signature_expiration` ("" when absent).
struct E2bFileSignature {
  std::string_view path, operation, user, signature, expiration;
};

/// Whether `sig` is E2B's signature for sandbox `sandbox_id`: "v1_" + the unpadded standard
/// base64 of SHA-256("path:operation:user:<its access token>[:expiration]"), as the SDKs make it
/// (e2b's getSignature), with an expiration (Unix seconds) not before `now_s`. Constant-time
/// compare; false for an empty secret.
bool CheckE2bFileSignature(std::string_view secret, std::string_view sandbox_id,
                           const E2bFileSignature& sig, int64_t now_s);

}  // namespace asb::api
