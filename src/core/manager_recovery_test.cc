// TTL/idle reaping with a FakeClock, and restart recovery over a real
// SQLite file and a FakeBackend that outlives the manager, as sandboxes outlive the server.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "core/manager_test_fixture.h"
#include "isolation/backend_wrapper.h"

namespace asb::core {
namespace {

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(ManagerTest, ExpiredSandboxesAreReapedAndExtendedOnesAreNot) {  // L5
  CreateRequest one_second;
  one_second.timeout_seconds = 1;
  SandboxInfo a = MustCreate("alice", one_second);
  SandboxInfo b = MustCreate("alice", one_second);
  ASSERT_TRUE(manager_->lifecycle().SetTimeout("alice", b.id, 60));

  clock_.AdvanceMs(999);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  EXPECT_TRUE(backend_->IsRunning(a.id));
  clock_.AdvanceMs(1);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_FALSE(backend_->IsOwned(a.id));
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(StoredState(a.id), "destroyed");
  EXPECT_TRUE(manager_->lifecycle().Get("alice", b.id));  // extended: not reaped early

  clock_.AdvanceMs(59'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_FALSE(backend_->IsOwned(b.id));
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
}

TEST_F(ManagerTest, IdleSandboxesAreReapedUnlessActive) {
  CreateRequest idle;
  idle.idle_timeout_seconds = 5;
  SandboxInfo a = MustCreate("alice", idle);
  SandboxInfo keep = MustCreate("alice");  // no idle timeout
  clock_.AdvanceMs(4'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  // Activity (even a failed exec that reached the sandbox) resets the idle clock: a file
  // operation on a sandbox without sandboxd still touches it before failing.
  (void)manager_->files().StatFile("alice", a.id, "x");
  clock_.AdvanceMs(4'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  clock_.AdvanceMs(1'001);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_FALSE(backend_->IsOwned(a.id));
  EXPECT_TRUE(backend_->IsRunning(keep.id));
}

TEST_F(ManagerTest, FailedCreatesAndStuckStopsAreReapedToo) {
  CreateRequest short_ttl;
  short_ttl.timeout_seconds = 2;
  backend_->FailNextCreate(Error::Backend("boom"), /*leave_resources=*/false);
  ASSERT_FALSE(manager_->lifecycle().Create("alice", short_ttl));
  ASSERT_EQ(manager_->lifecycle().List("alice")->size(), 1u);
  SandboxInfo stuck = MustCreate("alice");
  backend_->FailDestroy(Error::Backend("busy"));
  ASSERT_FALSE(manager_->lifecycle().Destroy("alice", stuck.id));
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);  // the retry fails again while the backend fails
  backend_->FailDestroy(std::nullopt);
  clock_.AdvanceMs(2'000);
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 2);  // the expired error record and the stuck stop
  EXPECT_TRUE(manager_->lifecycle().List("alice")->empty());
  EXPECT_EQ(StoredState(stuck.id), "destroyed");
}

TEST_F(ManagerTest, ReaperThreadReapsWithinTheInterval) {
  CreateRequest one_second;
  one_second.timeout_seconds = 1;
  ASSERT_TRUE(manager_->Start());
  SandboxInfo a = MustCreate("alice", one_second);
  clock_.AdvanceMs(1'000);
  // The thread ticks every reap_interval_seconds (1 s) of real time.
  for (int i = 0; i < 40 && backend_->IsOwned(a.id); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(backend_->IsOwned(a.id));
  manager_->Stop();
  manager_->Stop();  // idempotent
}

TEST_F(ManagerTest, RestartAdoptsDropsFinishesAndDestroysOrphans) {  // L6
  // An already destroyed record whose id the backend lists again (a remnant):
  SandboxInfo old = MustCreate("alice");
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", old.id));
  backend_->AddLeftover(old.id);

  CreateRequest ttl;
  ttl.timeout_seconds = 300;
  SandboxInfo survivor = MustCreate("alice", ttl);
  SandboxInfo vanished = MustCreate("alice");
  SandboxInfo half_deleted = MustCreate("bob");

  // The state left by a SIGKILL at awkward moments:
  backend_->Crash(vanished.id);  // its processes died while the server was down
  // a destroy interrupted between "stopping" and the backend call:
  ASSERT_TRUE(store_->SetSandboxState(half_deleted.id, "stopping", "", clock_.NowUnixMs()));
  // a create interrupted inside the backend (record "creating", resources half made):
  store::SandboxRecord creating;
  creating.id = "sb_00000000000000c1";
  creating.owner = "alice";
  creating.template_name = "base";
  creating.state = "creating";
  creating.created_at_ms = creating.updated_at_ms = creating.last_activity_at_ms =
      clock_.NowUnixMs();
  creating.expires_at_ms = clock_.NowUnixMs() + 900'000;
  creating.backend = "fake";
  ASSERT_TRUE(store_->InsertSandbox(creating));
  backend_->AddLeftover(creating.id);
  // resources we own that no record names (e.g. a create that crashed before its INSERT):
  backend_->AddLeftover("sb_00000000000000d1");
  backend_->AddRunning("sb_00000000000000d2");

  clock_.AdvanceMs(5'000);
  Restart();

  // Adopted with its original expires_at.
  auto s = manager_->lifecycle().Get("alice", survivor.id);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->state, SandboxState::kRunning);
  EXPECT_EQ(s->expires_at_ms, survivor.expires_at_ms);
  EXPECT_TRUE(backend_->IsRunning(survivor.id));
  EXPECT_EQ(backend_->CountCalls("destroy " + survivor.id), 0);
  // Dropped: its sandbox is gone.
  EXPECT_EQ(manager_->lifecycle().Get("alice", vanished.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(StoredState(vanished.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(vanished.id));
  // Interrupted transitions finished.
  EXPECT_EQ(StoredState(half_deleted.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(half_deleted.id));
  EXPECT_EQ(StoredState(creating.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(creating.id));
  // Orphans destroyed.
  EXPECT_FALSE(backend_->IsOwned("sb_00000000000000d1"));
  EXPECT_FALSE(backend_->IsOwned("sb_00000000000000d2"));
  EXPECT_FALSE(backend_->IsOwned(old.id));
  // Only the survivor is left, and it still counts against the quota (3).
  auto all = manager_->lifecycle().List(kAnyOwner);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].id, survivor.id);
  MustCreate("alice");
  MustCreate("alice");
  EXPECT_EQ(manager_->lifecycle().Create("alice", {}).error().code(), ErrorCode::kLimitExceeded);

  // The adopted sandbox is reaped at its original expiry, not later.
  clock_.AdvanceMs(300'000 - 5'000);
  EXPECT_GE(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_FALSE(backend_->IsOwned(survivor.id));

  // A second recovery is harmless.
  ASSERT_TRUE(manager_->lifecycle().Recover());
  EXPECT_FALSE(Contains(backend_->calls(), "destroy sb_nonexistent"));
}

/// Wraps the fake backend; Adopt of one id fails as told (a sandboxd still dying, say).
class FlakyAdopt final : public isolation::BackendWrapper {
 public:
  enum class Mode { kUnreachable, kGone, kNormal };
  FlakyAdopt(isolation::Backend& inner, std::vector<std::string> ids)
      : BackendWrapper(inner), ids_(std::move(ids)) {}
  Result<std::shared_ptr<isolation::Sandbox>> Adopt(const std::string& id) override {
    if (std::find(ids_.begin(), ids_.end(), id) != ids_.end()) {
      ++adopt_calls;
      if (mode == Mode::kUnreachable) return Fail(Error::Unavailable("connection refused"));
      if (mode == Mode::kGone) return Fail(Error::NotFound("no longer runs"));
    }
    return BackendWrapper::Adopt(id);
  }

  std::atomic<Mode> mode{Mode::kUnreachable};
  std::atomic<int> adopt_calls{0};

 private:
  std::vector<std::string> ids_;
};

TEST_F(ManagerTest, UnreachableSandboxesAreKeptAsErrorsThenAdoptedOrDroppedByTheReaper) {
  SandboxInfo a = MustCreate("alice");
  SandboxInfo late = MustCreate("alice");   // reachable again after a while
  SandboxInfo dying = MustCreate("alice");  // turns out to be gone
  FlakyAdopt flaky(*backend_, {late.id, dying.id});

  manager_.reset();
  store_.reset();
  OpenStore();
  manager_ = std::make_unique<SandboxManager>(config_, *store_, flaky, clock_, *catalog_);
  ASSERT_TRUE(manager_->lifecycle().Recover());
  EXPECT_GE(flaky.adopt_calls.load(), 4);  // retried within Recover
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id)->state, SandboxState::kRunning);
  for (const auto& id : {late.id, dying.id}) {
    auto b = manager_->lifecycle().Get("alice", id);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->state, SandboxState::kError);
    EXPECT_NE(b->error_message.find("connection refused"), std::string::npos);
    EXPECT_TRUE(backend_->IsOwned(id));  // named by a live record: not an orphan
  }
  // Not counted against the quota while in error.
  MustCreate("alice");
  MustCreate("alice");

  // A reaper pass retries: still unreachable -> unchanged.
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 0);
  EXPECT_EQ(manager_->lifecycle().Get("alice", late.id)->state, SandboxState::kError);

  // `dying` is now reported gone -> dropped; `late` answers -> running again.
  backend_->Crash(dying.id);
  flaky.mode = FlakyAdopt::Mode::kNormal;
  EXPECT_EQ(manager_->lifecycle().ReapOnce(), 1);
  EXPECT_EQ(manager_->lifecycle().Get("alice", dying.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(StoredState(dying.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(dying.id));
  auto back = manager_->lifecycle().Get("alice", late.id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, SandboxState::kRunning);
  EXPECT_EQ(StoredState(late.id), "running");
  EXPECT_EQ(manager_->lifecycle().Create("alice", {}).error().code(), ErrorCode::kLimitExceeded);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", late.id));
  manager_.reset();  // before `flaky` goes out of scope
}

/// The fake backend, stating that its sandboxes end with the server (no adopt).
class NoAdopt final : public isolation::BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  isolation::BackendCapabilities Capabilities() const override {
    auto c = BackendWrapper::Capabilities();
    c.adopt = false;
    return c;
  }
};

TEST_F(ManagerTest, ABackendThatCannotAdoptHasItsSandboxesDestroyedOnRestart) {
  SandboxInfo a = MustCreate("alice");
  NoAdopt no_adopt(*backend_);
  manager_.reset();
  store_.reset();
  OpenStore();
  manager_ = std::make_unique<SandboxManager>(config_, *store_, no_adopt, clock_, *catalog_);
  ASSERT_TRUE(manager_->lifecycle().Recover());
  // Never asked to adopt: the record is dropped and what the backend held is removed.
  EXPECT_EQ(backend_->CountCalls("adopt " + a.id), 0);
  EXPECT_EQ(manager_->lifecycle().Get("alice", a.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(StoredState(a.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(a.id));
  manager_.reset();  // before `no_adopt` goes out of scope
}

}  // namespace
}  // namespace asb::core
