#include "store/snapshot_store.h"

namespace asb::store {

namespace {

constexpr std::string_view kColumns =
    "id, owner, sandbox_id, name, template, spec_json, state, size_bytes, content_bytes, "
    "created_at";

SnapshotRecord Read(const Store& store, const Stmt& s) {
  SnapshotRecord r;
  r.id = s.ColumnText(0);
  r.owner = s.ColumnText(1);
  r.sandbox_id = s.ColumnText(2);
  r.name = s.ColumnText(3);
  r.template_name = s.ColumnText(4);
  r.spec_json = store.OpenSpec(s.ColumnText(5));
  r.state = s.ColumnText(6);
  r.size_bytes = s.ColumnInt(7);
  r.content_bytes = s.ColumnInt(8);
  r.created_at_ms = s.ColumnInt(9);
  return r;
}

}  // namespace

Status InsertSnapshot(Store& store, const SnapshotRecord& r) {
  std::lock_guard lock(store.lock());
  ASB_ASSIGN_OR_RETURN(Stmt s, store.db().Prepare("INSERT INTO snapshots(" + std::string(kColumns) +
                                                  ") VALUES (?,?,?,?,?,?,?,?,?,?)"));
  s.Bind(1, r.id)
      .Bind(2, r.owner)
      .Bind(3, r.sandbox_id)
      .Bind(4, r.name)
      .Bind(5, r.template_name)
      .Bind(6, store.SealSpec(r.spec_json))
      .Bind(7, r.state)
      .Bind(8, r.size_bytes)
      .Bind(9, r.content_bytes)
      .Bind(10, r.created_at_ms);
  return s.Run();
}

Result<SnapshotRecord> GetSnapshot(Store& store, std::string_view id) {
  std::lock_guard lock(store.lock());
  ASB_ASSIGN_OR_RETURN(Stmt s, store.db().Prepare("SELECT " + std::string(kColumns) +
                                                  " FROM snapshots WHERE id = ?"));
  s.Bind(1, id);
  ASB_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Fail(Error::NotFound("no snapshot " + std::string(id)));
  return Read(store, s);
}

Result<std::vector<SnapshotRecord>> ListSnapshots(Store& store, const SnapshotFilter& f) {
  std::lock_guard lock(store.lock());
  std::string sql = "SELECT " + std::string(kColumns) + " FROM snapshots WHERE 1=1";
  if (f.owner) sql += " AND owner = ?1";
  if (f.sandbox_id) sql += " AND sandbox_id = ?2";
  if (f.state) sql += " AND state = ?3";
  sql += " ORDER BY created_at, id";
  ASB_ASSIGN_OR_RETURN(Stmt s, store.db().Prepare(sql));
  if (f.owner) s.Bind(1, *f.owner);
  if (f.sandbox_id) s.Bind(2, *f.sandbox_id);
  if (f.state) s.Bind(3, *f.state);
  std::vector<SnapshotRecord> out;
  while (true) {
    ASB_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(Read(store, s));
  }
  return out;
}

Status MarkSnapshotReady(Store& store, std::string_view id, int64_t size_bytes,
                         int64_t content_bytes) {
  std::lock_guard lock(store.lock());
  ASB_ASSIGN_OR_RETURN(Stmt s,
                       store.db().Prepare("UPDATE snapshots SET state = 'ready', size_bytes = ?, "
                                          "content_bytes = ? WHERE id = ?"));
  s.Bind(1, size_bytes).Bind(2, content_bytes).Bind(3, id);
  ASB_TRY(s.Run());
  if (store.db().Changes() == 0) return Fail(Error::NotFound("no snapshot " + std::string(id)));
  return {};
}

Status DeleteSnapshot(Store& store, std::string_view id) {
  std::lock_guard lock(store.lock());
  ASB_ASSIGN_OR_RETURN(Stmt s, store.db().Prepare("DELETE FROM snapshots WHERE id = ?"));
  s.Bind(1, id);
  return s.Run();
}

}  // namespace asb::store
