// MetricsHistory through the manager over the FakeBackend and a FakeClock: samples per running
// sandbox on the interval, a window of them, the limit kept, tenancy, and what paused and
// destroyed sandboxes get.
#include "core/metrics_history.h"

#include <gtest/gtest.h>

#include "core/manager_test_fixture.h"

namespace asb::core {
namespace {

TEST_F(ManagerTest, MetricsHistoryKeepsSamplesOfRunningSandboxesOnTheInterval) {
  config_.metrics_interval_seconds = 5;
  config_.metrics_samples_kept = 3;
  NewManager();
  SandboxInfo a = MustCreate("alice");
  SandboxInfo b = MustCreate("bob");
  MetricsHistory& h = manager_->metrics();

  const int64_t t0 = clock_.NowUnixMs();
  h.MaybeSample();  // the first pass is due at once
  clock_.AdvanceMs(1'000);
  h.MaybeSample();  // not due yet: nothing new
  auto got = h.Samples("alice", a.id, 0, INT64_MAX);
  ASSERT_TRUE(got) << got.error().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].at_ms, t0);
  EXPECT_EQ((*got)[0].memory_limit_bytes, static_cast<uint64_t>(a.memory_mb) << 20);
  EXPECT_EQ((*got)[0].cpus, a.cpus);

  for (int i = 0; i < 4; ++i) {
    clock_.AdvanceMs(5'000);
    h.MaybeSample();
  }
  got = h.Samples("alice", a.id, 0, INT64_MAX);
  ASSERT_EQ(got->size(), 3u);  // the oldest went: 3 are kept
  EXPECT_EQ(got->front().at_ms, t0 + 11'000);
  EXPECT_EQ(got->back().at_ms, t0 + 21'000);
  // A window: both ends inclusive; one with nothing in it is empty, not an error.
  EXPECT_EQ(h.Samples("alice", a.id, t0 + 16'000, t0 + 16'000)->size(), 1u);
  EXPECT_TRUE(h.Samples("alice", a.id, t0, t0 + 10'000)->empty());

  // Another tenant's sandbox is not found, as a missing one.
  EXPECT_EQ(h.Samples("bob", a.id, 0, INT64_MAX).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(h.Samples("alice", "sb_0000000000000000", 0, INT64_MAX).error().code(),
            ErrorCode::kNotFound);

  // Paused: no new samples, the old ones stay. Destroyed: forgotten.
  ASSERT_TRUE(manager_->lifecycle().Pause("bob", b.id));
  const size_t before = h.Samples("bob", b.id, 0, INT64_MAX)->size();
  clock_.AdvanceMs(5'000);
  h.MaybeSample();
  EXPECT_EQ(h.Samples("bob", b.id, 0, INT64_MAX)->size(), before);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", a.id));
  h.SampleAll();
  EXPECT_EQ(h.Samples(kAnyOwner, a.id, 0, INT64_MAX).error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace asb::core
