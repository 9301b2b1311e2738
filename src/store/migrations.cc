#include "store/migrations.h"

#include <string>

namespace asb::store {

namespace {
constexpr std::string_view kCreateTable =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " applied_at INTEGER NOT NULL)";
}  // namespace

Result<int64_t> SchemaVersion(Db& db) {
  ASB_TRY(db.Exec(kCreateTable));
  ASB_ASSIGN_OR_RETURN(Stmt s,
                       db.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"));
  ASB_ASSIGN_OR_RETURN(bool row, s.Step());
  return row ? s.ColumnInt(0) : 0;
}

Result<int64_t> ApplyMigrations(Db& db, std::span<const std::string_view> migrations,
                                int64_t now_unix_ms) {
  ASB_ASSIGN_OR_RETURN(int64_t version, SchemaVersion(db));
  const auto known = static_cast<int64_t>(migrations.size());
  if (version > known) {
    return Fail(Error::Conflict("database schema version " + std::to_string(version) +
                                " is newer than this program's " + std::to_string(known)));
  }
  if (version == known) return known;
  // Foreign keys are off while migrations run (the pragma is a no-op inside a transaction, so
  // it is set around them): a migration that rebuilds a table drops the old one, and with them
  // on that drop would cascade into every table that references it. Each migration checks them
  // itself before it commits instead (https://sqlite.org/lang_altertable.html).
  ASB_TRY(db.Exec("PRAGMA foreign_keys = OFF"));
  Result<int64_t> reached = [&]() -> Result<int64_t> {
    for (int64_t v = version + 1; v <= known; ++v) {
      const std::string ctx = "apply migration " + std::to_string(v);
      ASB_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
      ASB_TRY_CTX(db.Exec(migrations[static_cast<size_t>(v - 1)]), ctx);
      ASB_ASSIGN_OR_RETURN(Stmt check, db.Prepare("PRAGMA foreign_key_check"));
      ASB_ASSIGN_OR_RETURN(bool violation, check.Step());
      if (violation) {
        return Fail(Error::Internal(ctx + ": it leaves rows whose foreign keys point nowhere"));
      }
      ASB_ASSIGN_OR_RETURN(
          Stmt ins, db.Prepare("INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)"));
      ins.Bind(1, v).Bind(2, now_unix_ms);
      ASB_TRY_CTX(ins.Run(), ctx);
      ASB_TRY_CTX(tx.Commit(), ctx);
    }
    return known;
  }();
  ASB_TRY(db.Exec("PRAGMA foreign_keys = ON"));
  return reached;
}

}  // namespace asb::store
