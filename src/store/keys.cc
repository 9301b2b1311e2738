#include "store/keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

#include "common/ids.h"

namespace asb::store {

namespace {

constexpr std::string_view kKeyColumns =
    "id, name, key_prefix, key_hash, scopes, rate_limit, max_sandboxes, created_at, "
    "last_used_at, expires_at, enabled, revoked_at, lineage, rotated_at, replaced_by";

constexpr size_t kMaxNameBytes = 200;

KeyRecord ReadKey(const Stmt& s) {
  KeyRecord r;
  r.id = s.ColumnText(0);
  r.name = s.ColumnText(1);
  r.key_prefix = s.ColumnText(2);
  r.key_hash = s.ColumnText(3);
  auto scopes = ParseScopes(s.ColumnText(4));
  if (scopes) r.scopes = *scopes;
  r.rate_limit_per_minute = s.ColumnInt(5);
  r.max_sandboxes = s.ColumnInt(6);
  r.created_at_ms = s.ColumnInt(7);
  r.last_used_at_ms = s.ColumnInt(8);
  r.expires_at_ms = s.ColumnInt(9);
  r.enabled = s.ColumnInt(10) != 0;
  r.revoked_at_ms = s.ColumnInt(11);
  r.lineage = s.ColumnText(12);
  r.rotated_at_ms = s.ColumnInt(13);
  r.replaced_by = s.ColumnText(14);
  return r;
}

}  // namespace

bool KeyRecord::HasScope(std::string_view s) const {
  return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
}

bool KeyRecord::Usable(int64_t now_ms) const {
  return enabled && rotated_at_ms == 0 && (expires_at_ms == 0 || now_ms < expires_at_ms);
}

std::string KeyRecord::Status(int64_t now_ms) const {
  if (rotated_at_ms != 0) return "rotated";
  if (!enabled) return "revoked";
  if (expires_at_ms != 0 && now_ms >= expires_at_ms) return "expired";
  return "active";
}

std::string GenerateApiKey() { return "asb_" + RandomHex(24); }

std::string GenerateE2bApiKey() { return std::string(kE2bKeyPrefix) + RandomHex(20); }

std::string HashApiKey(std::string_view raw_key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(raw_key.data(), raw_key.size(), md, &len, EVP_sha256(), nullptr) != 1) {
    // Only a broken libcrypto fails here; never match anything then.
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<std::vector<std::string>> ParseScopes(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&]() -> Status {
    if (cur.empty()) return {};
    if (cur != kScopeExec && cur != kScopeAdmin && cur != kScopeMetrics) {
      return Fail(
          Error::InvalidArgument("unknown scope '" + cur + "' (scopes are exec, admin, metrics)"));
    }
    out.push_back(cur);
    cur.clear();
    return {};
  };
  for (char c : text) {
    if (c == ',' || c == ' ') {
      ASB_TRY(flush());
    } else {
      cur.push_back(c);
    }
  }
  ASB_TRY(flush());
  if (out.empty()) return Fail(Error::InvalidArgument("scopes: at least one scope is required"));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string JoinScopes(const std::vector<std::string>& scopes) {
  std::string s;
  for (const auto& x : scopes) {
    if (!s.empty()) s += ",";
    s += x;
  }
  return s;
}

Result<CreatedKey> KeyStore::InsertLocked(KeyRecord r, std::string raw) {
  std::string sql = "INSERT INTO api_keys (" + std::string(kKeyColumns) +
                    ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare(sql));
  st.Bind(1, r.id)
      .Bind(2, r.name)
      .Bind(3, r.key_prefix)
      .Bind(4, r.key_hash)
      .Bind(5, JoinScopes(r.scopes))
      .Bind(6, r.rate_limit_per_minute)
      .Bind(7, r.max_sandboxes)
      .Bind(8, r.created_at_ms)
      .Bind(9, r.last_used_at_ms)
      .Bind(10, r.expires_at_ms)
      .Bind(11, int64_t{r.enabled ? 1 : 0})
      .Bind(12, r.revoked_at_ms)
      .Bind(13, r.lineage)
      .Bind(14, r.rotated_at_ms)
      .Bind(15, r.replaced_by);
  ASB_TRY_CTX(st.Run(), "insert api key");
  return CreatedKey{std::move(r), std::move(raw)};
}

Result<CreatedKey> KeyStore::Create(const NewKey& k, int64_t now_ms) {
  if (k.name.empty() || k.name.size() > kMaxNameBytes) {
    return Fail(Error::InvalidArgument("name: must be 1 to 200 bytes"));
  }
  if (k.rate_limit_per_minute < 0) {
    return Fail(Error::InvalidArgument("rate_limit: must be >= 0 (0 = unlimited)"));
  }
  if (k.max_sandboxes < 0) {
    return Fail(Error::InvalidArgument("max_sandboxes: must be >= 0 (0 = unlimited)"));
  }
  if (k.expires_at_ms < 0) return Fail(Error::InvalidArgument("expires_at: must be >= 0"));
  ASB_ASSIGN_OR_RETURN(auto scopes, ParseScopes(JoinScopes(k.scopes)));
  KeyRecord r;
  r.id = NewId("key_");
  r.name = k.name;
  std::string raw = k.e2b_shape ? GenerateE2bApiKey() : GenerateApiKey();
  r.key_prefix = raw.substr(0, 12);
  r.key_hash = HashApiKey(raw);
  r.scopes = std::move(scopes);
  r.rate_limit_per_minute = k.rate_limit_per_minute;
  r.max_sandboxes = k.max_sandboxes;
  r.created_at_ms = now_ms;
  r.expires_at_ms = k.expires_at_ms;
  r.lineage = r.id;
  std::lock_guard<std::mutex> lock(store_.lock());
  return InsertLocked(std::move(r), std::move(raw));
}

Result<KeyRecord> KeyStore::FindByRawKey(std::string_view raw_key) {
  std::string hash = HashApiKey(raw_key);
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT " + std::string(kKeyColumns) +
                                                    " FROM api_keys WHERE key_hash = ?"));
  st.Bind(1, hash);
  ASB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (row) {
    KeyRecord r = ReadKey(st);
    if (ConstantTimeEquals(r.key_hash, hash)) return r;
  }
  return Fail(Error::NotFound("unknown API key"));
}

Result<KeyRecord> KeyStore::GetLocked(std::string_view id) {
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT " + std::string(kKeyColumns) +
                                                    " FROM api_keys WHERE id = ?"));
  st.Bind(1, id);
  ASB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return Fail(Error::NotFound("key " + std::string(id) + " not found"));
  return ReadKey(st);
}

Result<KeyRecord> KeyStore::Get(std::string_view id) {
  std::lock_guard<std::mutex> lock(store_.lock());
  return GetLocked(id);
}

Result<std::vector<KeyRecord>> KeyStore::List() {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("SELECT " + std::string(kKeyColumns) +
                                                    " FROM api_keys ORDER BY created_at, id"));
  std::vector<KeyRecord> out;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(ReadKey(st));
  }
  return out;
}

Result<int64_t> KeyStore::CountUsable(int64_t now_ms) {
  ASB_ASSIGN_OR_RETURN(auto all, List());
  int64_t n = 0;
  for (const auto& k : all) n += k.Usable(now_ms) ? 1 : 0;
  return n;
}

Status KeyStore::SetEnabled(std::string_view id, bool enabled, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(
      Stmt st, store_.db().Prepare("UPDATE api_keys SET enabled = ?, revoked_at = ? WHERE id = ?"));
  st.Bind(1, int64_t{enabled ? 1 : 0}).Bind(2, enabled ? int64_t{0} : now_ms).Bind(3, id);
  ASB_TRY_CTX(st.Run(), "update api key");
  if (store_.db().Changes() == 0) {
    return Fail(Error::NotFound("key " + std::string(id) + " not found"));
  }
  return {};
}

Result<CreatedKey> KeyStore::Rotate(std::string_view id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(store_.db()));
  ASB_ASSIGN_OR_RETURN(KeyRecord old, GetLocked(id));
  if (old.rotated_at_ms != 0) {
    return Fail(
        Error::Conflict("key " + old.id + " was already rotated (to " + old.replaced_by + ")"));
  }
  if (!old.enabled) return Fail(Error::Conflict("key " + old.id + " is revoked"));
  KeyRecord r = old;
  r.id = NewId("key_");
  std::string raw =
      old.key_prefix.rfind(kE2bKeyPrefix, 0) == 0 ? GenerateE2bApiKey() : GenerateApiKey();
  r.key_prefix = raw.substr(0, 12);
  r.key_hash = HashApiKey(raw);
  r.created_at_ms = now_ms;
  r.last_used_at_ms = 0;
  r.revoked_at_ms = 0;
  r.rotated_at_ms = 0;
  r.replaced_by.clear();
  ASB_ASSIGN_OR_RETURN(CreatedKey created, InsertLocked(r, std::move(raw)));
  ASB_ASSIGN_OR_RETURN(Stmt st,
                       store_.db().Prepare("UPDATE api_keys SET rotated_at = ?, replaced_by = ? "
                                           "WHERE id = ?"));
  st.Bind(1, now_ms).Bind(2, created.record.id).Bind(3, old.id);
  ASB_TRY_CTX(st.Run(), "mark api key rotated");
  ASB_TRY_CTX(tx.Commit(), "rotate api key");
  return created;
}

Status KeyStore::Delete(std::string_view id) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("DELETE FROM api_keys WHERE id = ?"));
  st.Bind(1, id);
  ASB_TRY_CTX(st.Run(), "delete api key");
  if (store_.db().Changes() == 0) {
    return Fail(Error::NotFound("key " + std::string(id) + " not found"));
  }
  return {};
}

Status KeyStore::Touch(std::string_view id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st,
                       store_.db().Prepare("UPDATE api_keys SET last_used_at = ? WHERE id = ?"));
  st.Bind(1, now_ms).Bind(2, id);
  ASB_TRY_CTX(st.Run(), "touch api key");
  return {};
}

}  // namespace asb::store
