// The ns backend's workspace images (ADR 0009), on real sandboxes: a copy of a
// running workspace, a sandbox created from it (another uid range: owners and modes as the
// sandbox sees them), a staged image that changes nothing until swapped in, the swap inside the
// running sandbox, and the refusals that make a failed rollback leave the sandbox as it was.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "isolation/ns/ns_test_support.h"
#include "isolation/ns/workspace_seed.h"

namespace asb::isolation::ns::testing {
namespace {

class WorkspaceImageTest : public NsBackendTest {
 protected:
  static std::string Out(Sandbox& sb, const std::string& cmd) {
    auto r = Sh(sb, cmd);
    return r.stdout_data + r.stderr_data;
  }
};

TEST_F(WorkspaceImageTest, ImageCopyForkStageSwapAndRefusals) {
  const HostSnapshot before = Snapshot();
  auto a_spec = Spec();
  auto a = MustCreate(a_spec);
  ASSERT_TRUE(a);
  ASSERT_EQ(Out(*a, "cd /workspace && echo one > f && mkdir d && chmod 700 d"), "");
  ASSERT_TRUE(backend_->Capabilities().workspace_images);
  auto dir = backend_->WorkspaceImageDir();
  ASSERT_TRUE(dir) << dir.error().ToString();
  const std::string img = *dir + "/test.img";
  const std::string small = *dir + "/small.img";
  struct Remove {
    std::string a, b;
    ~Remove() {
      ::unlink(a.c_str());
      ::unlink(b.c_str());
    }
  } remove{img, small};

  auto copy = backend_->CopyWorkspaceImage(a_spec.id, img);
  ASSERT_TRUE(copy) << copy.error().ToString();
  EXPECT_TRUE(copy->method == "reflink" || copy->method == "sparse-copy") << copy->method;
  EXPECT_EQ(copy->image_bytes, a_spec.workspace_bytes);
  EXPECT_GT(copy->used_bytes, 0u);

  // A sandbox made from the image: another uid range, the same owners and modes inside.
  auto b_spec = Spec();
  b_spec.workspace_image = img;
  auto b = MustCreate(b_spec);
  ASSERT_TRUE(b);
  EXPECT_EQ(Out(*b, "cat /workspace/f; stat -c '%u:%g %a' /workspace/d /workspace"),
            "one\n1000:1000 700\n1000:1000 755\n");
  EXPECT_EQ(Out(*b, "echo two > /workspace/f; cat /workspace/f"), "two\n");
  EXPECT_EQ(Out(*a, "cat /workspace/f"), "one\n");

  // Nothing staged: nothing to swap.
  EXPECT_FALSE(backend_->HasStagedWorkspace(a_spec.id));
  auto none = backend_->SwapStagedWorkspace(a_spec.id);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);

  // An image of another size is refused before anything is staged.
  {
    int fd = ::open(small.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 8 << 20), 0);
    ::close(fd);
  }
  auto bad = backend_->StageWorkspace(a_spec.id, small);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(backend_->HasStagedWorkspace(a_spec.id));

  // Staged: the sandbox sees no change. Swapped: it sees the image, in the same sandbox.
  ASSERT_EQ(Out(*a, "cd /workspace && echo changed > f && touch new"), "");
  auto staged = backend_->StageWorkspace(a_spec.id, img);
  ASSERT_TRUE(staged) << staged.error().ToString();
  EXPECT_TRUE(backend_->HasStagedWorkspace(a_spec.id));
  EXPECT_EQ(Out(*a, "cat /workspace/f"), "changed\n");
  auto swapped = backend_->SwapStagedWorkspace(a_spec.id);
  ASSERT_TRUE(swapped) << swapped.error().ToString();
  EXPECT_TRUE(*swapped);
  EXPECT_FALSE(backend_->HasStagedWorkspace(a_spec.id));
  EXPECT_EQ(Out(*a, "cat /workspace/f; ls /workspace; echo w > /workspace/w && cat /workspace/w"),
            "one\nd\nf\nw\n");
  auto usage = a->Usage();  // the host's view follows the swap
  ASSERT_TRUE(usage);
  EXPECT_GT(usage->workspace_used_bytes, 0u);

  // A dropped stage leaves the workspace as it is.
  ASSERT_TRUE(backend_->StageWorkspace(a_spec.id, img));
  ASSERT_TRUE(backend_->DropStagedWorkspace(a_spec.id));
  EXPECT_FALSE(backend_->HasStagedWorkspace(a_spec.id));
  EXPECT_EQ(Out(*a, "cat /workspace/w"), "w\n");

  EXPECT_TRUE(backend_->Destroy(a_spec.id));
  EXPECT_TRUE(backend_->Destroy(b_spec.id));
  ::unlink(img.c_str());
  ::unlink(small.c_str());
  HostSnapshot after;
  for (int i = 0; i < 100; ++i) {
    if ((after = Snapshot()) == before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(after, before) << Describe(after);
}

// Empty workspaces are clones of one blank image per size (workspace_seed.h): each sandbox's is
// its own file system, fresh and writable by the sandbox user, and the cache stays bounded.
TEST_F(WorkspaceImageTest, EmptyWorkspacesAreClonesOfOneBlankImageEachTheirOwn) {
  auto a = MustCreate(Spec());
  auto b = MustCreate(Spec());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Out(*a, "echo mine > /workspace/f; ls -A /workspace; stat -c %U /workspace"),
            "f\nsandbox\n");
  EXPECT_EQ(Out(*b,
                "ls -A /workspace; stat -c %U /workspace; df -k /workspace | tail -1 | "
                "awk '{print ($2 > 50000 && $2 < 70000)}'"),
            "sandbox\n1\n");  // empty, and 64 MiB as the spec asked
  int blanks = 0;
  for (const auto& e : std::filesystem::directory_iterator(state_dir_ + "/.seeds")) {
    blanks += e.path().filename().string().rfind("blank-", 0) == 0;
  }
  EXPECT_EQ(blanks, 1);

  const std::string dir = state_dir_ + "/blank-cache-test";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  WorkspaceSeeds seeds(dir, 1000);
  for (int i = 0; i < WorkspaceSeeds::kMaxBlankImages + 2; ++i) {
    auto path = seeds.BlankFor((16ull + i) << 20);
    ASSERT_TRUE(path) << path.error().ToString();
    EXPECT_EQ(*seeds.BlankFor((16ull + i) << 20), *path);  // made once
  }
  int kept = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++kept;
    EXPECT_EQ(e.path().filename().string().rfind("blank-v1-1000-", 0), 0u) << e.path();
  }
  EXPECT_GE(kept, 1);
  EXPECT_LE(kept, WorkspaceSeeds::kMaxBlankImages);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asb::isolation::ns::testing
