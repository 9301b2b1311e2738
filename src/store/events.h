// The audit trail in agent-sandbox.db (api/AUTH.md): one row per mutating API call and per
// exec — when, which key (and its lineage, the tenant), which sandbox, what action, the
// command line or path, the outcome (HTTP status and error code), the exit code and the
// duration. Never output, file contents or env values. Rows are kept for a configurable time
// (PurgeBefore) and survive restarts like every other record.
//
// Thread-safe: every method takes the Store's lock. Times are Unix epoch milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

struct EventRecord {
  int64_t seq = 0;  // assigned by Append: increasing, the paging cursor
  int64_t time_ms = 0;
  std::string request_id;
  std::string key_id;      // "" when auth is off
  std::string owner;       // the key's lineage (tenant); "" when auth is off
  std::string sandbox_id;  // "" for calls about no sandbox (keys)
  std::string action;      // "sandbox.create", "exec", "file.write", ...
  std::string target;      // command line or path; "" if none
  int64_t status = 0;      // HTTP status of the answer
  std::string result;      // "ok" or the wire error code
  std::optional<int64_t> exit_code;
  int64_t duration_ms = 0;
};

/// Which events to read: every given field must match. Ordered by seq ascending.
struct EventFilter {
  std::optional<std::string> sandbox_id;
  std::optional<std::string> key_id;
  std::optional<std::string> owner;
  int64_t since_ms = 0;   // time_ms >= since_ms
  int64_t after_seq = 0;  // cursor, oldest first: seq > after_seq
  /// Newest first (highest seq first); then the cursor is before_seq: seq < before_seq
  /// (0 = from the newest).
  bool newest_first = false;
  int64_t before_seq = 0;
  int64_t limit = 100;  // at most this many (1..1000)
};

class EventStore {
 public:
  /// `store` must outlive this object and have run the events migration.
  explicit EventStore(Store& store) : store_(store) {}
  /// Appends `e` (its seq is ignored) and returns the seq given.
  Result<int64_t> Append(const EventRecord& e);
  /// Events matching `f`, oldest first (f.newest_first: newest first), at most f.limit.
  Result<std::vector<EventRecord>> List(const EventFilter& f);
  /// Deletes events older than `cutoff_ms`; returns how many.
  Result<int64_t> PurgeBefore(int64_t cutoff_ms);

 private:
  Store& store_;
};

}  // namespace asb::store
