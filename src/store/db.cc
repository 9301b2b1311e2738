#include "store/db.h"

#include <utility>

namespace asb::store {

// SQLite's words (`text`), and the statement or file named in `context`, are the operator's:
// the client reads what kind of failure it was (docs/design/error-handling.md).
namespace {
Error SqliteErrorText(int rc, std::string_view context, std::string_view text) {
  std::string detail(context);
  detail += ": ";
  detail += text;
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error::WithOperatorDetail(ErrorCode::kUnavailable, "the database is busy",
                                       std::move(detail));
    case SQLITE_CONSTRAINT:
      return Error::WithOperatorDetail(ErrorCode::kConflict, "a database constraint failed",
                                       std::move(detail));
    default:
      return Error::FromHost(ErrorCode::kInternal, context, text);
  }
}
}  // namespace

Error SqliteError(int rc, sqlite3* db, std::string_view context) {
  return SqliteErrorText(
      rc, context,
      (db != nullptr && sqlite3_errcode(db) == rc) ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
}

// ---- Db --------------------------------------------------------------------------------------

Result<Db> Db::Open(const std::string& path, int busy_timeout_ms) {
  sqlite3* raw = nullptr;
  int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  Db db(raw, path);  // owns raw even on failure (sqlite3_open_v2 may allocate it)
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, raw, "open database " + path));
  sqlite3_extended_result_codes(raw, 1);
  rc = sqlite3_busy_timeout(raw, busy_timeout_ms);
  if (rc != SQLITE_OK) return Fail(SqliteError(rc, raw, "set busy timeout"));
  ASB_TRY_CTX(db.Exec("PRAGMA foreign_keys = ON"), "open database " + path);
  if (path != ":memory:" && !path.empty()) {
    ASB_ASSIGN_OR_RETURN(Stmt s, db.Prepare("PRAGMA journal_mode = WAL"));
    ASB_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row || s.ColumnText(0) != "wal") {
      return Fail(Error::Internal("open database " + path + ": cannot enable WAL journal"));
    }
    ASB_TRY_CTX(db.Exec("PRAGMA synchronous = NORMAL"), "open database " + path);
  }
  return db;
}

Db::~Db() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
}

Db::Db(Db&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Db& Db::operator=(Db&& other) noexcept {
  if (this != &other) {
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Status Db::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return Fail(SqliteErrorText(rc, "exec `" + text.substr(0, 80) + "`", msg));
  }
  return {};
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Fail(SqliteError(rc, db_, "prepare `" + std::string(sql.substr(0, 80)) + "`"));
  }
  return Stmt(stmt, db_, std::string(sql));
}

int64_t Db::Changes() const { return sqlite3_changes64(db_); }

Result<std::string> Db::JournalMode() {
  ASB_ASSIGN_OR_RETURN(Stmt s, Prepare("PRAGMA journal_mode"));
  ASB_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Fail(Error::Internal("PRAGMA journal_mode returned no row"));
  return s.ColumnText(0);
}

// ---- Stmt ------------------------------------------------------------------------------------

Stmt::~Stmt() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Stmt::Stmt(Stmt&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)),
      db_(other.db_),
      sql_(std::move(other.sql_)),
      bind_error_(other.bind_error_) {}

Stmt& Stmt::operator=(Stmt&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
    sql_ = std::move(other.sql_);
    bind_error_ = other.bind_error_;
  }
  return *this;
}

void Stmt::NoteBind(int rc) {
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

Stmt& Stmt::Bind(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Stmt& Stmt::Bind(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Stmt& Stmt::Bind(int index, std::string_view value) {
  // A null data pointer would bind SQL NULL; an empty string_view means "".
  const char* data = value.data() != nullptr ? value.data() : "";
  NoteBind(sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Stmt& Stmt::Bind(int index, const std::optional<std::string>& value) {
  return value ? Bind(index, std::string_view(*value)) : BindNull(index);
}

Stmt& Stmt::BindNull(int index) {
  NoteBind(sqlite3_bind_null(stmt_, index));
  return *this;
}

Result<bool> Stmt::Step() {
  if (bind_error_ != SQLITE_OK) {
    return Fail(SqliteError(bind_error_, db_, "bind `" + sql_.substr(0, 80) + "`"));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error e = SqliteError(rc, db_, "step `" + sql_.substr(0, 80) + "`");
  sqlite3_reset(stmt_);
  return Fail(std::move(e));
}

Status Stmt::Run() {
  for (;;) {
    ASB_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return {};
  }
}

void Stmt::Reset() { sqlite3_reset(stmt_); }

int64_t Stmt::ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Stmt::ColumnText(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

bool Stmt::ColumnIsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::optional<std::string> Stmt::ColumnOptionalText(int col) const {
  if (ColumnIsNull(col)) return std::nullopt;
  return ColumnText(col);
}

// ---- Transaction -----------------------------------------------------------------------------

Result<Transaction> Transaction::Begin(Db& db) {
  ASB_TRY_CTX(db.Exec("BEGIN IMMEDIATE"), "begin transaction");
  return Transaction(&db);
}

Transaction::~Transaction() {
  if (db_ != nullptr) (void)db_->Exec("ROLLBACK");
}

Status Transaction::Commit() {
  if (db_ == nullptr) return Fail(Error::Internal("commit: transaction already finished"));
  ASB_TRY_CTX(db_->Exec("COMMIT"), "commit transaction");
  db_ = nullptr;
  return {};
}

}  // namespace asb::store
