#include "store/store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "store/migrations.h"

namespace asb::store {
namespace {

SandboxRecord MakeRecord(std::string id, std::string owner, int64_t t) {
  SandboxRecord r;
  r.id = std::move(id);
  r.owner = std::move(owner);
  r.template_name = "base";
  r.spec_json = R"({"cpus":0.5,"memory_mb":256})";
  r.state = "creating";
  r.created_at_ms = t;
  r.updated_at_ms = t;
  r.expires_at_ms = t + 900'000;
  r.last_activity_at_ms = t;
  r.backend = "ns";
  return r;
}

TEST(StoreTest, InsertGetUpdateInMemory) {
  auto st = Store::Open(":memory:", 1);
  ASSERT_TRUE(st) << st.error().ToString();
  Store& s = **st;
  EXPECT_EQ(*s.SchemaVersion(), static_cast<int64_t>(SchemaMigrations().size()));

  SandboxRecord r = MakeRecord("sb_0000000000000001", "alice", 1000);
  r.idle_timeout_seconds = 30;
  ASSERT_TRUE(s.InsertSandbox(r));
  auto dup = s.InsertSandbox(r);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), ErrorCode::kConflict);

  auto got = s.GetSandbox(r.id);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->owner, "alice");
  EXPECT_EQ(got->template_name, "base");
  EXPECT_EQ(got->spec_json, r.spec_json);
  EXPECT_EQ(got->state, "creating");
  EXPECT_EQ(got->expires_at_ms, 901'000);
  EXPECT_EQ(got->idle_timeout_seconds, 30);
  EXPECT_FALSE(got->source_snapshot_id.has_value());
  EXPECT_EQ(got->backend, "ns");

  ASSERT_TRUE(s.SetSandboxState(r.id, "running", "", 2000));
  ASSERT_TRUE(s.SetSandboxExpiry(r.id, 5000, 2100));
  ASSERT_TRUE(s.TouchSandbox(r.id, 2200));
  got = s.GetSandbox(r.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, "running");
  EXPECT_EQ(got->expires_at_ms, 5000);
  EXPECT_EQ(got->updated_at_ms, 2100);
  EXPECT_EQ(got->last_activity_at_ms, 2200);

  got->source_snapshot_id = "snap_00000000000000aa";
  got->error_message = "boom";
  got->state = "error";
  ASSERT_TRUE(s.UpdateSandbox(*got));
  auto again = s.GetSandbox(r.id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->source_snapshot_id, "snap_00000000000000aa");
  EXPECT_EQ(again->error_message, "boom");
  EXPECT_EQ(again->state, "error");
}

TEST(StoreTest, MissingRowsAndBadStatesAreErrors) {
  auto st = Store::Open(":memory:", 1);
  ASSERT_TRUE(st);
  Store& s = **st;
  EXPECT_EQ(s.GetSandbox("sb_nope").error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.SetSandboxState("sb_nope", "running", "", 1).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.SetSandboxExpiry("sb_nope", 1, 1).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.TouchSandbox("sb_nope", 1).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.UpdateSandbox(MakeRecord("sb_nope", "a", 1)).error().code(), ErrorCode::kNotFound);

  SandboxRecord r = MakeRecord("sb_0000000000000002", "a", 1);
  r.state = "exploded";
  EXPECT_EQ(s.InsertSandbox(r).error().code(), ErrorCode::kConflict);
  r.state = "running";
  ASSERT_TRUE(s.InsertSandbox(r));
  EXPECT_EQ(s.SetSandboxState(r.id, "frozen", "", 2).error().code(), ErrorCode::kConflict);
  EXPECT_EQ(s.GetSandbox(r.id)->state, "running");
}

TEST(StoreTest, ListFiltersByOwnerAndStateInCreationOrder) {
  auto st = Store::Open(":memory:", 1);
  ASSERT_TRUE(st);
  Store& s = **st;
  ASSERT_TRUE(s.InsertSandbox(MakeRecord("sb_c", "alice", 30)));
  ASSERT_TRUE(s.InsertSandbox(MakeRecord("sb_a", "alice", 10)));
  ASSERT_TRUE(s.InsertSandbox(MakeRecord("sb_b", "bob", 20)));
  ASSERT_TRUE(s.SetSandboxState("sb_c", "destroyed", "", 40));
  ASSERT_TRUE(s.SetSandboxState("sb_b", "running", "", 40));

  auto all = s.ListSandboxes({});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].id, "sb_a");
  EXPECT_EQ((*all)[1].id, "sb_b");
  EXPECT_EQ((*all)[2].id, "sb_c");

  auto alice_live = s.ListSandboxes({.owner = "alice", .live_only = true});
  ASSERT_TRUE(alice_live);
  ASSERT_EQ(alice_live->size(), 1u);
  EXPECT_EQ((*alice_live)[0].id, "sb_a");

  auto busy = s.ListSandboxes({.states = {"creating", "running"}});
  ASSERT_TRUE(busy);
  ASSERT_EQ(busy->size(), 2u);
  EXPECT_EQ((*busy)[0].id, "sb_a");
  EXPECT_EQ((*busy)[1].id, "sb_b");

  auto nobody = s.ListSandboxes({.owner = "carol"});
  ASSERT_TRUE(nobody);
  EXPECT_TRUE(nobody->empty());
}

TEST(StoreTest, FileDatabasePersistsAcrossReopen) {
  char tmpl[] = "/tmp/asb_store_file.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/data/agent-sandbox.db";  // parent made by Open
  {
    auto st = Store::Open(path, 1);
    ASSERT_TRUE(st) << st.error().ToString();
    ASSERT_TRUE((*st)->InsertSandbox(MakeRecord("sb_persist", "alice", 5)));
    ASSERT_TRUE((*st)->SetSandboxState("sb_persist", "running", "", 6));
    EXPECT_EQ(*(*st)->db().JournalMode(), "wal");
  }
  struct stat sb {};
  ASSERT_EQ(::stat((dir + "/data").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0700u);
  {
    auto st = Store::Open(path, 2);  // migrations already applied: nothing to do
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(*(*st)->SchemaVersion(), static_cast<int64_t>(SchemaMigrations().size()));
    auto got = (*st)->GetSandbox("sb_persist");
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_EQ(got->state, "running");
    EXPECT_EQ(got->owner, "alice");
    EXPECT_EQ(got->updated_at_ms, 6);
  }
  std::filesystem::remove_all(dir);
}

// Migration 7 (the state "paused") rebuilds the sandboxes table. A database made by the
// previous version keeps every row, in sandboxes and in the tables that reference it (the drop
// of the old table must not cascade), and the triggers on sandboxes still fire.
TEST(StoreTest, PausedStateMigrationKeepsRowsAndTriggers) {
  char tmpl[] = "/tmp/asb_store_mig.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/agent-sandbox.db";
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(db) << db.error().ToString();
    auto v = ApplyMigrations(*db, SchemaMigrations().first(6), 1);
    ASSERT_TRUE(v) << v.error().ToString();
    ASSERT_TRUE(db->Exec(
        "INSERT INTO sandboxes (id, owner, template, state, created_at, updated_at, expires_at, "
        "last_activity_at, backend) VALUES ('sb_a', 'alice', 'base', 'running', 1, 1, 9, 1, 'ns'),"
        " ('sb_b', 'bob', 'base', 'running', 2, 2, 9, 2, 'ns');"
        "INSERT INTO exec_sessions VALUES ('alice', 's1', 'sb_a', 3);"
        "INSERT INTO preview_tokens VALUES ('pt_1', 'h1', 'sb_b', 8080, 'bob', '', 3, 99);"));
    // The old CHECK refuses "paused".
    EXPECT_FALSE(db->Exec("UPDATE sandboxes SET state = 'paused' WHERE id = 'sb_a'"));
  }
  auto st = Store::Open(path, 10);
  ASSERT_TRUE(st) << st.error().ToString();
  Store& s = **st;
  EXPECT_EQ(*s.SchemaVersion(), 7);
  auto count = [&](const char* sql) {
    auto q = s.db().Prepare(sql);
    EXPECT_TRUE(q && *q->Step());
    return q ? q->ColumnInt(0) : -1;
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM sandboxes"), 2);
  EXPECT_EQ(count("SELECT COUNT(*) FROM exec_sessions"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM preview_tokens"), 1);
  ASSERT_TRUE(s.SetSandboxState("sb_a", "paused", "", 11));
  EXPECT_EQ(s.GetSandbox("sb_a")->state, "paused");
  EXPECT_FALSE(s.SetSandboxState("sb_a", "napping", "", 12));
  // The triggers came back with the new table; the foreign keys are on again.
  ASSERT_TRUE(s.SetSandboxState("sb_a", "destroyed", "", 13));
  EXPECT_EQ(count("SELECT COUNT(*) FROM exec_sessions"), 0);
  ASSERT_TRUE(s.SetSandboxState("sb_b", "destroyed", "", 14));
  EXPECT_EQ(count("SELECT COUNT(*) FROM preview_tokens"), 0);
  EXPECT_EQ(count("PRAGMA foreign_keys"), 1);
  EXPECT_FALSE(s.db().Exec("INSERT INTO exec_sessions VALUES ('alice', 's2', 'sb_zz', 3)"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asb::store
