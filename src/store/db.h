// A small RAII layer over SQLite 3 (https://sqlite.org/c3ref/intro.html): Db owns a connection,
// Stmt owns a prepared statement, Transaction owns a BEGIN..COMMIT and rolls back unless
// committed. Every SQLite failure becomes an Error whose message carries the SQL context and
// sqlite3_errmsg(); SQLITE_BUSY/LOCKED map to kUnavailable, SQLITE_CONSTRAINT to kConflict,
// everything else to kInternal.
//
// A Db is not safe for concurrent use from several threads without external locking (the Store
// above it holds a mutex); it is opened with SQLITE_OPEN_FULLMUTEX anyway as a second guard.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.h"

namespace asb::store {

class Stmt;

class Db {
 public:
  /// Opens (creating if missing) the database at `path`; ":memory:" gives a private in-memory
  /// database. For files, sets journal_mode=WAL and synchronous=NORMAL (durable at checkpoints,
  /// never corrupt: https://sqlite.org/wal.html); for both, foreign_keys=ON and a busy timeout
  /// of `busy_timeout_ms` milliseconds. Errors: kInternal (cannot open, or a pragma failed),
  /// kUnavailable (locked by another process longer than the busy timeout).
  static Result<Db> Open(const std::string& path, int busy_timeout_ms = 5000);

  Db() = default;
  ~Db();
  Db(Db&& other) noexcept;
  Db& operator=(Db&& other) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  /// Runs one or more SQL statements without results (sqlite3_exec). `sql` must not contain
  /// untrusted input: use Prepare() and bind parameters for that.
  Status Exec(std::string_view sql);

  /// Compiles one statement. Errors: kInternal with the SQL and SQLite's message.
  Result<Stmt> Prepare(std::string_view sql);

  /// Rows changed by the last INSERT/UPDATE/DELETE (sqlite3_changes64).
  int64_t Changes() const;

  /// The journal mode in effect ("wal", "memory", ...), for tests and diagnostics.
  Result<std::string> JournalMode();

  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  explicit Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// A prepared statement. Bind parameters are 1-based, as in SQLite.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt();
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&& other) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int index, int64_t value);
  Stmt& Bind(int index, double value);
  /// Binds text (copied by SQLite: SQLITE_TRANSIENT).
  Stmt& Bind(int index, std::string_view value);
  Stmt& Bind(int index, const char* value) { return Bind(index, std::string_view(value)); }
  Stmt& Bind(int index, const std::string& value) { return Bind(index, std::string_view(value)); }
  Stmt& Bind(int index, const std::optional<std::string>& value);
  Stmt& BindNull(int index);

  /// Advances: true when a row is available, false when done. A bind error from earlier is
  /// reported here. Errors: kConflict (constraint), kUnavailable (busy), kInternal.
  Result<bool> Step();
  /// Steps to completion, expecting no rows (INSERT/UPDATE/DELETE).
  Status Run();
  /// Resets for another execution, keeping bindings.
  void Reset();

  int64_t ColumnInt(int col) const;
  double ColumnDouble(int col) const;
  std::string ColumnText(int col) const;
  bool ColumnIsNull(int col) const;
  std::optional<std::string> ColumnOptionalText(int col) const;

 private:
  friend class Db;
  Stmt(sqlite3_stmt* stmt, sqlite3* db, std::string sql)
      : stmt_(stmt), db_(db), sql_(std::move(sql)) {}
  void NoteBind(int rc);
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
  std::string sql_;
  int bind_error_ = SQLITE_OK;
};

/// BEGIN IMMEDIATE on construction (Begin), ROLLBACK on destruction unless Commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> Begin(Db& db);
  ~Transaction();
  Transaction(Transaction&& other) noexcept : db_(std::exchange(other.db_, nullptr)) {}
  Transaction& operator=(Transaction&&) = delete;
  Transaction(const Transaction&) = delete;
  Status Commit();

 private:
  explicit Transaction(Db* db) : db_(db) {}
  Db* db_ = nullptr;
};

/// Maps a SQLite result code plus context to an Error: busy/locked -> kUnavailable, constraint
/// -> kConflict, else a kInternal host failure (Error::FromHost). SQLite's words and the
/// context (a statement, a file) are in the detail only (docs/design/error-handling.md).
Error SqliteError(int rc, sqlite3* db, std::string_view context);

}  // namespace asb::store
