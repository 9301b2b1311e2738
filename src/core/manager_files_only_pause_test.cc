// The files-only pause (SandboxLifecycle::Pause with keep_memory false; E2B's keepMemory: false)
// through the manager: a real sandboxd on the host (FakeBackend, --no-pid1) serves the files,
// over both ways a workspace is kept (an archive, and FakeBackend's workspace images). What it
// must show: the files survive and nothing else runs or holds a quota slot while paused; resume
// makes the same id again; destroy, the reaper and a restart (also one cut short mid-pause)
// leave no kept workspace and no runtime behind. Root only (sandboxd switches users).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/manager_test_fixture.h"
#include "store/snapshot_store.h"

namespace asb::core {
namespace {

namespace fs = std::filesystem;

class ManagerFilesOnlyPauseTest : public ManagerTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (sandboxd switches users)";
    manager_.reset();
    backend_ = std::make_unique<testing::FakeBackend>(
        SandboxdPath(), testing::FakeBackendOptions{.workspace_images = GetParam()});
    NewManager();
    ASSERT_TRUE(manager_->lifecycle().Recover());
    sb_ = MustCreate("alice");
    auto adopted = backend_->Adopt(sb_.id);
    ASSERT_TRUE(adopted);
    if ((*adopted)->connection() == nullptr) {
      auto* fake = static_cast<testing::FakeSandbox*>(adopted->get());
      GTEST_SKIP() << "sandboxd not available: " << fake->last_error();
    }
    ASSERT_TRUE(manager_->snapshots().RecoverSnapshots());
  }

  void Write(const std::string& id, const std::string& path, const std::string& data) {
    auto r = manager_->files().WriteFile("alice", id, path, data);
    ASSERT_TRUE(r) << r.error().ToString();
  }
  std::string Read(const std::string& id, const std::string& path) {
    auto r = manager_->files().ReadFile("alice", id, path);
    return r ? *r : "(error: " + r.error().message() + ")";
  }
  std::string KeptSnapshot(const std::string& id) {
    auto s = manager_->lifecycle().Get("alice", id);
    return s ? s->paused_workspace_snapshot_id.value_or("") : "";
  }
  /// Snapshot files (archives, images) on disk whose name contains `snapshot_id`.
  int FilesOf(const std::string& snapshot_id) {
    int n = 0;
    std::vector<std::string> dirs = {dir_ + "/snapshots"};
    if (auto d = backend_->WorkspaceImageDir()) dirs.push_back(*d);
    for (const auto& d : dirs) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(d, ec)) {
        if (e.path().filename().string().find(snapshot_id) != std::string::npos) ++n;
      }
    }
    return n;
  }

  SandboxInfo sb_;
};

INSTANTIATE_TEST_SUITE_P(Workspaces, ManagerFilesOnlyPauseTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Images") : std::string("Archives");
                         });

TEST_P(ManagerFilesOnlyPauseTest, KeepsTheFilesReleasesTheRuntimeAndResumesTheSameId) {
  Write(sb_.id, "a.txt", "one");
  Write(sb_.id, "d/b.txt", "two");
  auto paused = manager_->lifecycle().Pause("alice", sb_.id, /*keep_memory=*/false);
  ASSERT_TRUE(paused) << paused.error().ToString();
  EXPECT_EQ(paused->state, SandboxState::kPaused);
  ASSERT_TRUE(paused->paused_workspace_snapshot_id.has_value());
  const std::string kept = *paused->paused_workspace_snapshot_id;
  EXPECT_EQ(StoredState(sb_.id), "paused");
  // No runtime is left, and the kept workspace is nobody's snapshot.
  EXPECT_FALSE(backend_->IsOwned(sb_.id));
  EXPECT_TRUE(manager_->snapshots().ListSnapshots(kAnyOwner, std::nullopt)->empty());
  EXPECT_EQ(manager_->snapshots().GetSnapshot("alice", kept).error().code(), ErrorCode::kNotFound);
  EXPECT_GE(FilesOf(kept), 1);
  // Paused as any pause is: calls are refused with a way on, a second pause is a conflict.
  EXPECT_EQ(manager_->files().ReadFile("alice", sb_.id, "a.txt").error().code(),
            ErrorCode::kConflict);
  EXPECT_EQ(manager_->lifecycle().Pause("alice", sb_.id, false).error().code(),
            ErrorCode::kConflict);
  EXPECT_EQ(manager_->lifecycle().Resume("bob", sb_.id).error().code(), ErrorCode::kNotFound);

  // It holds no quota slot: max_sandboxes (3) others fit now, and its resume needs one back.
  std::vector<SandboxInfo> others;
  for (int i = 0; i < config_.limits.max_sandboxes; ++i) others.push_back(MustCreate("alice"));
  auto full = manager_->lifecycle().Resume("alice", sb_.id);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(StoredState(sb_.id), "paused");
  EXPECT_EQ(KeptSnapshot(sb_.id), kept);
  EXPECT_FALSE(backend_->IsOwned(sb_.id));
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", others.back().id));

  clock_.AdvanceMs(2'000);
  auto resumed = manager_->lifecycle().Resume("alice", sb_.id, 120);
  ASSERT_TRUE(resumed) << resumed.error().ToString();
  EXPECT_EQ(resumed->id, sb_.id);
  EXPECT_EQ(resumed->state, SandboxState::kRunning);
  EXPECT_FALSE(resumed->paused_workspace_snapshot_id.has_value());
  EXPECT_EQ(resumed->expires_at_ms, clock_.NowUnixMs() + 120'000);
  EXPECT_EQ(StoredState(sb_.id), "running");
  EXPECT_TRUE(backend_->IsOwned(sb_.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(Read(sb_.id, "d/b.txt"), "two");
  // The kept workspace went with the resume; the sandbox works as before.
  EXPECT_EQ(FilesOf(kept), 0);
  EXPECT_EQ(store::GetSnapshot(*store_, kept).error().code(), ErrorCode::kNotFound);
  Write(sb_.id, "a.txt", "after");
  EXPECT_EQ(Read(sb_.id, "a.txt"), "after");
}

TEST_P(ManagerFilesOnlyPauseTest, DestroyWhilePausedRemovesTheKeptFiles) {
  Write(sb_.id, "a.txt", "one");
  auto paused = manager_->lifecycle().Pause("alice", sb_.id, false);
  ASSERT_TRUE(paused) << paused.error().ToString();
  const std::string kept = paused->paused_workspace_snapshot_id.value_or("");
  ASSERT_FALSE(kept.empty());
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", sb_.id));
  EXPECT_EQ(StoredState(sb_.id), "destroyed");
  EXPECT_EQ(FilesOf(kept), 0);
  EXPECT_EQ(store::GetSnapshot(*store_, kept).error().code(), ErrorCode::kNotFound);
}

TEST_P(ManagerFilesOnlyPauseTest, RestartKeepsItPausedAndRemovesARuntimeACrashLeft) {
  Write(sb_.id, "a.txt", "one");
  auto paused = manager_->lifecycle().Pause("alice", sb_.id, false);
  ASSERT_TRUE(paused) << paused.error().ToString();
  const std::string kept = paused->paused_workspace_snapshot_id.value_or("");
  // A crash after the record but before the runtime went (or mid-resume, after the runtime
  // was made again): a runtime with its id exists beside a paused record.
  isolation::SandboxSpec spec;
  spec.id = sb_.id;
  spec.template_name = "base";
  ASSERT_TRUE(backend_->Create(spec));
  ASSERT_TRUE(backend_->IsOwned(sb_.id));

  Restart();
  ASSERT_TRUE(manager_->snapshots().RecoverSnapshots());
  EXPECT_FALSE(backend_->IsOwned(sb_.id)) << "recovery must remove the runtime";
  auto after = manager_->lifecycle().Get("alice", sb_.id);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->state, SandboxState::kPaused);
  EXPECT_EQ(after->paused_workspace_snapshot_id.value_or(""), kept);
  EXPECT_GE(FilesOf(kept), 1) << "recovery must keep the paused sandbox's files";

  auto resumed = manager_->lifecycle().Resume("alice", sb_.id);
  ASSERT_TRUE(resumed) << resumed.error().ToString();
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(FilesOf(kept), 0);
}

TEST_P(ManagerFilesOnlyPauseTest, TheReapersAutoPauseKeepsOnlyTheFilesWhenAskedTo) {
  CreateRequest req;
  req.timeout_seconds = 60;
  req.auto_pause = true;
  req.auto_pause_keep_memory = false;
  SandboxInfo s = MustCreate("alice", req);
  EXPECT_FALSE(s.auto_pause_keep_memory);
  Write(s.id, "a.txt", "kept");
  clock_.AdvanceMs(61'000);
  manager_->lifecycle().ReapOnce();
  auto after = manager_->lifecycle().Get("alice", s.id);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->state, SandboxState::kPaused);
  EXPECT_TRUE(after->paused_workspace_snapshot_id.has_value());
  EXPECT_FALSE(backend_->IsOwned(s.id));
  // Past paused_timeout_seconds the reaper destroys it, kept files and all.
  const std::string kept = after->paused_workspace_snapshot_id.value_or("");
  clock_.AdvanceMs(config_.limits.paused_timeout_seconds * 1000 + 1000);
  manager_->lifecycle().ReapOnce();
  EXPECT_EQ(StoredState(s.id), "destroyed");
  EXPECT_EQ(FilesOf(kept), 0);
  // The setting is kept in the record across a restart.
  SandboxInfo t = MustCreate("alice", req);
  Restart();
  EXPECT_FALSE(manager_->lifecycle().Get("alice", t.id)->auto_pause_keep_memory);
}

}  // namespace
}  // namespace asb::core
