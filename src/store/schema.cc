// The schema of agent-sandbox.db as numbered migrations (store/migrations.h). Append only: a
// released migration is never edited, because databases in the field have already run it.
#include <array>

#include "store/store.h"

namespace asb::store {

namespace {
constexpr std::string_view kM1Sandboxes = R"sql(
CREATE TABLE sandboxes (
  id                   TEXT PRIMARY KEY NOT NULL,
  owner                TEXT NOT NULL,
  template             TEXT NOT NULL,
  spec_json            TEXT NOT NULL DEFAULT '{}',
  state                TEXT NOT NULL
                       CHECK (state IN ('creating','running','stopping','destroyed','error')),
  error_message        TEXT NOT NULL DEFAULT '',
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  expires_at           INTEGER NOT NULL,
  idle_timeout_seconds INTEGER NOT NULL DEFAULT 0 CHECK (idle_timeout_seconds >= 0),
  last_activity_at     INTEGER NOT NULL,
  source_snapshot_id   TEXT,
  backend              TEXT NOT NULL
);
CREATE INDEX sandboxes_by_owner_state ON sandboxes(owner, state);
CREATE INDEX sandboxes_by_state ON sandboxes(state);
)sql";

// ADR 0008: workspace snapshots (store/snapshot_store.h). No foreign key to sandboxes: a
// snapshot outlives its sandbox, and uploads have none.
constexpr std::string_view kM2Snapshots = R"sql(
CREATE TABLE snapshots (
  id            TEXT PRIMARY KEY NOT NULL,
  owner         TEXT NOT NULL,
  sandbox_id    TEXT NOT NULL DEFAULT '',
  name          TEXT NOT NULL DEFAULT '',
  template      TEXT NOT NULL,
  spec_json     TEXT NOT NULL DEFAULT '{}',
  state         TEXT NOT NULL CHECK (state IN ('pending','ready')),
  size_bytes    INTEGER NOT NULL DEFAULT 0,
  content_bytes INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL
);
CREATE INDEX snapshots_by_owner ON snapshots(owner, created_at);
CREATE INDEX snapshots_by_sandbox ON snapshots(sandbox_id);
)sql";

// api/AUTH.md: API keys (store/keys.h) and the audit trail (store/events.h).
constexpr std::string_view kM3KeysEvents = R"sql(
CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY NOT NULL,
  name          TEXT NOT NULL,
  key_prefix    TEXT NOT NULL,
  key_hash      TEXT NOT NULL UNIQUE,
  scopes        TEXT NOT NULL,
  rate_limit    INTEGER NOT NULL DEFAULT 0 CHECK (rate_limit >= 0),
  max_sandboxes INTEGER NOT NULL DEFAULT 0 CHECK (max_sandboxes >= 0),
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER NOT NULL DEFAULT 0,
  expires_at    INTEGER NOT NULL DEFAULT 0,
  enabled       INTEGER NOT NULL DEFAULT 1,
  revoked_at    INTEGER NOT NULL DEFAULT 0,
  lineage       TEXT NOT NULL,
  rotated_at    INTEGER NOT NULL DEFAULT 0,
  replaced_by   TEXT NOT NULL DEFAULT ''
);
CREATE TABLE events (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms     INTEGER NOT NULL,
  request_id  TEXT NOT NULL DEFAULT '',
  key_id      TEXT NOT NULL DEFAULT '',
  owner       TEXT NOT NULL DEFAULT '',
  sandbox_id  TEXT NOT NULL DEFAULT '',
  action      TEXT NOT NULL,
  target      TEXT NOT NULL DEFAULT '',
  status      INTEGER NOT NULL,
  result      TEXT NOT NULL,
  exit_code   INTEGER,
  duration_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX events_by_time ON events(time_ms);
CREATE INDEX events_by_sandbox ON events(sandbox_id, seq);
CREATE INDEX events_by_key ON events(key_id, seq);
CREATE INDEX events_by_owner ON events(owner, seq);
)sql";

// Idempotency-Key of create (store/idempotency.h). scope is the tenant (a
// key's lineage, or "key:<id>" for an admin key), so keys of two tenants never meet.
constexpr std::string_view kM4IdempotencyKeys = R"sql(
CREATE TABLE idempotency_keys (
  scope       TEXT NOT NULL,
  idem_key    TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status      INTEGER NOT NULL DEFAULT 0 CHECK (status >= 0),
  body        TEXT NOT NULL DEFAULT '',
  sandbox_id  TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_keys_by_time ON idempotency_keys(created_at);
)sql";

// ADR 0007: seed A's sessions (store/exec_sessions.h), so a session name reaches the
// same sandbox after a restart. A row lives as long as its sandbox: the trigger drops the rows
// of a sandbox that becomes destroyed or error (however that happens), the foreign key those of
// a record that is deleted.
constexpr std::string_view kMExecSessions = R"sql(
CREATE TABLE exec_sessions (
  owner       TEXT NOT NULL,
  name        TEXT NOT NULL,
  sandbox_id  TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (owner, name)
);
CREATE INDEX exec_sessions_by_sandbox ON exec_sessions(sandbox_id);
CREATE TRIGGER exec_sessions_end AFTER UPDATE OF state ON sandboxes
  WHEN NEW.state IN ('destroyed', 'error')
BEGIN
  DELETE FROM exec_sessions WHERE sandbox_id = NEW.id;
END;
)sql";

// Preview URLs of exposed ports (store/preview_tokens.h, ADR 0015). Only the
// token's SHA-256 is kept. A token dies with its sandbox: the triggers delete a sandbox's
// tokens when its record turns "destroyed" (every destroy path writes that state) and the
// foreign key when the record itself goes.
constexpr std::string_view kMPreviewTokens = R"sql(
CREATE TABLE preview_tokens (
  id          TEXT PRIMARY KEY NOT NULL,
  token_hash  TEXT NOT NULL UNIQUE,
  sandbox_id  TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
  port        INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
  owner       TEXT NOT NULL,
  created_by  TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL CHECK (expires_at > created_at)
);
CREATE INDEX preview_tokens_by_sandbox ON preview_tokens(sandbox_id, created_at);
CREATE INDEX preview_tokens_by_expiry ON preview_tokens(expires_at);
CREATE TRIGGER preview_tokens_die_with_sandbox AFTER UPDATE OF state ON sandboxes
WHEN NEW.state = 'destroyed'
BEGIN
  DELETE FROM preview_tokens WHERE sandbox_id = NEW.id;
END;
)sql";

// ADR 0024: the state "paused". SQLite cannot alter a CHECK constraint, so the table is made
// anew, filled, and renamed over the old one (https://sqlite.org/lang_altertable.html, "Making
// Other Kinds Of Table Schema Changes"); ApplyMigrations runs it with foreign keys off, so the
// drop cascades into nothing, and checks them before it commits. The indexes and the triggers
// on sandboxes go with the old table and are made again, unchanged.
constexpr std::string_view kMPausedState = R"sql(
CREATE TABLE sandboxes_v7 (
  id                   TEXT PRIMARY KEY NOT NULL,
  owner                TEXT NOT NULL,
  template             TEXT NOT NULL,
  spec_json            TEXT NOT NULL DEFAULT '{}',
  state                TEXT NOT NULL
                       CHECK (state IN ('creating','running','paused','stopping','destroyed',
                                        'error')),
  error_message        TEXT NOT NULL DEFAULT '',
  created_at           INTEGER NOT NULL,
  updated_at           INTEGER NOT NULL,
  expires_at           INTEGER NOT NULL,
  idle_timeout_seconds INTEGER NOT NULL DEFAULT 0 CHECK (idle_timeout_seconds >= 0),
  last_activity_at     INTEGER NOT NULL,
  source_snapshot_id   TEXT,
  backend              TEXT NOT NULL
);
INSERT INTO sandboxes_v7 (id, owner, template, spec_json, state, error_message, created_at,
                          updated_at, expires_at, idle_timeout_seconds, last_activity_at,
                          source_snapshot_id, backend)
  SELECT id, owner, template, spec_json, state, error_message, created_at, updated_at,
         expires_at, idle_timeout_seconds, last_activity_at, source_snapshot_id, backend
  FROM sandboxes;
DROP TABLE sandboxes;
ALTER TABLE sandboxes_v7 RENAME TO sandboxes;
CREATE INDEX sandboxes_by_owner_state ON sandboxes(owner, state);
CREATE INDEX sandboxes_by_state ON sandboxes(state);
CREATE TRIGGER exec_sessions_end AFTER UPDATE OF state ON sandboxes
  WHEN NEW.state IN ('destroyed', 'error')
BEGIN
  DELETE FROM exec_sessions WHERE sandbox_id = NEW.id;
END;
CREATE TRIGGER preview_tokens_die_with_sandbox AFTER UPDATE OF state ON sandboxes
WHEN NEW.state = 'destroyed'
BEGIN
  DELETE FROM preview_tokens WHERE sandbox_id = NEW.id;
END;
)sql";

constexpr std::array<std::string_view, 7> kMigrations = {
    kM1Sandboxes,   kM2Snapshots,    kM3KeysEvents, kM4IdempotencyKeys,
    kMExecSessions, kMPreviewTokens, kMPausedState};
}  // namespace

std::span<const std::string_view> SchemaMigrations() { return kMigrations; }

}  // namespace asb::store
