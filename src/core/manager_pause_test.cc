// Pause and resume in the manager (lifecycle.h, ADR 0024) over the FakeBackend: the state
// machine and its records, what a paused sandbox refuses, its own clock in the reaper,
// auto-pause, and what a restart does with paused sandboxes and with a crash between a freeze
// and its record. The freeze itself is tested on the real ns backend (manager_ns_test.cc).
#include <gtest/gtest.h>

#include "core/manager_test_fixture.h"

namespace asb::core {
namespace {

TEST_F(ManagerTest, PauseAndResumeMoveTheStateAndTheClock) {
  CreateRequest req;
  req.timeout_seconds = 60;
  SandboxInfo a = MustCreate("alice", req);
  clock_.AdvanceMs(10'000);

  auto paused = manager_->lifecycle().Pause("alice", a.id);
  ASSERT_TRUE(paused) << paused.error().ToString();
  EXPECT_EQ(paused->state, SandboxState::kPaused);
  EXPECT_EQ(paused->paused_at_ms, clock_.NowUnixMs());
  // While paused its TTL is the paused one, from the pause.
  EXPECT_EQ(paused->expires_at_ms,
            clock_.NowUnixMs() + config_.limits.paused_timeout_seconds * 1000);
  EXPECT_TRUE(backend_->IsPaused(a.id));
  EXPECT_EQ(StoredState(a.id), "paused");
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id)->state, SandboxState::kPaused);

  // Twice: a conflict, and nothing changes.
  auto again = manager_->lifecycle().Pause("alice", a.id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kConflict);
  EXPECT_NE(again.error().message().find("already paused"), std::string::npos);

  // What runs in a sandbox is refused with a way on; destroy and inspect work.
  auto ex = manager_->exec().Exec("alice", a.id, ExecOptions{.argv = {"true"}});
  ASSERT_FALSE(ex);
  EXPECT_EQ(ex.error().code(), ErrorCode::kConflict);
  EXPECT_NE(ex.error().message().find("paused: resume it first"), std::string::npos)
      << ex.error().message();
  EXPECT_EQ(manager_->files().StatFile("alice", a.id, "x").error().code(), ErrorCode::kConflict);
  EXPECT_EQ(manager_->lifecycle().Usage("alice", a.id).error().code(), ErrorCode::kConflict);
  EXPECT_EQ(manager_->lifecycle().SetTimeout("alice", a.id, 30).error().code(),
            ErrorCode::kConflict);

  // Another tenant sees nothing, and cannot pause or resume it.
  EXPECT_EQ(manager_->lifecycle().Resume("bob", a.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->lifecycle().Pause("bob", a.id).error().code(), ErrorCode::kNotFound);

  clock_.AdvanceMs(5'000);
  auto resumed = manager_->lifecycle().Resume("alice", a.id);  // its last TTL again, from now
  ASSERT_TRUE(resumed) << resumed.error().ToString();
  EXPECT_EQ(resumed->state, SandboxState::kRunning);
  EXPECT_EQ(resumed->paused_at_ms, 0);
  EXPECT_EQ(resumed->expires_at_ms, clock_.NowUnixMs() + 60'000);
  EXPECT_FALSE(backend_->IsPaused(a.id));
  EXPECT_EQ(StoredState(a.id), "running");
  EXPECT_EQ(manager_->lifecycle().Resume("alice", a.id).error().code(), ErrorCode::kConflict);

  // A TTL given on resume: checked and clamped as SetTimeout does.
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", a.id));
  auto low = manager_->lifecycle().Resume("alice", a.id, config_.limits.min_timeout_seconds - 1);
  ASSERT_FALSE(low);
  EXPECT_EQ(low.error().code(), ErrorCode::kInvalidArgument);
  auto high = manager_->lifecycle().Resume("alice", a.id, config_.limits.max_timeout_seconds + 1);
  ASSERT_TRUE(high) << high.error().ToString();
  EXPECT_EQ(high->timeout_seconds, config_.limits.max_timeout_seconds);

  // A paused sandbox is destroyed like any other.
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", a.id));
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", a.id));
  EXPECT_FALSE(backend_->IsOwned(a.id));
  EXPECT_EQ(StoredState(a.id), "destroyed");
}

TEST_F(ManagerTest, PausedSandboxesKeepTheirQuotaSlot) {
  std::vector<SandboxInfo> all;
  for (int i = 0; i < config_.limits.max_sandboxes; ++i) all.push_back(MustCreate());
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", all[0].id));
  auto over = manager_->lifecycle().Create("alice", {});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kLimitExceeded);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", all[0].id));
  EXPECT_TRUE(manager_->lifecycle().Create("alice", {}));
}

TEST_F(ManagerTest, AFailedFreezeLeavesTheSandboxRunning) {
  SandboxInfo a = MustCreate();
  backend_->FailPause(Error::Timeout("a task would not stop"));
  auto p = manager_->lifecycle().Pause("alice", a.id);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kTimeout);
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id)->state, SandboxState::kRunning);
  EXPECT_EQ(StoredState(a.id), "running");
  backend_->FailPause(Error::Backend("cgroup write refused"));
  p = manager_->lifecycle().Pause("alice", a.id);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kBackend);
}

TEST_F(ManagerTest, PausedSandboxesLiveOnTheirOwnClock) {
  config_.limits.paused_timeout_seconds = 100;
  NewManager();
  CreateRequest req;
  req.timeout_seconds = 10;
  req.idle_timeout_seconds = 5;
  SandboxInfo a = MustCreate("alice", req);
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", a.id));
  // Neither its TTL nor its idle timeout ends it while paused...
  clock_.AdvanceMs(99'999);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  EXPECT_TRUE(backend_->IsOwned(a.id));
  // ...the paused timeout does, to the millisecond.
  clock_.AdvanceMs(1);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_FALSE(backend_->IsOwned(a.id));
  EXPECT_EQ(StoredState(a.id), "destroyed");
}

TEST_F(ManagerTest, AutoPauseOnTtlAndIdleTimeoutInsteadOfDestroy) {
  CreateRequest ttl;
  ttl.timeout_seconds = 10;
  ttl.auto_pause = true;
  CreateRequest idle;
  idle.idle_timeout_seconds = 3;
  idle.auto_pause = true;
  SandboxInfo a = MustCreate("alice", ttl);
  SandboxInfo b = MustCreate("alice", idle);
  EXPECT_TRUE(a.auto_pause);
  clock_.AdvanceMs(3'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);  // paused, not destroyed
  EXPECT_EQ(manager_->lifecycle().Get("alice", b.id)->state, SandboxState::kPaused);
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id)->state, SandboxState::kRunning);
  clock_.AdvanceMs(7'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id)->state, SandboxState::kPaused);
  EXPECT_TRUE(backend_->IsPaused(a.id));
  EXPECT_EQ(manager_->lifecycle().Counts().auto_paused, 2);
  EXPECT_EQ(manager_->lifecycle().Counts().reaped, 0);
  // Resumed, it runs on its TTL again; auto_pause is kept (it survives in the record).
  auto r = manager_->lifecycle().Resume("alice", a.id);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->auto_pause);
  // One whose pause fails ends as its TTL says.
  backend_->FailPause(Error::Timeout("stuck"));
  clock_.AdvanceMs(10'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_EQ(StoredState(a.id), "destroyed");
}

TEST_F(ManagerTest, RestartKeepsPausedSandboxesPausedAndUndoesAHalfDonePause) {
  SandboxInfo paused = MustCreate();
  SandboxInfo running = MustCreate();
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", paused.id));
  const int64_t deadline = manager_->lifecycle().Get("alice", paused.id)->expires_at_ms;
  // A crash after a freeze, before its record: the sandbox is frozen, its record says running.
  backend_->SetPaused(running.id, true);

  Restart();
  auto p = manager_->lifecycle().Get("alice", paused.id);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state, SandboxState::kPaused);
  EXPECT_EQ(p->expires_at_ms, deadline);
  EXPECT_TRUE(backend_->IsPaused(paused.id));
  EXPECT_EQ(manager_->lifecycle().Get("alice", running.id)->state, SandboxState::kRunning);
  EXPECT_FALSE(backend_->IsPaused(running.id));  // thawed to match its record
  // It still resumes, and holds its slot meanwhile.
  ASSERT_TRUE(manager_->lifecycle().Resume("alice", paused.id));
  EXPECT_FALSE(backend_->IsPaused(paused.id));

  // A paused sandbox that cannot be frozen again after a restart runs, and says so.
  ASSERT_TRUE(manager_->lifecycle().Pause("alice", paused.id));
  backend_->FailPause(Error::Timeout("stuck"));
  Restart();
  EXPECT_EQ(manager_->lifecycle().Get("alice", paused.id)->state, SandboxState::kRunning);
  EXPECT_EQ(StoredState(paused.id), "running");
}

TEST_F(ManagerTest, AutoPauseIsKeptInTheRecord) {
  CreateRequest req;
  req.auto_pause = true;
  SandboxInfo a = MustCreate("alice", req);
  Restart();
  EXPECT_TRUE(manager_->lifecycle().Get("alice", a.id)->auto_pause);
}

}  // namespace
}  // namespace asb::core
