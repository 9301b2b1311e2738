#include "store/events.h"

#include <algorithm>

namespace asb::store {

Result<int64_t> EventStore::Append(const EventRecord& e) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(
      Stmt st, store_.db().Prepare(
                   "INSERT INTO events (time_ms, request_id, key_id, owner, sandbox_id, action, "
                   "target, status, result, exit_code, duration_ms) "
                   "VALUES (?,?,?,?,?,?,?,?,?,?,?)"));
  st.Bind(1, e.time_ms)
      .Bind(2, e.request_id)
      .Bind(3, e.key_id)
      .Bind(4, e.owner)
      .Bind(5, e.sandbox_id)
      .Bind(6, e.action)
      .Bind(7, e.target)
      .Bind(8, e.status)
      .Bind(9, e.result)
      .Bind(11, e.duration_ms);
  if (e.exit_code) {
    st.Bind(10, *e.exit_code);
  } else {
    st.BindNull(10);
  }
  ASB_TRY_CTX(st.Run(), "append event");
  return static_cast<int64_t>(sqlite3_last_insert_rowid(store_.db().raw()));
}

Result<std::vector<EventRecord>> EventStore::List(const EventFilter& f) {
  std::string sql =
      "SELECT seq, time_ms, request_id, key_id, owner, sandbox_id, action, target, status, "
      "result, exit_code, duration_ms FROM events WHERE seq > ? AND time_ms >= ?";
  if (f.sandbox_id) sql += " AND sandbox_id = ?";
  if (f.key_id) sql += " AND key_id = ?";
  if (f.owner) sql += " AND owner = ?";
  if (f.newest_first && f.before_seq > 0) sql += " AND seq < ?";
  sql += f.newest_first ? " ORDER BY seq DESC LIMIT ?" : " ORDER BY seq LIMIT ?";
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare(sql));
  int i = 1;
  st.Bind(i++, f.after_seq);
  st.Bind(i++, f.since_ms);
  if (f.sandbox_id) st.Bind(i++, *f.sandbox_id);
  if (f.key_id) st.Bind(i++, *f.key_id);
  if (f.owner) st.Bind(i++, *f.owner);
  if (f.newest_first && f.before_seq > 0) st.Bind(i++, f.before_seq);
  st.Bind(i++, std::clamp<int64_t>(f.limit, 1, 1000));
  std::vector<EventRecord> out;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    EventRecord e;
    e.seq = st.ColumnInt(0);
    e.time_ms = st.ColumnInt(1);
    e.request_id = st.ColumnText(2);
    e.key_id = st.ColumnText(3);
    e.owner = st.ColumnText(4);
    e.sandbox_id = st.ColumnText(5);
    e.action = st.ColumnText(6);
    e.target = st.ColumnText(7);
    e.status = st.ColumnInt(8);
    e.result = st.ColumnText(9);
    if (!st.ColumnIsNull(10)) e.exit_code = st.ColumnInt(10);
    e.duration_ms = st.ColumnInt(11);
    out.push_back(std::move(e));
  }
  return out;
}

Result<int64_t> EventStore::PurgeBefore(int64_t cutoff_ms) {
  std::lock_guard<std::mutex> lock(store_.lock());
  ASB_ASSIGN_OR_RETURN(Stmt st, store_.db().Prepare("DELETE FROM events WHERE time_ms < ?"));
  st.Bind(1, cutoff_ms);
  ASB_TRY_CTX(st.Run(), "purge events");
  return store_.db().Changes();
}

}  // namespace asb::store
