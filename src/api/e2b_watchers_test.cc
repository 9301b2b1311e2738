#include "api/e2b_watchers.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace asb::api {
namespace {

// A watch with one event queued; records whether it was cancelled.
class FakeWatch final : public core::FileWatch {
 public:
  explicit FakeWatch(bool* cancelled) : cancelled_(cancelled) {}
  const std::string& path() const override { return path_; }
  uint32_t watches() const override { return 1; }
  Batch Take(size_t max_events, int64_t) override {
    Batch b;
    if (!taken_ && max_events > 0) b.events.push_back({"create", "/workspace/a", false, 0});
    taken_ = true;
    return b;
  }
  void SetNotify(std::function<void()>) override {}
  void Cancel() override { *cancelled_ = true; }

 private:
  std::string path_ = "/workspace";
  bool* cancelled_;
  bool taken_ = false;
};

TEST(E2bWatchersTest, BoundToTheirSandboxAndTenant) {
  E2bWatchers w([](const std::string&) { return true; });
  bool cancelled = false;
  auto id = w.Add("t1", "sb_a", std::make_shared<FakeWatch>(&cancelled));
  ASSERT_TRUE(id);
  EXPECT_EQ(w.Take("t1", "sb_b", *id, 10).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(w.Take("t2", "sb_a", *id, 10).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(w.Remove("t2", "sb_a", *id).error().code(), ErrorCode::kNotFound);
  auto t = w.Take("t1", "sb_a", *id, 10);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->batch.events.size(), 1u);
  EXPECT_FALSE(cancelled);
  EXPECT_TRUE(w.Remove("t1", "sb_a", *id));
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(w.Take("t1", "sb_a", *id, 10).error().code(), ErrorCode::kNotFound);
}

TEST(E2bWatchersTest, PerTenantCapAtItsBoundaryAndDestroyedSandboxesFreeTheirPlaces) {
  std::set<std::string> gone;
  E2bWatchers w([&](const std::string& id) { return gone.count(id) == 0; });
  bool c = false;
  for (size_t i = 0; i < E2bWatchers::kMaxWatchersPerOwner; ++i) {
    ASSERT_TRUE(w.Add("t1", "sb_" + std::to_string(i % 4), std::make_shared<FakeWatch>(&c))) << i;
  }
  auto over = w.Add("t1", "sb_0", std::make_shared<FakeWatch>(&c));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_TRUE(w.Add("t2", "sb_x", std::make_shared<FakeWatch>(&c)));  // another tenant is fine
  gone.insert("sb_1");  // destroyed: its 32 watchers go at the next Add
  bool dropped = false;
  for (int i = 0; i < 32; ++i) {
    ASSERT_TRUE(w.Add("t1", "sb_0", std::make_shared<FakeWatch>(i == 0 ? &dropped : &c))) << i;
  }
  EXPECT_FALSE(w.Add("t1", "sb_0", std::make_shared<FakeWatch>(&c)));
}

}  // namespace
}  // namespace asb::api
