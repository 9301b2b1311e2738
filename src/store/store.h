// Store: the durable records of the server in one SQLite database
// (<data_dir>/agent-sandbox.db, WAL, numbered migrations). This file holds the sandbox
// records; snapshots, keys, idempotency keys, sessions, preview tokens and events are further
// migrations (schema.cc) with files of their own.
//
// All methods are thread-safe (one connection behind a mutex; each call is a short statement).
// Timestamps are Unix epoch milliseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "store/db.h"
#include "store/secret_box.h"

namespace asb::store {

/// The ordered schema migrations of agent-sandbox.db (schema.cc). Append only.
std::span<const std::string_view> SchemaMigrations();

/// One row of the `sandboxes` table. `state` is the manager's state name ("creating",
/// "running", "paused", "stopping", "destroyed", "error"); the table's CHECK constraint rejects
/// others. `spec_json` holds what the sandbox was created with (cpus, memory_mb, pids_limit,
/// workspace_mb, tmp_size_mb, network, env, timeout_seconds, ...) as a JSON object owned by
/// core/; the store does not look inside, except to seal its "env" at rest when it has a
/// SecretBox (Store::SetSecretBox, sealed_spec.h).
struct SandboxRecord {
  std::string id;
  std::string owner;
  std::string template_name;
  std::string spec_json = "{}";
  std::string state;
  std::string error_message;
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  int64_t expires_at_ms = 0;
  int64_t idle_timeout_seconds = 0;  // 0 = none
  int64_t last_activity_at_ms = 0;
  std::optional<std::string> source_snapshot_id;
  std::string backend;  // "ns", ...
};

/// Which sandbox records to list.
struct SandboxFilter {
  std::optional<std::string> owner{};  // nullopt: every owner
  /// Only these states; empty: every state.
  std::vector<std::string> states{};
  /// Only records in a state other than "destroyed" (applied after `states`).
  bool live_only = false;
};

class Store {
 public:
  /// Opens (creating) the database at `path` (":memory:" for tests) and applies the schema
  /// migrations. For a file path, the parent directory is created (mode 0700) if missing.
  /// Errors: kInternal (cannot open or migrate), kConflict (schema newer than this program).
  static Result<std::unique_ptr<Store>> Open(const std::string& path, int64_t now_unix_ms);

  /// The schema version reached (== SchemaMigrations().size()).
  Result<int64_t> SchemaVersion();

  /// From now on the "env" of every sandbox and snapshot spec is sealed with `box` when written
  /// and opened when read (sealed_spec.h). Call once, before the store is shared. The database
  /// file itself is created 0600 by Open.
  void SetSecretBox(std::shared_ptr<const SecretBox> box);
  /// Seals the env of every record still holding it in plain text (written before sealing, or
  /// without a box); the number of records sealed. Run once at start, after SetSecretBox.
  Result<int64_t> SealPlainSecrets();
  /// A spec as it is written (env sealed, with a box) and as it is read back (env opened).
  std::string SealSpec(const std::string& spec_json) const;
  std::string OpenSpec(std::string spec_json) const;

  // ---- sandboxes -----------------------------------------------------------------------------

  /// Inserts a new record. Errors: kConflict if the id exists or the state is not a known name.
  Status InsertSandbox(const SandboxRecord& r);

  /// The record `id`, whatever its state. Errors: kNotFound.
  Result<SandboxRecord> GetSandbox(std::string_view id);

  /// Records matching `filter`, ordered by created_at then id.
  Result<std::vector<SandboxRecord>> ListSandboxes(const SandboxFilter& filter);

  /// Replaces every column of the record r.id (all fields but id and created_at_ms are
  /// written; created_at_ms too with `with_created_at`, for a warm pool's sandbox claimed by a
  /// create). Errors: kNotFound if no such row, kConflict for a bad state.
  Status UpdateSandbox(const SandboxRecord& r, bool with_created_at = false);

  /// Sets state, error_message and updated_at. Errors: kNotFound, kConflict (bad state name).
  Status SetSandboxState(std::string_view id, std::string_view state,
                         std::string_view error_message, int64_t now_ms);

  /// Sets expires_at (and updated_at). Errors: kNotFound.
  Status SetSandboxExpiry(std::string_view id, int64_t expires_at_ms, int64_t now_ms);

  /// Sets last_activity_at (not updated_at: activity is not a change of the record). Errors:
  /// kNotFound.
  Status TouchSandbox(std::string_view id, int64_t now_ms);

  /// Direct access for later record types, under the caller's own discipline: take lock()
  /// around any use.
  Db& db() { return db_; }
  std::mutex& lock() { return mu_; }

 private:
  explicit Store(Db db) : db_(std::move(db)) {}
  Db db_;
  std::mutex mu_;
  std::shared_ptr<const SecretBox> box_;  // set once at start; nullptr: env kept as written
};

}  // namespace asb::store
