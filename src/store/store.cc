#include "store/store.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <utility>

#include "common/unique_fd.h"
#include "store/migrations.h"
#include "store/sealed_spec.h"

namespace asb::store {

namespace {

constexpr std::string_view kSandboxColumns =
    "id, owner, template, spec_json, state, error_message, created_at, updated_at, expires_at, "
    "idle_timeout_seconds, last_activity_at, source_snapshot_id, backend";

SandboxRecord ReadSandbox(const Stmt& s) {
  SandboxRecord r;
  r.id = s.ColumnText(0);
  r.owner = s.ColumnText(1);
  r.template_name = s.ColumnText(2);
  r.spec_json = s.ColumnText(3);
  r.state = s.ColumnText(4);
  r.error_message = s.ColumnText(5);
  r.created_at_ms = s.ColumnInt(6);
  r.updated_at_ms = s.ColumnInt(7);
  r.expires_at_ms = s.ColumnInt(8);
  r.idle_timeout_seconds = s.ColumnInt(9);
  r.last_activity_at_ms = s.ColumnInt(10);
  r.source_snapshot_id = s.ColumnOptionalText(11);
  r.backend = s.ColumnText(12);
  return r;
}

Status CreateParentDir(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return {};
  std::error_code ec;
  if (std::filesystem::is_directory(parent, ec)) return {};
  std::filesystem::create_directories(parent, ec);
  if (ec) return Fail(Error::FromErrno(ec.value(), "create directory " + parent.string()));
  if (::chmod(parent.c_str(), 0700) != 0) return FailErrno("chmod " + parent.string());
  return {};
}

Status ExpectOneRow(Db& db, std::string_view what, std::string_view id) {
  if (db.Changes() == 0) {
    return Fail(Error::NotFound(std::string(what) + ": no sandbox record " + std::string(id)));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, int64_t now_unix_ms) {
  if (path != ":memory:") {
    ASB_TRY(CreateParentDir(path));
    // Created 0600 before SQLite opens it: SQLite gives the -wal and -shm files the database
    // file's mode, and the default (0644) let any local user read env values, audit command
    // lines and key hashes (ADR 0014, round 3).
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return FailErrno("create " + path);
  }
  ASB_ASSIGN_OR_RETURN(Db db, Db::Open(path));
  // Deleted and overwritten rows are zeroed, not left in free pages: a secret that was sealed
  // (or a record that was removed) does not linger in the file.
  ASB_TRY_CTX(db.Exec("PRAGMA secure_delete = ON"), "open database " + path);
  ASB_TRY_CTX(ApplyMigrations(db, SchemaMigrations(), now_unix_ms), "migrate " + path);
  return std::unique_ptr<Store>(new Store(std::move(db)));
}

void Store::SetSecretBox(std::shared_ptr<const SecretBox> box) { box_ = std::move(box); }

std::string Store::SealSpec(const std::string& spec_json) const {
  return box_ ? SealSpecEnv(*box_, spec_json) : spec_json;
}

std::string Store::OpenSpec(std::string spec_json) const {
  return box_ ? OpenSpecEnv(*box_, spec_json) : spec_json;
}

Result<int64_t> Store::SealPlainSecrets() {
  if (!box_) return 0;
  std::lock_guard lock(mu_);
  int64_t sealed = 0;
  for (const char* table : {"sandboxes", "snapshots"}) {
    std::vector<std::pair<std::string, std::string>> plain;  // id, sealed spec
    {
      ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare(std::string("SELECT id, spec_json FROM ") + table +
                                               " WHERE spec_json LIKE '%\"env\":{\"%'"));
      for (;;) {
        ASB_ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
        std::string spec = s.ColumnText(1);
        if (HasPlainEnv(spec)) plain.emplace_back(s.ColumnText(0), SealSpecEnv(*box_, spec));
      }
    }
    for (const auto& [id, spec] : plain) {
      ASB_ASSIGN_OR_RETURN(
          Stmt u, db_.Prepare(std::string("UPDATE ") + table + " SET spec_json=? WHERE id=?"));
      u.Bind(1, spec).Bind(2, id);
      ASB_TRY_CTX(u.Run(), std::string("seal env of ") + table + " " + id);
      ++sealed;
    }
  }
  return sealed;
}

Result<int64_t> Store::SchemaVersion() {
  std::lock_guard lock(mu_);
  return store::SchemaVersion(db_);
}

Status Store::InsertSandbox(const SandboxRecord& r) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("INSERT INTO sandboxes(" + std::string(kSandboxColumns) +
                                           ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"));
  s.Bind(1, r.id)
      .Bind(2, r.owner)
      .Bind(3, r.template_name)
      .Bind(4, SealSpec(r.spec_json))
      .Bind(5, r.state)
      .Bind(6, r.error_message)
      .Bind(7, r.created_at_ms)
      .Bind(8, r.updated_at_ms)
      .Bind(9, r.expires_at_ms)
      .Bind(10, r.idle_timeout_seconds)
      .Bind(11, r.last_activity_at_ms)
      .Bind(12, r.source_snapshot_id)
      .Bind(13, r.backend);
  ASB_TRY_CTX(s.Run(), "insert sandbox " + r.id);
  return {};
}

Result<SandboxRecord> Store::GetSandbox(std::string_view id) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("SELECT " + std::string(kSandboxColumns) +
                                           " FROM sandboxes WHERE id = ?"));
  s.Bind(1, id);
  ASB_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Fail(Error::NotFound("no sandbox record " + std::string(id)));
  SandboxRecord r = ReadSandbox(s);
  r.spec_json = OpenSpec(std::move(r.spec_json));
  return r;
}

Result<std::vector<SandboxRecord>> Store::ListSandboxes(const SandboxFilter& filter) {
  std::string sql = "SELECT " + std::string(kSandboxColumns) + " FROM sandboxes WHERE 1=1";
  if (filter.owner) sql += " AND owner = ?";
  if (!filter.states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < filter.states.size(); ++i) sql += i == 0 ? "?" : ",?";
    sql += ")";
  }
  if (filter.live_only) sql += " AND state <> 'destroyed'";
  sql += " ORDER BY created_at, id";

  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare(sql));
  int i = 1;
  if (filter.owner) s.Bind(i++, *filter.owner);
  for (const auto& st : filter.states) s.Bind(i++, st);
  std::vector<SandboxRecord> out;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadSandbox(s));
    out.back().spec_json = OpenSpec(std::move(out.back().spec_json));
  }
  return out;
}

Status Store::UpdateSandbox(const SandboxRecord& r, bool with_created_at) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(
      Stmt s, db_.Prepare(std::string("UPDATE sandboxes SET owner=?, template=?, spec_json=?, "
                                      "state=?, error_message=?, updated_at=?, expires_at=?, "
                                      "idle_timeout_seconds=?, last_activity_at=?, "
                                      "source_snapshot_id=?, backend=?") +
                          (with_created_at ? ", created_at=?" : "") + " WHERE id=?"));
  s.Bind(1, r.owner)
      .Bind(2, r.template_name)
      .Bind(3, SealSpec(r.spec_json))
      .Bind(4, r.state)
      .Bind(5, r.error_message)
      .Bind(6, r.updated_at_ms)
      .Bind(7, r.expires_at_ms)
      .Bind(8, r.idle_timeout_seconds)
      .Bind(9, r.last_activity_at_ms)
      .Bind(10, r.source_snapshot_id)
      .Bind(11, r.backend);
  if (with_created_at) s.Bind(12, r.created_at_ms);
  s.Bind(with_created_at ? 13 : 12, r.id);
  ASB_TRY_CTX(s.Run(), "update sandbox " + r.id);
  return ExpectOneRow(db_, "update sandbox", r.id);
}

Status Store::SetSandboxState(std::string_view id, std::string_view state,
                              std::string_view error_message, int64_t now_ms) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("UPDATE sandboxes SET state=?, error_message=?, "
                                           "updated_at=? WHERE id=?"));
  s.Bind(1, state).Bind(2, error_message).Bind(3, now_ms).Bind(4, id);
  ASB_TRY_CTX(s.Run(), "set state of sandbox " + std::string(id) + " to " + std::string(state));
  return ExpectOneRow(db_, "set sandbox state", id);
}

Status Store::SetSandboxExpiry(std::string_view id, int64_t expires_at_ms, int64_t now_ms) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s,
                       db_.Prepare("UPDATE sandboxes SET expires_at=?, updated_at=? WHERE id=?"));
  s.Bind(1, expires_at_ms).Bind(2, now_ms).Bind(3, id);
  ASB_TRY_CTX(s.Run(), "set expiry of sandbox " + std::string(id));
  return ExpectOneRow(db_, "set sandbox expiry", id);
}

Status Store::TouchSandbox(std::string_view id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  ASB_ASSIGN_OR_RETURN(Stmt s, db_.Prepare("UPDATE sandboxes SET last_activity_at=? WHERE id=?"));
  s.Bind(1, now_ms).Bind(2, id);
  ASB_TRY_CTX(s.Run(), "touch sandbox " + std::string(id));
  return ExpectOneRow(db_, "touch sandbox", id);
}

}  // namespace asb::store
