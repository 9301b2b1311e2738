// Warm pools over the manager and core's FakeBackend (warm_pool.h; the real server's pools:
// tests/e2e/test_pools.py).
#include "core/warm_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/manager_test_fixture.h"

namespace asb::core {
namespace {

class WarmPoolTest : public ManagerTest {
 protected:
  void StartWithPool(int64_t size) {
    config_.warm_pools = {{"base", false, size}};
    config_.warm_pool_refill_per_second = 100;
    NewManager();
    ASSERT_TRUE(manager_->Start());
  }

  /// Waits up to 10 s for the base pool to hold `n` ready sandboxes.
  void WaitReady(int64_t n) {
    for (int i = 0; i < 1000; ++i) {
      auto pools = manager_->pools().Pools();
      if (!pools.empty() && pools[0].ready == n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "the pool never held " << n << " ready sandboxes";
  }

  std::vector<store::SandboxRecord> PoolRecords() {
    store::SandboxFilter f;
    f.owner = kPoolOwner;
    f.live_only = true;
    auto r = store_->ListSandboxes(f);
    EXPECT_TRUE(r);
    return r ? *r : std::vector<store::SandboxRecord>{};
  }
};

TEST_F(WarmPoolTest, AClaimIsTheCreatorsAndUnseenBefore) {
  StartWithPool(2);
  WaitReady(2);
  // Ready sandboxes are nobody's: no list shows them; their records say "creating".
  EXPECT_TRUE(manager_->lifecycle().List(kAnyOwner)->empty());
  const auto pooled = PoolRecords();
  ASSERT_EQ(pooled.size(), 2u);
  for (const auto& r : pooled) EXPECT_EQ(r.state, "creating");
  EXPECT_EQ(manager_->lifecycle().Get(kAnyOwner, pooled[0].id).error().code(),
            ErrorCode::kNotFound);

  CreateRequest req;
  req.timeout_seconds = 120;
  clock_.AdvanceMs(5000);
  SandboxInfo s = MustCreate("alice", req);
  EXPECT_TRUE(s.id == pooled[0].id || s.id == pooled[1].id);
  EXPECT_EQ(s.owner, "alice");
  EXPECT_EQ(s.state, SandboxState::kRunning);
  EXPECT_EQ(s.created_at_ms, clock_.NowUnixMs());  // the claim is its creation
  EXPECT_EQ(s.expires_at_ms, clock_.NowUnixMs() + 120'000);
  auto rec = store_->GetSandbox(s.id);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->owner, "alice");
  EXPECT_EQ(rec->state, "running");
  EXPECT_EQ(rec->created_at_ms, clock_.NowUnixMs());
  EXPECT_EQ(manager_->lifecycle().List("alice")->size(), 1u);
  EXPECT_EQ(manager_->pools().Pools()[0].hits, 1);
  // It runs commands as any sandbox does, and the pool makes another.
  ExecOptions o;
  o.command = "echo pooled";
  auto out = manager_->exec().Exec("alice", s.id, o);
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->stdout_data, "pooled\n");
  WaitReady(2);
}

// A create's environment is the claim's to set (sandboxd's env.set): it takes a pooled sandbox,
// its commands see its variables, and the next claim sees none of them.
TEST_F(WarmPoolTest, ACreateWithEnvTakesOneAndTheNextClaimSeesNoneOfIt) {
  StartWithPool(1);
  WaitReady(1);
  CreateRequest req;
  req.env = {{"MINE", "alice's"}};
  const std::string pooled_id = PoolRecords()[0].id;
  SandboxInfo s = MustCreate("alice", req);
  EXPECT_EQ(s.id, pooled_id);
  EXPECT_EQ(s.env.at("MINE"), "alice's");
  EXPECT_EQ(manager_->pools().Pools()[0].hits, 1);
  ExecOptions o;
  o.command = "echo \"[$MINE]\"";
  auto out = manager_->exec().Exec("alice", s.id, o);
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->stdout_data, "[alice's]\n");

  WaitReady(1);
  SandboxInfo next = MustCreate("bob", CreateRequest{});
  EXPECT_NE(next.id, s.id);
  EXPECT_EQ(manager_->pools().Pools()[0].hits, 2);
  EXPECT_EQ(next.env.count("MINE"), 0u);
  out = manager_->exec().Exec("bob", next.id, o);
  ASSERT_TRUE(out) << out.error().ToString();
  EXPECT_EQ(out->stdout_data, "[]\n");
}

// Memory and CPU are the claim's to set where the backend changes them in place (FakeBackend
// has live_limits, as the ns backend does).
TEST_F(WarmPoolTest, ACreateWithOtherMemoryAndCpuTakesOneAndSetsThem) {
  StartWithPool(1);
  WaitReady(1);
  const std::string pooled_id = PoolRecords()[0].id;
  CreateRequest req;
  req.memory_mb = 128;
  req.cpus = 0.5;
  SandboxInfo s = MustCreate("alice", req);
  EXPECT_EQ(s.id, pooled_id);
  EXPECT_EQ(s.memory_mb, 128);
  EXPECT_EQ(s.cpus, 0.5);
  EXPECT_EQ(manager_->pools().Pools()[0].hits, 1);
  auto calls = backend_->calls();
  EXPECT_NE(std::find(calls.begin(), calls.end(), "limits " + s.id + " 128 0.5"), calls.end());
  auto rec = store_->GetSandbox(s.id);
  ASSERT_TRUE(rec);
  EXPECT_NE(rec->spec_json.find("\"memory_mb\":128"), std::string::npos) << rec->spec_json;
}

TEST_F(WarmPoolTest, OtherShapesMissAndCreateAsBefore) {
  StartWithPool(1);
  WaitReady(1);
  CreateRequest req;
  req.pids_limit = 64;
  SandboxInfo s = MustCreate("alice", req);
  EXPECT_NE(s.id, PoolRecords()[0].id);
  auto p = manager_->pools().Pools()[0];
  EXPECT_EQ(p.hits, 0);
  EXPECT_EQ(p.misses, 1);
  EXPECT_EQ(p.ready, 1);
}

TEST_F(WarmPoolTest, AFullServerGivesAReadySlotToACreate) {
  StartWithPool(2);  // max_sandboxes 3: one slot free
  WaitReady(2);
  CreateRequest other;
  other.pids_limit = 64;
  for (int i = 0; i < 3; ++i) MustCreate("alice", other);
  EXPECT_EQ(manager_->lifecycle().Create("alice", other).error().code(), ErrorCode::kLimitExceeded);
  EXPECT_TRUE(PoolRecords().empty());  // both gave up their slots, and were destroyed
}

TEST_F(WarmPoolTest, ResizeAndStopLeaveNothing) {
  StartWithPool(3);
  WaitReady(3);
  ASSERT_TRUE(manager_->pools().Resize("base", false, 1));
  EXPECT_EQ(manager_->pools().Pools()[0].ready, 1);
  EXPECT_EQ(PoolRecords().size(), 1u);
  EXPECT_FALSE(manager_->pools().Resize("base", false, -1));
  manager_->Stop();
  EXPECT_TRUE(PoolRecords().empty());
  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_TRUE(owned->empty());
}

}  // namespace
}  // namespace asb::core
