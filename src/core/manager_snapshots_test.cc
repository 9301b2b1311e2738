// Snapshots through the manager: a real sandboxd on the host (FakeBackend, --no-pid1) makes and
// restores the tar streams; the store file and the archive directory are real. Root only
// (sandboxd switches users); skipped when sandboxd has not been built.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/ids.h"
#include "core/manager_test_fixture.h"
#include "store/snapshot_store.h"

namespace asb::core {
namespace {

namespace fs = std::filesystem;

class ManagerSnapshotsTest : public ManagerTest {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    if (HasFatalFailure()) return;
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (sandboxd switches users)";
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
  std::string SnapDir() { return dir_ + "/snapshots"; }

  SandboxInfo sb_;
};

TEST_F(ManagerSnapshotsTest, SnapshotRollbackForkAndOwnership) {
  Write(sb_.id, "a.txt", "one");
  Write(sb_.id, "d/b.txt", "two");
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb_.id, "first");
  ASSERT_TRUE(snap) << snap.error().ToString();
  EXPECT_TRUE(IsValidId(snap->id, "snap_"));
  EXPECT_EQ(snap->sandbox_id, sb_.id);
  EXPECT_EQ(snap->name, "first");
  EXPECT_GT(snap->size_bytes, 0);
  EXPECT_EQ(snap->content_bytes, 6);
  EXPECT_TRUE(fs::exists(SnapDir() + "/" + snap->id + ".tar.zst"));

  // Another owner sees nothing, exactly as for a missing id.
  EXPECT_EQ(manager_->snapshots().GetSnapshot("bob", snap->id).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(manager_->snapshots().DeleteSnapshot("bob", snap->id).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(manager_->snapshots().Fork("bob", snap->id, {}).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->snapshots().CreateSnapshot("bob", sb_.id, "").error().code(),
            ErrorCode::kNotFound);
  EXPECT_TRUE(manager_->snapshots().ListSnapshots("bob", std::nullopt)->empty());
  EXPECT_EQ(manager_->snapshots().ListSnapshots("alice", sb_.id)->size(), 1u);
  EXPECT_EQ(manager_->snapshots().ListSnapshots(kAnyOwner, std::nullopt)->size(), 1u);
  EXPECT_EQ(manager_->snapshots().GetSnapshot("alice", "snap_../../x").error().code(),
            ErrorCode::kNotFound);

  // Rollback: content back, later files gone, source_snapshot_id set, id kept.
  Write(sb_.id, "a.txt", "changed");
  Write(sb_.id, "new.txt", "new");
  auto rb = manager_->snapshots().Rollback("alice", sb_.id, snap->id);
  ASSERT_TRUE(rb) << rb.error().ToString();
  EXPECT_EQ(rb->id, sb_.id);
  ASSERT_TRUE(rb->source_snapshot_id.has_value());
  EXPECT_EQ(*rb->source_snapshot_id, snap->id);
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");
  EXPECT_EQ(Read(sb_.id, "d/b.txt"), "two");
  EXPECT_EQ(manager_->files().StatFile("alice", sb_.id, "new.txt").error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(store_->GetSandbox(sb_.id)->source_snapshot_id.value_or(""), snap->id);
  // No saved copy is left behind.
  for (const auto& e : fs::directory_iterator(SnapDir())) {
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }

  // Fork: a new sandbox with the files; its writes stay there.
  auto fork = manager_->snapshots().Fork("alice", snap->id, {});
  ASSERT_TRUE(fork) << fork.error().ToString();
  EXPECT_NE(fork->id, sb_.id);
  EXPECT_EQ(fork->owner, "alice");
  EXPECT_EQ(fork->source_snapshot_id.value_or(""), snap->id);
  EXPECT_EQ(Read(fork->id, "a.txt"), "one");
  Write(fork->id, "a.txt", "fork");
  EXPECT_EQ(Read(sb_.id, "a.txt"), "one");

  // Delete: record and file go; rollback to it is a bad snapshot_id (kInvalidArgument: the
  // sandbox the request addresses exists) and touches nothing.
  ASSERT_TRUE(manager_->snapshots().DeleteSnapshot("alice", snap->id));
  EXPECT_FALSE(fs::exists(SnapDir() + "/" + snap->id + ".tar.zst"));
  Write(sb_.id, "after.txt", "x");
  EXPECT_EQ(manager_->snapshots().Rollback("alice", sb_.id, snap->id).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Read(sb_.id, "after.txt"), "x");
}

TEST_F(ManagerSnapshotsTest, SnapshotsOutliveTheirSandbox) {
  Write(sb_.id, "k", "keep");
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb_.id, "");
  ASSERT_TRUE(snap);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", sb_.id));
  ASSERT_TRUE(manager_->snapshots().GetSnapshot("alice", snap->id));
  auto fork = manager_->snapshots().Fork("alice", snap->id, {});
  ASSERT_TRUE(fork) << fork.error().ToString();
  EXPECT_EQ(Read(fork->id, "k"), "keep");
}

TEST_F(ManagerSnapshotsTest, CorruptArchiveIsRefusedBeforeAnythingIsTouched) {
  Write(sb_.id, "a.txt", "one");
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb_.id, "");
  ASSERT_TRUE(snap);
  const std::string path = SnapDir() + "/" + snap->id + ".tar.zst";
  fs::resize_file(path, fs::file_size(path) / 2);
  Write(sb_.id, "a.txt", "now");
  auto rb = manager_->snapshots().Rollback("alice", sb_.id, snap->id);
  ASSERT_FALSE(rb);
  EXPECT_EQ(Read(sb_.id, "a.txt"), "now");
  EXPECT_FALSE(store_->GetSandbox(sb_.id)->source_snapshot_id.has_value());
}

TEST_F(ManagerSnapshotsTest, NamesAreAtMost200BytesOfUtf8) {
  // The import takes its name from the query string, which no JSON parser checks: a name that
  // is not UTF-8 made every later GET /v1/snapshots of the owner invalid JSON.
  Write(sb_.id, "a.txt", "one");
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb_.id, "");
  ASSERT_TRUE(snap);
  auto path = manager_->snapshots().SnapshotArchivePath("alice", snap->id);
  ASSERT_TRUE(path) << path.error().ToString();
  auto import = [&](const std::string& name) {
    const std::string tmp = SnapDir() + "/.upload-test";
    fs::copy_file(*path, tmp, fs::copy_options::overwrite_existing);
    return manager_->snapshots().ImportSnapshot("alice", tmp, name, "");
  };
  const std::string at_limit = std::string(198, 'n') + "\xc3\xa9";  // 200 bytes, ends in U+00E9
  auto ok = import(at_limit);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->name, at_limit);
  EXPECT_TRUE(import("\xf0\x9f\x98\x80 \xe2\x82\xac"));  // U+1F600, U+20AC
  EXPECT_EQ(import(std::string(201, 'n')).error().code(), ErrorCode::kInvalidArgument);
  for (const std::string bad : {"\xff\xfe", "a\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                                "\xf4\x90\x80\x80", "\xc3\x28"}) {
    auto r = import(bad);
    ASSERT_FALSE(r) << "accepted a name that is not UTF-8";
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("UTF-8"), std::string::npos) << r.error().message();
    EXPECT_EQ(manager_->snapshots().CreateSnapshot("alice", sb_.id, bad).error().code(),
              ErrorCode::kInvalidArgument);
  }
}

TEST_F(ManagerSnapshotsTest, RecoveryRemovesHalfMadeSnapshotsAndStrays) {
  Write(sb_.id, "a.txt", "one");
  auto good = manager_->snapshots().CreateSnapshot("alice", sb_.id, "");
  ASSERT_TRUE(good);
  // What a crash mid-snapshot leaves: a pending row, its temp file; plus stray files.
  store::SnapshotRecord pending;
  pending.id = "snap_00000000000000aa";
  pending.owner = "alice";
  pending.sandbox_id = sb_.id;
  pending.template_name = "base";
  pending.state = "pending";
  pending.created_at_ms = 1;
  ASSERT_TRUE(store::InsertSnapshot(*store_, pending));
  for (std::string n : {".tmp-snap_00000000000000aa.tar.zst", ".upload-up_1",
                        "snap_00000000000000bb.tar.zst", "unrelated.txt"}) {
    std::ofstream(SnapDir() + "/" + n) << "junk";
  }
  Restart();
  ASSERT_TRUE(manager_->snapshots().RecoverSnapshots());
  EXPECT_EQ(store::GetSnapshot(*store_, pending.id).error().code(), ErrorCode::kNotFound);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(SnapDir())) {
    left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{good->id + ".tar.zst", "unrelated.txt"}));
  EXPECT_TRUE(manager_->snapshots().GetSnapshot("alice", good->id));
}

}  // namespace
}  // namespace asb::core
