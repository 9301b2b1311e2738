// Numbered schema migrations. A migration is one SQL script; its number is its 1-based position
// in the ordered list. The table schema_migrations(version, applied_at) records which ones ran.
// Each pending migration runs in its own transaction together with its schema_migrations row,
// so a crash leaves the schema at a whole version, and running ApplyMigrations again on an
// up-to-date database does nothing. Never edit or reorder a released migration: append.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/result.h"
#include "store/db.h"

namespace asb::store {

/// Applies migrations[version..] where `version` is the highest already recorded, and returns
/// the version reached (migrations.size()). Errors: kInternal with the failing migration's
/// number (the database then stays at the previous version); kConflict if the database is at a
/// version newer than this program knows (a downgrade).
Result<int64_t> ApplyMigrations(Db& db, std::span<const std::string_view> migrations,
                                int64_t now_unix_ms);

/// The highest applied version (0 for a new database).
Result<int64_t> SchemaVersion(Db& db);

}  // namespace asb::store
