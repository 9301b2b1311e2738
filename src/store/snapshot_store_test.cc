#include "store/snapshot_store.h"

#include <gtest/gtest.h>

namespace asb::store {
namespace {

SnapshotRecord Make(std::string id, std::string owner, std::string sb, int64_t t) {
  SnapshotRecord r;
  r.id = std::move(id);
  r.owner = std::move(owner);
  r.sandbox_id = std::move(sb);
  r.template_name = "base";
  r.state = "pending";
  r.created_at_ms = t;
  return r;
}

TEST(SnapshotStoreTest, InsertReadyListDelete) {
  auto st = Store::Open(":memory:", 1);
  ASSERT_TRUE(st.has_value()) << st.error().ToString();
  Store& s = **st;
  ASSERT_TRUE(InsertSnapshot(s, Make("snap_a", "o1", "sb_1", 10)).has_value());
  ASSERT_TRUE(InsertSnapshot(s, Make("snap_b", "o1", "sb_2", 20)).has_value());
  ASSERT_TRUE(InsertSnapshot(s, Make("snap_c", "o2", "sb_3", 30)).has_value());
  EXPECT_EQ(InsertSnapshot(s, Make("snap_a", "o1", "sb_1", 10)).error().code(),
            ErrorCode::kConflict);
  auto bad = Make("snap_d", "o1", "sb_1", 1);
  bad.state = "half";
  EXPECT_EQ(InsertSnapshot(s, bad).error().code(), ErrorCode::kConflict);

  ASSERT_TRUE(MarkSnapshotReady(s, "snap_a", 123, 456).has_value());
  auto a = GetSnapshot(s, "snap_a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->state, "ready");
  EXPECT_EQ(a->size_bytes, 123);
  EXPECT_EQ(a->content_bytes, 456);
  EXPECT_EQ(MarkSnapshotReady(s, "snap_zz", 1, 1).error().code(), ErrorCode::kNotFound);

  auto o1 = ListSnapshots(s, {.owner = "o1"});
  ASSERT_TRUE(o1.has_value());
  ASSERT_EQ(o1->size(), 2u);
  EXPECT_EQ((*o1)[0].id, "snap_a");
  auto by_sb = ListSnapshots(s, {.owner = "o1", .sandbox_id = "sb_2"});
  ASSERT_EQ(by_sb->size(), 1u);
  EXPECT_EQ((*by_sb)[0].id, "snap_b");
  auto pending = ListSnapshots(s, {.state = "pending"});
  EXPECT_EQ(pending->size(), 2u);

  ASSERT_TRUE(DeleteSnapshot(s, "snap_a").has_value());
  ASSERT_TRUE(DeleteSnapshot(s, "snap_a").has_value());
  EXPECT_EQ(GetSnapshot(s, "snap_a").error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace asb::store
