// Seed A's sessions (api/handlers_seed_a.cc): a caller-chosen session name, per owner, mapped
// to one of our sandboxes, in agent-sandbox.db so that a restarted server reaches the same
// sandbox under the same name. A row goes away by itself when its sandbox does: a trigger of
// the migration deletes the rows of a sandbox whose state becomes "destroyed" or "error"
// (reaped, deleted through /v1, lost while the server was down), and a foreign key cascades
// if a sandbox record is ever deleted.
//
// Thread-safe: every method takes the Store's lock around its statements. Times are Unix
// epoch milliseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace asb::store {

/// One session: (owner, name) -> sandbox_id. `owner` is the tenant the request acted for
/// (core::kAnyOwner "" for admin keys and --insecure-no-auth).
struct ExecSessionRecord {
  std::string owner;
  std::string name;
  std::string sandbox_id;
  int64_t created_at_ms = 0;
};

class ExecSessionStore {
 public:
  explicit ExecSessionStore(Store& store) : store_(store) {}

  /// The sandbox id of (owner, name), or nullopt when there is no such session.
  Result<std::optional<std::string>> Find(std::string_view owner, std::string_view name);

  /// Maps (owner, name) to `sandbox_id` unless the session exists already, and returns the
  /// sandbox id mapped afterwards (another request's, when it won a race). Errors: kConflict
  /// when `sandbox_id` names no sandbox record.
  Result<std::string> Insert(std::string_view owner, std::string_view name,
                             std::string_view sandbox_id, int64_t now_ms);

  /// Removes (owner, name) if it still maps to `sandbox_id` (a session re-made meanwhile
  /// stays).
  Status Erase(std::string_view owner, std::string_view name, std::string_view sandbox_id);

  /// The sessions of `owner` (nullopt: every owner's), ordered by created_at then name.
  Result<std::vector<ExecSessionRecord>> List(const std::optional<std::string>& owner);

 private:
  Store& store_;
};

}  // namespace asb::store
