// Preview tokens of exposed ports in agent-sandbox.db (ADR 0015). A token opens
// one port of one sandbox in a browser (api/preview.h) and nothing else: it is bound to the
// sandbox, the port and the sandbox's owner, it expires, it can be revoked, and it dies with
// its sandbox (the migration's trigger). It is shown once, as "asbp_" + 64 random hex digits
// (256 bits from getrandom(2)); only its SHA-256 is stored, so a copy of the database opens
// nothing. Lookups go by the hash (a unique index), then the stored hash is compared in
// constant time.
//
// Thread-safe: every method takes the Store's lock around its statements. Times are Unix
// epoch milliseconds. A token is live while now < expires_at: at expires_at exactly it is not.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

/// What every preview token starts with (API keys start with "asb_", so the two never meet).
inline constexpr std::string_view kPreviewTokenPrefix = "asbp_";

/// One row of preview_tokens (never the hash or the token itself).
struct PreviewTokenRecord {
  std::string id;          // "pv_" + 16 hex: how listing and revoke name the token
  std::string sandbox_id;  // the sandbox it opens
  int64_t port = 0;        // the port inside that sandbox, 1..65535
  std::string owner;       // the sandbox's owner: the proxy connects on its behalf
  std::string created_by;  // the id of the API key that made it ("" without auth)
  int64_t created_at_ms = 0;
  int64_t expires_at_ms = 0;
};

/// What a new token should be.
struct NewPreviewToken {
  std::string sandbox_id;
  int64_t port = 0;
  std::string owner;
  std::string created_by;
  int64_t expires_at_ms = 0;  // > now
};

/// A created token: its record and the raw token (shown once, never stored).
struct CreatedPreviewToken {
  PreviewTokenRecord record;
  std::string raw_token;
};

/// "asbp_" + 64 random lowercase hex digits.
std::string GeneratePreviewToken();
/// Whether `text` has the shape of a preview token (prefix and 64 lowercase hex digits).
bool LooksLikePreviewToken(std::string_view text);

class PreviewTokenStore {
 public:
  /// `store` must outlive this object and have run the preview tokens migration.
  explicit PreviewTokenStore(Store& store) : store_(store) {}

  /// Makes a token. Expired tokens of every sandbox are deleted first; then a sandbox that
  /// already has `max_live_per_sandbox` live tokens gets no more. Errors: kInvalidArgument
  /// (port out of 1..65535, expires_at_ms <= now_ms), kNotFound (no such sandbox, or it is
  /// destroyed), kLimitExceeded, store errors.
  Result<CreatedPreviewToken> Create(const NewPreviewToken& t, int64_t now_ms,
                                     int64_t max_live_per_sandbox);
  /// The live token `raw_token`. Errors: kNotFound (not a token's shape, unknown, revoked,
  /// expired: now_ms >= expires_at, or its sandbox destroyed), store errors.
  Result<PreviewTokenRecord> Resolve(std::string_view raw_token, int64_t now_ms);
  /// The live tokens of `sandbox_id`, oldest first.
  Result<std::vector<PreviewTokenRecord>> List(std::string_view sandbox_id, int64_t now_ms);
  /// Deletes token `id` of `sandbox_id`: it stops working at once. Errors: kNotFound (no such
  /// token of that sandbox).
  Status Revoke(std::string_view sandbox_id, std::string_view id);

 private:
  Store& store_;
};

}  // namespace asb::store
