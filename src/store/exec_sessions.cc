#include "store/exec_sessions.h"

#include <mutex>

namespace asb::store {

Result<std::optional<std::string>> ExecSessionStore::Find(std::string_view owner,
                                                          std::string_view name) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT sandbox_id FROM exec_sessions "
                                                    "WHERE owner = ? AND name = ?"));
  st.Bind(1, owner).Bind(2, name);
  ASB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(st.ColumnText(0));
}

Result<std::string> ExecSessionStore::Insert(std::string_view owner, std::string_view name,
                                             std::string_view sandbox_id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  Db& db = store_.db();
  ASB_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  ASB_ASSIGN_OR_RETURN(Stmt ins, db.Prepare("INSERT INTO exec_sessions (owner, name, sandbox_id, "
                                            "created_at) VALUES (?,?,?,?) "
                                            "ON CONFLICT (owner, name) DO NOTHING"));
  ins.Bind(1, owner).Bind(2, name).Bind(3, sandbox_id).Bind(4, now_ms);
  ASB_TRY_CTX(ins.Run(), "insert session " + std::string(name));
  ASB_ASSIGN_OR_RETURN(Stmt sel, db.Prepare("SELECT sandbox_id FROM exec_sessions "
                                            "WHERE owner = ? AND name = ?"));
  sel.Bind(1, owner).Bind(2, name);
  ASB_ASSIGN_OR_RETURN(bool row, sel.Step());
  if (!row) return Fail(Error::Internal("session " + std::string(name) + " vanished on insert"));
  std::string mapped = sel.ColumnText(0);
  ASB_TRY_CTX(tx.Commit(), "insert session " + std::string(name));
  return mapped;
}

Status ExecSessionStore::Erase(std::string_view owner, std::string_view name,
                               std::string_view sandbox_id) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("DELETE FROM exec_sessions WHERE owner = ? "
                                                    "AND name = ? AND sandbox_id = ?"));
  st.Bind(1, owner).Bind(2, name).Bind(3, sandbox_id);
  ASB_TRY_CTX(st.Run(), "erase session " + std::string(name));
  return {};
}

Result<std::vector<ExecSessionRecord>> ExecSessionStore::List(
    const std::optional<std::string>& owner) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st,
                       store_.db().Prepare("SELECT owner, name, sandbox_id, created_at FROM "
                                           "exec_sessions WHERE ?1 IS NULL OR owner = ?1 "
                                           "ORDER BY created_at, name"));
  st.Bind(1, owner);
  std::vector<ExecSessionRecord> out;
  while (true) {
    ASB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ExecSessionRecord r;
    r.owner = st.ColumnText(0);
    r.name = st.ColumnText(1);
    r.sandbox_id = st.ColumnText(2);
    r.created_at_ms = st.ColumnInt(3);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace asb::store
