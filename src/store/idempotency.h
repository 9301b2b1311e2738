// Idempotency keys of POST /v1/sandboxes, in agent-sandbox.db so they
// survive a restart. A key is scoped by the caller's tenant (`scope`), so one tenant can
// neither see nor collide with another's keys. A row is "in progress" (status 0) from Begin()
// until Complete() stores the answer, or Abandon() drops it (a failed create is not remembered:
// the retry runs again). Rows older than the retention window count as absent.
//
// Thread-safe: every method takes the Store's lock around its statements. Times are Unix
// epoch milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

/// How long a key is remembered: 24 hours, as Stripe does.
inline constexpr int64_t kIdempotencyRetentionMs = 24LL * 3600 * 1000;

/// Keys are 1..kMaxIdempotencyKeyBytes printable ASCII characters (0x21..0x7e and space).
inline constexpr size_t kMaxIdempotencyKeyBytes = 255;

/// kInvalidArgument unless `key` is 1..255 printable ASCII characters.
Status ValidateIdempotencyKey(std::string_view key);

/// What Begin() found.
struct IdempotencyClaim {
  enum class Kind {
    kNew,         // no live row: one was inserted (in progress); run the request, then Complete
    kReplay,      // a finished request with the same fingerprint: answer status/body again
    kMismatch,    // the key was used with a different request body
    kInProgress,  // the first request with this key has not finished yet
  };
  Kind kind = Kind::kNew;
  int status = 0;    // kReplay: the stored HTTP status
  std::string body;  // kReplay: the stored response body
};

class IdempotencyStore {
 public:
  explicit IdempotencyStore(Store& store) : store_(store) {}

  /// Looks up (scope, key) and claims it when there is no live row. `fingerprint` identifies
  /// the request (a hash of its canonical body); rows older than now_ms - retention_ms are
  /// replaced.
  Result<IdempotencyClaim> Begin(std::string_view scope, std::string_view key,
                                 std::string_view fingerprint, int64_t now_ms,
                                 int64_t retention_ms);
  /// Stores the answer of a claimed key (status > 0).
  Status Complete(std::string_view scope, std::string_view key, int status, std::string_view body,
                  std::string_view sandbox_id);
  /// Drops a claimed key whose request failed.
  Status Abandon(std::string_view scope, std::string_view key);
  /// Drops rows older than the retention window and in-progress rows left by a server that
  /// stopped mid-create (called at startup). Returns how many were removed.
  Result<int64_t> Prune(int64_t now_ms, int64_t retention_ms, bool in_progress_too);

 private:
  Store& store_;
};

}  // namespace asb::store
