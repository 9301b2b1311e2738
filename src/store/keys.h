// API keys in agent-sandbox.db (api/AUTH.md). A key is shown to its creator once, as
// "asb_" + 48 random hex digits; only its SHA-256 (OpenSSL libcrypto) is stored, so a copy of
// the database does not give anyone a usable key. Lookups go by the hash (an index), and the
// stored hash is then compared in constant time (CRYPTO_memcmp).
//
// Rotation makes a new key in the same lineage: the old one stops working (rotated_at set),
// the new one inherits name, scopes and limits. Sandboxes belong to a lineage (the id of the
// first key of the chain), so the new key keeps seeing what the old one created.
//
// Thread-safe: every method takes the Store's lock around its statements. Times are Unix
// epoch milliseconds; 0 means "never" / "none".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

/// The scopes a key can hold (ARCHITECTURE.md; api/AUTH.md): exec = use sandboxes, admin =
/// everything (keys, every tenant's sandboxes), metrics = GET /metrics.
inline constexpr std::string_view kScopeExec = "exec";
inline constexpr std::string_view kScopeAdmin = "admin";
inline constexpr std::string_view kScopeMetrics = "metrics";

/// One row of api_keys. `scopes` is a sorted list without duplicates.
struct KeyRecord {
  std::string id;  // "key_" + 16 hex
  std::string name;
  std::string
      key_prefix;  // the first 12 characters of the raw key ("asb_1a2b3c4d"), to tell keys apart
  std::string key_hash;  // lowercase hex SHA-256 of the raw key
  std::vector<std::string> scopes;
  int64_t rate_limit_per_minute = 0;  // 0 = unlimited
  int64_t max_sandboxes = 0;          // 0 = unlimited (the server's global limit still applies)
  int64_t created_at_ms = 0;
  int64_t last_used_at_ms = 0;
  int64_t expires_at_ms = 0;  // 0 = never
  bool enabled = true;        // false after revoke
  int64_t revoked_at_ms = 0;
  std::string lineage;        // id of the first key of the rotation chain
  int64_t rotated_at_ms = 0;  // set when a successor replaced this key
  std::string replaced_by;    // the successor's id, "" if none

  bool HasScope(std::string_view s) const;
  /// Usable at `now_ms`: enabled, not rotated out, not expired.
  bool Usable(int64_t now_ms) const;
  /// "active", "revoked", "rotated" or "expired".
  std::string Status(int64_t now_ms) const;
};

/// "asb_" + 48 random lowercase hex digits (192 bits from getrandom(2)).
std::string GenerateApiKey();
/// A key in E2B's shape, "e2b_" + 40 random lowercase hex digits (160 bits), which older `e2b`
/// SDKs insist on (docs/e2b.md). It works everywhere an "asb_" key does.
std::string GenerateE2bApiKey();
/// What every E2B-shaped key starts with.
inline constexpr std::string_view kE2bKeyPrefix = "e2b_";
/// Lowercase hex SHA-256 of `raw_key` (OpenSSL EVP_Digest).
std::string HashApiKey(std::string_view raw_key);
/// Constant-time equality of two strings of the same length (CRYPTO_memcmp); false when the
/// lengths differ (the length of a hex digest is public).
bool ConstantTimeEquals(std::string_view a, std::string_view b);
/// Parses "exec,metrics" (commas and/or spaces) into a sorted, de-duplicated list. Errors:
/// kInvalidArgument for an unknown scope or an empty list.
Result<std::vector<std::string>> ParseScopes(std::string_view text);
/// "exec,metrics".
std::string JoinScopes(const std::vector<std::string>& scopes);

/// What a new key should be. Limits < 0 are kInvalidArgument.
struct NewKey {
  std::string name;
  std::vector<std::string> scopes{std::string(kScopeExec)};
  int64_t rate_limit_per_minute = 0;
  int64_t max_sandboxes = 0;
  int64_t expires_at_ms = 0;
  /// Issue the raw key in E2B's shape (GenerateE2bApiKey); a rotation keeps the shape.
  bool e2b_shape = false;
};

/// A created key: its record and the raw key (shown once, never stored).
struct CreatedKey {
  KeyRecord record;
  std::string raw_key;
};

class KeyStore {
 public:
  /// `store` must outlive this object and have run the keys migration.
  explicit KeyStore(Store& store) : store_(store) {}

  /// Creates a key. Errors: kInvalidArgument (empty or over-long name, bad scopes, negative
  /// limits), store errors.
  Result<CreatedKey> Create(const NewKey& k, int64_t now_ms);
  /// The key whose hash matches `raw_key` (compared in constant time), in any state. Errors:
  /// kNotFound.
  Result<KeyRecord> FindByRawKey(std::string_view raw_key);
  /// Errors: kNotFound.
  Result<KeyRecord> Get(std::string_view id);
  /// Every key, oldest first.
  Result<std::vector<KeyRecord>> List();
  /// Number of keys that are usable now (serve refuses to start without any key).
  Result<int64_t> CountUsable(int64_t now_ms);
  /// Disables a key (revoke) or enables it again. Errors: kNotFound.
  Status SetEnabled(std::string_view id, bool enabled, int64_t now_ms);
  /// Replaces a usable key by a new one of the same lineage, name, scopes and limits; the old
  /// key stops working at once. Errors: kNotFound, kConflict (revoked or already rotated).
  Result<CreatedKey> Rotate(std::string_view id, int64_t now_ms);
  /// Deletes the record. Errors: kNotFound.
  Status Delete(std::string_view id);
  /// Records a use (last_used_at). Errors: kNotFound.
  Status Touch(std::string_view id, int64_t now_ms);

 private:
  Result<KeyRecord> GetLocked(std::string_view id);
  Result<CreatedKey> InsertLocked(KeyRecord r, std::string raw);
  Store& store_;
};

}  // namespace asb::store
