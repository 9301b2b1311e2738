// The image fast path of snapshots (docs/adr/0009) through the manager, over FakeBackend's
// workspace images (real files in a temp dir) and a real sandboxd on the host (--no-pid1):
// a snapshot keeps an image and no archive, rollback stages and swaps it in, fork clones it,
// the archive is made from it on demand, and recovery finishes or removes what a crash left.
// Needs no loop devices or mounts; root only because sandboxd switches users (skipped else).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/manager_test_fixture.h"
#include "core/snapshot_archive.h"
#include "isolation/backend_wrapper.h"
#include "store/snapshot_store.h"

namespace asb::core {
namespace {

namespace fs = std::filesystem;

/// Fails every image swap, as a backend whose mount switch went wrong.
class FailingSwap final : public isolation::BackendWrapper {
 public:
  using BackendWrapper::BackendWrapper;
  Result<bool> SwapStagedWorkspace(const std::string& id) override {
    ++swaps;
    (void)id;
    return Fail(Error::Backend("injected: swap failed"));
  }
  int swaps = 0;
};

class ManagerSnapshotImagesTest : public ManagerTest {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (sandboxd switches users)";
    manager_.reset();
    backend_ = std::make_unique<testing::FakeBackend>(
        SandboxdPath(), testing::FakeBackendOptions{.workspace_images = true});
    NewManager();
    ASSERT_TRUE(manager_->lifecycle().Recover());
    sb_ = MustCreate("alice");
    auto adopted = backend_->Adopt(sb_.id);
    ASSERT_TRUE(adopted);
    if ((*adopted)->connection() == nullptr) {
      auto* fake = static_cast<testing::FakeSandbox*>(adopted->get());
      GTEST_SKIP() << "sandboxd not available: " << fake->last_error();
    }
    auto dir = backend_->WorkspaceImageDir();
    ASSERT_TRUE(dir) << dir.error().ToString();
    img_dir_ = *dir;
  }

  void TearDown() override {
    manager_.reset();  // before any wrapper of a test goes
    ManagerTest::TearDown();
  }

  /// A restart of the server (SIGKILL, then SandboxManager::Start's two recoveries without the
  /// reaper thread) over `backend`: a wrapper of backend_, or backend_ itself.
  void RestartOver(isolation::Backend& backend) {
    manager_.reset();
    store_.reset();
    OpenStore();
    manager_ = std::make_unique<SandboxManager>(config_, *store_, backend, clock_, *catalog_);
    auto st = manager_->lifecycle().Recover();
    ASSERT_TRUE(st) << st.error().ToString();
    st = manager_->snapshots().RecoverSnapshots();
    ASSERT_TRUE(st) << st.error().ToString();
  }
  void RestartServer() { RestartOver(*backend_); }

  void Write(const std::string& id, const std::string& path, const std::string& data) {
    auto r = manager_->files().WriteFile("alice", id, path, data);
    ASSERT_TRUE(r) << r.error().ToString();
  }
  std::string Read(const std::string& id, const std::string& path) {
    auto r = manager_->files().ReadFile("alice", id, path);
    return r ? *r : "(error: " + r.error().message() + ")";
  }
  std::string SnapDir() { return dir_ + "/snapshots"; }
  std::string ImageOf(const std::string& snap_id) { return img_dir_ + "/" + snap_id + ".img"; }
  std::string ArchiveOf(const std::string& snap_id) {
    return SnapDir() + "/" + snap_id + ".tar.zst";
  }
  static std::vector<std::string> Names(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  SnapshotInfo MustSnapshot(const std::string& id) {
    auto snap = manager_->snapshots().CreateSnapshot("alice", id, "");
    EXPECT_TRUE(snap) << snap.error().ToString();
    return snap ? *snap : SnapshotInfo{};
  }

  SandboxInfo sb_;
  std::string img_dir_;
};

TEST_F(ManagerSnapshotImagesTest, ASnapshotKeepsAnImageAndNoArchive) {
  Write(sb_.id, "a.txt", "one");
  Write(sb_.id, "d/b.txt", "twotwo");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  EXPECT_EQ(backend_->CountCalls("copy " + sb_.id), 1);
  // The image, renamed into place (no temp left), sized as the workspace's quota.
  EXPECT_EQ(Names(img_dir_), std::vector<std::string>{snap.id + ".img"});
  EXPECT_EQ(fs::file_size(ImageOf(snap.id)), static_cast<uint64_t>(sb_.workspace_mb) << 20);
  EXPECT_FALSE(fs::exists(ArchiveOf(snap.id)));  // made on demand only
  EXPECT_EQ(snap.content_bytes, 9);              // what the workspace's files hold
  auto got = manager_->snapshots().GetSnapshot("alice", snap.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->content_bytes, 9);
  // Deleting the snapshot removes its image.
  ASSERT_TRUE(manager_->snapshots().DeleteSnapshot("alice", snap.id));
  EXPECT_FALSE(fs::exists(ImageOf(snap.id)));
}

TEST_F(ManagerSnapshotImagesTest, RollbackSwapsTheImageIn) {
  Write(sb_.id, "a.txt", "one");
  Write(sb_.id, "d/b.txt", "two");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  Write(sb_.id, "a.txt", "changed");
  Write(sb_.id, "new.txt", "new");
  auto rb = manager_->snapshots().Rollback("alice", sb_.id, snap.id);
  ASSERT_TRUE(rb) << rb.error().ToString();
  EXPECT_EQ(rb->source_snapshot_id.value_or(""), snap.id);
  // The image path, not the archive: staged, swapped, and no archive made or backup saved.
  EXPECT_EQ(backend_->CountCalls("stage " + sb_.id), 1);
  EXPECT_EQ(backend_->CountCalls("swap " + sb_.id), 1);
  EXPECT_FALSE(backend_->HasStagedWorkspace(sb_.id));
  EXPECT_FALSE(fs::exists(ArchiveOf(snap.id)));
  EXPECT_EQ(Names(SnapDir()), std::vector<std::string>{});
  // sandboxd serves the swapped-in tree.
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(Read(sb_.id, "d/b.txt"), "two");
  EXPECT_EQ(manager_->files().StatFile("alice", sb_.id, "new.txt").error().code(),
            ErrorCode::kNotFound);
  Write(sb_.id, "after.txt", "x");
  EXPECT_EQ(Read(sb_.id, "after.txt"), "x");
  // The snapshot's image is untouched by the rollback and by later writes: a second one works.
  Write(sb_.id, "a.txt", "again");
  ASSERT_TRUE(manager_->snapshots().Rollback("alice", sb_.id, snap.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(manager_->files().StatFile("alice", sb_.id, "after.txt").error().code(),
            ErrorCode::kNotFound);
}

TEST_F(ManagerSnapshotImagesTest, ForkClonesTheImage) {
  Write(sb_.id, "a.txt", "one");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  auto fork = manager_->snapshots().Fork("alice", snap.id, {});
  ASSERT_TRUE(fork) << fork.error().ToString();
  auto spec = backend_->SpecOf(fork->id);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->workspace_image, ImageOf(snap.id));
  EXPECT_EQ(spec->workspace_bytes, fs::file_size(ImageOf(snap.id)));
  EXPECT_EQ(fork->source_snapshot_id.value_or(""), snap.id);
  EXPECT_FALSE(fs::exists(ArchiveOf(snap.id)));
  EXPECT_EQ(Read(fork->id, "a.txt"), "one");
  // Its own copy: writes on either side stay there.
  Write(fork->id, "a.txt", "fork");
  Write(sb_.id, "a.txt", "source");
  EXPECT_EQ(Read(fork->id, "a.txt"), "fork");
  EXPECT_EQ(Read(sb_.id, "a.txt"), "source");
}

TEST_F(ManagerSnapshotImagesTest, TheArchiveIsMadeFromTheImageOnDemand) {
  Write(sb_.id, "a.txt", "one");
  Write(sb_.id, "d/b.txt", "two");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  auto creates_so_far = [&] {
    const std::vector<std::string> calls = backend_->calls();  // a copy: one range
    return std::count_if(calls.begin(), calls.end(),
                         [](const std::string& c) { return c.rfind("create ", 0) == 0; });
  };
  const auto creates = creates_so_far();
  auto path = manager_->snapshots().SnapshotArchivePath("alice", snap.id);
  ASSERT_TRUE(path) << path.error().ToString();
  EXPECT_EQ(*path, ArchiveOf(snap.id));
  // Through a short-lived sandbox over a clone of the image, destroyed again.
  std::vector<std::string> calls = backend_->calls();
  std::string helper;
  for (const auto& c : calls) {
    if (c.rfind("create ", 0) == 0) helper = c.substr(7);
  }
  EXPECT_EQ(creates_so_far(), creates + 1);
  ASSERT_TRUE(backend_->SpecOf(helper));
  EXPECT_EQ(backend_->SpecOf(helper)->workspace_image, ImageOf(snap.id));
  EXPECT_FALSE(backend_->IsOwned(helper));
  auto facts = ScanArchive(*path, 0);
  ASSERT_TRUE(facts) << facts.error().ToString();
  EXPECT_EQ(facts->content_bytes, 6u);
  // Stored bytes now count the archive too.
  auto got = manager_->snapshots().GetSnapshot("alice", snap.id);
  ASSERT_TRUE(got);
  EXPECT_GE(static_cast<uint64_t>(got->size_bytes), facts->file_bytes);
  // The archive holds the files: without the image, a fork takes the archive path.
  fs::remove(ImageOf(snap.id));
  auto fork = manager_->snapshots().Fork("alice", snap.id, {});
  ASSERT_TRUE(fork) << fork.error().ToString();
  EXPECT_EQ(backend_->SpecOf(fork->id)->workspace_image, "");
  EXPECT_EQ(Read(fork->id, "a.txt"), "one");
  EXPECT_EQ(Read(fork->id, "d/b.txt"), "two");
  // A second call finds the archive: no new sandbox.
  const size_t before = backend_->calls().size();
  ASSERT_TRUE(manager_->snapshots().SnapshotArchivePath("alice", snap.id));
  EXPECT_EQ(backend_->calls().size(), before);
}

TEST_F(ManagerSnapshotImagesTest, AFailedSwapKeepsTheOldWorkspaceAndDropsTheStage) {
  Write(sb_.id, "a.txt", "one");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  Write(sb_.id, "a.txt", "changed");
  FailingSwap failing(*backend_);
  RestartOver(failing);
  auto rb = manager_->snapshots().Rollback("alice", sb_.id, snap.id);
  ASSERT_FALSE(rb);
  EXPECT_EQ(rb.error().code(), ErrorCode::kBackend);
  EXPECT_EQ(failing.swaps, 1);
  EXPECT_EQ(backend_->CountCalls("drop " + sb_.id), 1);
  EXPECT_FALSE(backend_->HasStagedWorkspace(sb_.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "changed");
  EXPECT_FALSE(store_->GetSandbox(sb_.id)->source_snapshot_id.has_value());
}

TEST_F(ManagerSnapshotImagesTest, AStagedRollbackLeftBehindIsRolledForwardOnRestart) {
  Write(sb_.id, "a.txt", "one");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  Write(sb_.id, "a.txt", "changed");
  Write(sb_.id, "new.txt", "new");
  // A rollback cut short after step 1: the image is staged, nothing else happened.
  ASSERT_TRUE(backend_->StageWorkspace(sb_.id, ImageOf(snap.id)));
  ASSERT_TRUE(backend_->HasStagedWorkspace(sb_.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "changed");  // staging touches nothing the sandbox sees
  RestartServer();
  EXPECT_EQ(backend_->CountCalls("swap " + sb_.id), 1);
  EXPECT_FALSE(backend_->HasStagedWorkspace(sb_.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(manager_->files().StatFile("alice", sb_.id, "new.txt").error().code(),
            ErrorCode::kNotFound);
  // Once is enough: a second recovery swaps nothing.
  ASSERT_TRUE(manager_->snapshots().RecoverSnapshots());
  EXPECT_EQ(backend_->CountCalls("swap " + sb_.id), 1);
}

TEST_F(ManagerSnapshotImagesTest, AStagedRollbackThatCannotBeFinishedIsDropped) {
  Write(sb_.id, "a.txt", "one");
  SnapshotInfo snap = MustSnapshot(sb_.id);
  Write(sb_.id, "a.txt", "changed");
  ASSERT_TRUE(backend_->StageWorkspace(sb_.id, ImageOf(snap.id)));
  FailingSwap failing(*backend_);
  RestartOver(failing);  // recovery logs the failure and goes on
  EXPECT_EQ(failing.swaps, 1);
  EXPECT_FALSE(backend_->HasStagedWorkspace(sb_.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "changed");
  EXPECT_EQ(manager_->lifecycle().Get("alice", sb_.id)->state, SandboxState::kRunning);
}

TEST_F(ManagerSnapshotImagesTest, RecoveryRemovesHalfMadeAndStrayImages) {
  Write(sb_.id, "a.txt", "one");
  SnapshotInfo good = MustSnapshot(sb_.id);
  // A crash mid-snapshot: a pending record and its image; a temp image; an image no record
  // names (a crash after a delete); a file that is not ours.
  store::SnapshotRecord pending;
  pending.id = "snap_00000000000000aa";
  pending.owner = "alice";
  pending.sandbox_id = sb_.id;
  pending.template_name = "base";
  pending.state = "pending";
  pending.created_at_ms = 1;
  ASSERT_TRUE(store::InsertSnapshot(*store_, pending));
  for (std::string n : {std::string("snap_00000000000000aa.img"),
                        std::string(kSnapshotTempPrefix) + "snap_00000000000000cc.img",
                        std::string("snap_00000000000000bb.img"), std::string("unrelated.txt")}) {
    std::ofstream(img_dir_ + "/" + n) << "junk";
  }
  RestartServer();
  EXPECT_EQ(store::GetSnapshot(*store_, pending.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Names(img_dir_), (std::vector<std::string>{good.id + ".img", "unrelated.txt"}));
  // The ready snapshot still works through its image.
  Write(sb_.id, "a.txt", "changed");
  ASSERT_TRUE(manager_->snapshots().Rollback("alice", sb_.id, good.id));
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
}

TEST_F(ManagerSnapshotImagesTest, ASnapshotOverTheByteLimitLeavesNothing) {
  Write(sb_.id, "big.txt", std::string(4096, 'x'));
  config_.snapshots.max_snapshot_bytes = 1000;
  manager_.reset();
  NewManager();
  ASSERT_TRUE(manager_->lifecycle().Recover());
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb_.id, "");
  ASSERT_FALSE(snap);
  EXPECT_EQ(snap.error().code(), ErrorCode::kTooLarge);
  EXPECT_EQ(Names(img_dir_), std::vector<std::string>{});
  EXPECT_TRUE(manager_->snapshots().ListSnapshots("alice", std::nullopt)->empty());
}

// Without the capability the image operations say so, and snapshots take the archive path.
TEST(FakeBackendImages, WithoutTheCapabilityEveryImageOperationIsUnavailable) {
  testing::FakeBackend b;
  EXPECT_FALSE(b.Capabilities().workspace_images);
  b.AddRunning("sb_0000000000000001");
  EXPECT_EQ(b.WorkspaceImageDir().error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(b.CopyWorkspaceImage("sb_0000000000000001", "/tmp/x").error().code(),
            ErrorCode::kUnavailable);
  EXPECT_EQ(b.StageWorkspace("sb_0000000000000001", "/tmp/x").error().code(),
            ErrorCode::kUnavailable);
  EXPECT_EQ(b.SwapStagedWorkspace("sb_0000000000000001").error().code(), ErrorCode::kUnavailable);
  EXPECT_FALSE(b.HasStagedWorkspace("sb_0000000000000001"));
  isolation::SandboxSpec spec;
  spec.id = "sb_0000000000000002";
  spec.workspace_image = "/tmp/x";
  EXPECT_EQ(b.Create(spec).error().code(), ErrorCode::kUnavailable);
}

// The fake's own contract, without a manager or sandboxd: copy, create from an image, stage
// (size checked) and swap.
TEST(FakeBackendImages, CopyStageAndSwapMoveTheTree) {
  testing::FakeBackend b("", testing::FakeBackendOptions{.workspace_images = true});
  ASSERT_TRUE(b.Capabilities().workspace_images);
  isolation::SandboxSpec spec;
  spec.id = "sb_0000000000000001";
  spec.workspace_bytes = 8 << 20;
  auto sb = b.Create(spec);
  ASSERT_TRUE(sb);
  auto* fake = static_cast<testing::FakeSandbox*>(sb->get());
  const std::string dir = *b.WorkspaceImageDir();
  const std::string empty = dir + "/empty.img", full = dir + "/full.img";
  EXPECT_FALSE(*b.SwapStagedWorkspace(spec.id));  // nothing staged: false, not an error
  auto copy = b.CopyWorkspaceImage(spec.id, empty);
  ASSERT_TRUE(copy) << copy.error().ToString();
  EXPECT_EQ(copy->image_bytes, 8u << 20);
  EXPECT_EQ(fs::file_size(empty), 8u << 20);
  EXPECT_EQ(copy->used_bytes, 0u);
  EXPECT_FALSE(b.CopyWorkspaceImage(spec.id, empty));  // dest must be new

  const std::string ws = fake->workspace_dir();
  ASSERT_FALSE(ws.empty());
  fs::create_directories(ws + "/d");
  std::ofstream(ws + "/d/f.txt") << "hello";
  fs::create_symlink("d/f.txt", ws + "/link");
  copy = b.CopyWorkspaceImage(spec.id, full);
  ASSERT_TRUE(copy) << copy.error().ToString();
  EXPECT_EQ(copy->used_bytes, 5u);

  // Rollback's two steps: staged beside the workspace (nothing changes), then swapped in.
  ASSERT_TRUE(b.StageWorkspace(spec.id, empty));
  EXPECT_TRUE(b.HasStagedWorkspace(spec.id));
  EXPECT_TRUE(fs::exists(ws + "/d/f.txt"));
  auto swapped = b.SwapStagedWorkspace(spec.id);
  ASSERT_TRUE(swapped) << swapped.error().ToString();
  EXPECT_TRUE(*swapped);
  EXPECT_FALSE(b.HasStagedWorkspace(spec.id));
  EXPECT_TRUE(fs::is_empty(ws));
  // A drop removes a stage.
  ASSERT_TRUE(b.StageWorkspace(spec.id, full));
  ASSERT_TRUE(b.DropStagedWorkspace(spec.id));
  EXPECT_FALSE(b.HasStagedWorkspace(spec.id));
  EXPECT_TRUE(fs::is_empty(ws));

  // A sandbox made from the image has the tree; a size that is not the image's is refused.
  isolation::SandboxSpec other = spec;
  other.id = "sb_0000000000000002";
  other.workspace_image = full;
  auto sb2 = b.Create(other);
  ASSERT_TRUE(sb2) << sb2.error().ToString();
  auto* fake2 = static_cast<testing::FakeSandbox*>(sb2->get());
  std::ifstream in(fake2->workspace_dir() + "/d/f.txt");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "hello");
  EXPECT_EQ(fs::read_symlink(fake2->workspace_dir() + "/link"), "d/f.txt");
  other.id = "sb_0000000000000003";
  other.workspace_bytes = 16 << 20;
  EXPECT_EQ(b.Create(other).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(b.IsOwned(other.id));
  isolation::SandboxSpec small = spec;
  small.id = "sb_0000000000000004";
  small.workspace_bytes = 16 << 20;
  ASSERT_TRUE(b.Create(small));
  EXPECT_EQ(b.StageWorkspace(small.id, full).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(b.HasStagedWorkspace(small.id));
}

}  // namespace
}  // namespace asb::core
