#include "store/exec_sessions.h"

#include <gtest/gtest.h>

#include <string>

namespace asb::store {
namespace {

std::unique_ptr<Store> Mem() {
  auto s = Store::Open(":memory:", 1000);
  EXPECT_TRUE(s) << s.error().ToString();
  return std::move(*s);
}

void AddSandbox(Store& s, const std::string& id) {
  SandboxRecord r;
  r.id = id;
  r.owner = "alice";
  r.template_name = "base";
  r.state = "running";
  r.created_at_ms = r.updated_at_ms = r.last_activity_at_ms = 1000;
  r.expires_at_ms = 10'000;
  r.backend = "ns";
  ASSERT_TRUE(s.InsertSandbox(r));
}

TEST(ExecSessionStoreTest, InsertFindListPerOwner) {
  auto s = Mem();
  AddSandbox(*s, "sb_a");
  AddSandbox(*s, "sb_b");
  ExecSessionStore sessions(*s);
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::nullopt);
  EXPECT_EQ(*sessions.Insert("alice", "s1", "sb_a", 2000), "sb_a");
  // The same name of another owner is another session.
  EXPECT_EQ(*sessions.Insert("bob", "s1", "sb_b", 3000), "sb_b");
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::optional<std::string>("sb_a"));
  EXPECT_EQ(*sessions.Find("bob", "s1"), std::optional<std::string>("sb_b"));
  auto alice = sessions.List(std::string("alice"));
  ASSERT_TRUE(alice);
  ASSERT_EQ(alice->size(), 1u);
  EXPECT_EQ((*alice)[0].sandbox_id, "sb_a");
  EXPECT_EQ((*alice)[0].created_at_ms, 2000);
  auto all = sessions.List(std::nullopt);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].owner, "bob");
}

TEST(ExecSessionStoreTest, TheFirstInsertWinsARace) {
  auto s = Mem();
  AddSandbox(*s, "sb_a");
  AddSandbox(*s, "sb_b");
  ExecSessionStore sessions(*s);
  EXPECT_EQ(*sessions.Insert("alice", "s1", "sb_a", 2000), "sb_a");
  EXPECT_EQ(*sessions.Insert("alice", "s1", "sb_b", 2001), "sb_a");
  // Erase of the loser's id leaves the winner's mapping.
  ASSERT_TRUE(sessions.Erase("alice", "s1", "sb_b"));
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::optional<std::string>("sb_a"));
  ASSERT_TRUE(sessions.Erase("alice", "s1", "sb_a"));
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::nullopt);
}

TEST(ExecSessionStoreTest, AnUnknownSandboxIsRefused) {
  auto s = Mem();
  ExecSessionStore sessions(*s);
  auto r = sessions.Insert("alice", "s1", "sb_nope", 2000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kConflict);
}

TEST(ExecSessionStoreTest, RowsGoWhenTheirSandboxIsDestroyedOrLost) {
  auto s = Mem();
  AddSandbox(*s, "sb_a");
  AddSandbox(*s, "sb_b");
  AddSandbox(*s, "sb_c");
  ExecSessionStore sessions(*s);
  ASSERT_TRUE(sessions.Insert("alice", "s1", "sb_a", 2000));
  ASSERT_TRUE(sessions.Insert("alice", "s2", "sb_b", 2000));
  ASSERT_TRUE(sessions.Insert("alice", "s3", "sb_c", 2000));
  // Stopping keeps the session (a destroy may still fail); destroyed and error end it.
  ASSERT_TRUE(s->SetSandboxState("sb_a", "stopping", "", 3000));
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::optional<std::string>("sb_a"));
  ASSERT_TRUE(s->SetSandboxState("sb_a", "destroyed", "", 3001));
  EXPECT_EQ(*sessions.Find("alice", "s1"), std::nullopt);
  ASSERT_TRUE(s->SetSandboxState("sb_b", "error", "sandbox stopped", 3002));
  EXPECT_EQ(*sessions.Find("alice", "s2"), std::nullopt);
  // A whole-record update (UpdateSandbox) that leaves it running keeps the session.
  auto rec = s->GetSandbox("sb_c");
  ASSERT_TRUE(rec);
  rec->expires_at_ms = 20'000;
  ASSERT_TRUE(s->UpdateSandbox(*rec));
  EXPECT_EQ(*sessions.Find("alice", "s3"), std::optional<std::string>("sb_c"));
  ASSERT_TRUE(s->db().Exec("DELETE FROM sandboxes WHERE id = 'sb_c'"));
  EXPECT_EQ(*sessions.Find("alice", "s3"), std::nullopt);
}

}  // namespace
}  // namespace asb::store
