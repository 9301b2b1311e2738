#include "store/idempotency.h"

#include <mutex>

namespace asb::store {

Status ValidateIdempotencyKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxIdempotencyKeyBytes) {
    return Fail(Error::InvalidArgument("Idempotency-Key: must be 1 to " +
                                       std::to_string(kMaxIdempotencyKeyBytes) +
                                       " characters, got " + std::to_string(key.size())));
  }
  for (char c : key) {
    if (c < 0x20 || c > 0x7e) {
      return Fail(Error::InvalidArgument("Idempotency-Key: printable ASCII characters only"));
    }
  }
  return {};
}

Result<IdempotencyClaim> IdempotencyStore::Begin(std::string_view scope, std::string_view key,
                                                 std::string_view fingerprint, int64_t now_ms,
                                                 int64_t retention_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  Db& db = store_.db();
  ASB_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  ASB_ASSIGN_OR_RETURN(Stmt old, db.Prepare("DELETE FROM idempotency_keys WHERE scope = ? AND "
                                            "idem_key = ? AND created_at < ?"));
  old.Bind(1, scope).Bind(2, key).Bind(3, now_ms - retention_ms);
  ASB_TRY_CTX(old.Run(), "expire idempotency key");
  ASB_ASSIGN_OR_RETURN(Stmt sel, db.Prepare("SELECT fingerprint, status, body FROM "
                                            "idempotency_keys WHERE scope = ? AND idem_key = ?"));
  sel.Bind(1, scope).Bind(2, key);
  ASB_ASSIGN_OR_RETURN(bool row, sel.Step());
  IdempotencyClaim c;
  if (row) {
    if (sel.ColumnText(0) != fingerprint) {
      c.kind = IdempotencyClaim::Kind::kMismatch;
    } else if (sel.ColumnInt(1) == 0) {
      c.kind = IdempotencyClaim::Kind::kInProgress;
    } else {
      c.kind = IdempotencyClaim::Kind::kReplay;
      c.status = static_cast<int>(sel.ColumnInt(1));
      c.body = sel.ColumnText(2);
    }
    return c;
  }
  ASB_ASSIGN_OR_RETURN(Stmt ins,
                       db.Prepare("INSERT INTO idempotency_keys (scope, idem_key, fingerprint, "
                                  "created_at) VALUES (?,?,?,?)"));
  ins.Bind(1, scope).Bind(2, key).Bind(3, fingerprint).Bind(4, now_ms);
  ASB_TRY_CTX(ins.Run(), "claim idempotency key");
  ASB_TRY_CTX(tx.Commit(), "claim idempotency key");
  return c;
}

Status IdempotencyStore::Complete(std::string_view scope, std::string_view key, int status,
                                  std::string_view body, std::string_view sandbox_id) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st,
                       store_.db().Prepare("UPDATE idempotency_keys SET status = ?, body = ?, "
                                           "sandbox_id = ? WHERE scope = ? AND idem_key = ?"));
  st.Bind(1, static_cast<int64_t>(status)).Bind(2, body).Bind(3, sandbox_id).Bind(4, scope);
  st.Bind(5, key);
  ASB_TRY_CTX(st.Run(), "store idempotent answer");
  return {};
}

Status IdempotencyStore::Abandon(std::string_view scope, std::string_view key) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("DELETE FROM idempotency_keys WHERE "
                                                    "scope = ? AND idem_key = ? AND status = 0"));
  st.Bind(1, scope).Bind(2, key);
  ASB_TRY_CTX(st.Run(), "abandon idempotency key");
  return {};
}

Result<int64_t> IdempotencyStore::Prune(int64_t now_ms, int64_t retention_ms,
                                        bool in_progress_too) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(
      Stmt st,
      store_.db().Prepare(in_progress_too ? "DELETE FROM idempotency_keys WHERE created_at < ? OR "
                                            "status = 0"
                                          : "DELETE FROM idempotency_keys WHERE created_at < ?"));
  st.Bind(1, now_ms - retention_ms);
  ASB_TRY_CTX(st.Run(), "prune idempotency keys");
  return store_.db().Changes();
}

}  // namespace asb::store
