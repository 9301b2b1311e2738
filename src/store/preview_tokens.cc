#include "store/preview_tokens.h"

#include <mutex>

#include "common/ids.h"
#include "store/keys.h"

namespace asb::store {

namespace {

constexpr size_t kTokenHexDigits = 64;

constexpr std::string_view kColumns =
    "id, sandbox_id, port, owner, created_by, created_at, expires_at";

PreviewTokenRecord ReadToken(const Stmt& s) {
  PreviewTokenRecord r;
  r.id = s.ColumnText(0);
  r.sandbox_id = s.ColumnText(1);
  r.port = s.ColumnInt(2);
  r.owner = s.ColumnText(3);
  r.created_by = s.ColumnText(4);
  r.created_at_ms = s.ColumnInt(5);
  r.expires_at_ms = s.ColumnInt(6);
  return r;
}

}  // namespace

std::string GeneratePreviewToken() {
  return std::string(kPreviewTokenPrefix) + RandomHex(kTokenHexDigits / 2);
}

bool LooksLikePreviewToken(std::string_view text) {
  if (text.size() != kPreviewTokenPrefix.size() + kTokenHexDigits ||
      text.substr(0, kPreviewTokenPrefix.size()) != kPreviewTokenPrefix) {
    return false;
  }
  for (char c : text.substr(kPreviewTokenPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<CreatedPreviewToken> PreviewTokenStore::Create(const NewPreviewToken& t, int64_t now_ms,
                                                      int64_t max_live_per_sandbox) {
  if (t.port < 1 || t.port > 65535) {
    return Fail(Error::InvalidArgument("port must be 1..65535"));
  }
  if (t.expires_at_ms <= now_ms) {
    return Fail(Error::InvalidArgument("a preview token must expire in the future"));
  }
  std::lock_guard<std::mutex> lock(store_.lock());
  Db& db = store_.db();
  ASB_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db));
  ASB_ASSIGN_OR_RETURN(Stmt prune, db.Prepare("DELETE FROM preview_tokens WHERE expires_at <= ?"));
  prune.Bind(1, now_ms);
  ASB_TRY_CTX(prune.Run(), "prune expired preview tokens");
  ASB_ASSIGN_OR_RETURN(Stmt count,
                       db.Prepare("SELECT COUNT(*) FROM preview_tokens WHERE sandbox_id = ?"));
  count.Bind(1, t.sandbox_id);
  ASB_ASSIGN_OR_RETURN(bool row, count.Step());
  if (row && count.ColumnInt(0) >= max_live_per_sandbox) {
    return Fail(Error::LimitExceeded(
        "sandbox " + t.sandbox_id + " already has " + std::to_string(max_live_per_sandbox) +
        " live preview tokens, the most it may have; revoke one or let one expire"));
  }
  CreatedPreviewToken out;
  out.raw_token = GeneratePreviewToken();
  PreviewTokenRecord& r = out.record;
  r.id = NewId("pv_");
  r.sandbox_id = t.sandbox_id;
  r.port = t.port;
  r.owner = t.owner;
  r.created_by = t.created_by;
  r.created_at_ms = now_ms;
  r.expires_at_ms = t.expires_at_ms;
  // Only for a sandbox that is not destroyed, in the same statement: a destroy that wrote its
  // state just before leaves nothing for its trigger to miss.
  ASB_ASSIGN_OR_RETURN(
      Stmt ins, db.Prepare("INSERT INTO preview_tokens (token_hash, " + std::string(kColumns) +
                           ") SELECT ?,?,?,?,?,?,?,? WHERE EXISTS (SELECT 1 FROM sandboxes "
                           "WHERE id = ? AND state != 'destroyed')"));
  ins.Bind(1, HashApiKey(out.raw_token))
      .Bind(2, r.id)
      .Bind(3, r.sandbox_id)
      .Bind(4, r.port)
      .Bind(5, r.owner)
      .Bind(6, r.created_by)
      .Bind(7, r.created_at_ms)
      .Bind(8, r.expires_at_ms)
      .Bind(9, r.sandbox_id);
  ASB_TRY_CTX(ins.Run(), "insert preview token");
  if (db.Changes() == 0) return Fail(Error::NotFound("sandbox " + t.sandbox_id + " not found"));
  ASB_TRY_CTX(tx.Commit(), "insert preview token");
  return out;
}

Result<PreviewTokenRecord> PreviewTokenStore::Resolve(std::string_view raw_token, int64_t now_ms) {
  if (!LooksLikePreviewToken(raw_token)) return Fail(Error::NotFound("no such preview token"));
  const std::string hash = HashApiKey(raw_token);
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT " + std::string(kColumns) +
                                                    ", token_hash FROM preview_tokens WHERE "
                                                    "token_hash = ?"));
  st.Bind(1, hash);
  ASB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || !ConstantTimeEquals(st.ColumnText(7), hash)) {
    return Fail(Error::NotFound("no such preview token"));
  }
  PreviewTokenRecord r = ReadToken(st);
  if (now_ms >= r.expires_at_ms) return Fail(Error::NotFound("no such preview token"));
  return r;
}

Result<std::vector<PreviewTokenRecord>> PreviewTokenStore::List(std::string_view sandbox_id,
                                                                int64_t now_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT " + std::string(kColumns) +
                                                    " FROM preview_tokens WHERE sandbox_id = ? "
                                                    "AND expires_at > ? ORDER BY created_at, id"));
  st.Bind(1, sandbox_id).Bind(2, now_ms);
  std::vector<PreviewTokenRecord> out;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadToken(st));
  }
  return out;
}

Status PreviewTokenStore::Revoke(std::string_view sandbox_id, std::string_view id) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(
      Stmt st, store_.db().Prepare("DELETE FROM preview_tokens WHERE id = ? AND sandbox_id = ?"));
  st.Bind(1, id).Bind(2, sandbox_id);
  ASB_TRY_CTX(st.Run(), "revoke preview token");
  if (store_.db().Changes() == 0) {
    return Fail(Error::NotFound("preview token " + std::string(id) + " not found"));
  }
  return {};
}

}  // namespace asb::store
