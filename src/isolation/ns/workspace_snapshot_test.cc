// CloneImage and QuiesceWorkspace on this machine's ext4 (sparse copy) and on an XFS loop
// file system made here (reflink). Root-only parts skip without root or mkfs.xfs.
#include "isolation/ns/workspace_snapshot.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace asb::isolation::ns {
namespace {

namespace fs = std::filesystem;

std::string TempDir() {
  char tmpl[] = "/var/tmp/asb-wssnap-XXXXXX";
  char* d = mkdtemp(tmpl);
  return d ? d : "";
}

int Sh(const std::string& cmd) { return std::system(cmd.c_str()); }

/// A sparse file of `size` bytes with `mib` MiB of pattern data at the start and a marker at
/// the middle.
void MakeSparse(const std::string& path, off_t size, int mib) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, size), 0);
  std::string block(1 << 20, '\0');
  for (int i = 0; i < mib; ++i) {
    for (size_t j = 0; j < block.size(); j += 4096) block[j] = static_cast<char>(i + j / 4096);
    ASSERT_EQ(::pwrite(fd, block.data(), block.size(), static_cast<off_t>(i) << 20),
              static_cast<ssize_t>(block.size()));
  }
  ASSERT_EQ(::pwrite(fd, "middle", 6, size / 2), 6);
  ::close(fd);
}

bool SameContent(const std::string& a, const std::string& b) {
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  return std::equal(std::istreambuf_iterator<char>(fa), std::istreambuf_iterator<char>(),
                    std::istreambuf_iterator<char>(fb), std::istreambuf_iterator<char>());
}

int64_t AllocatedBytes(const std::string& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return static_cast<int64_t>(st.st_blocks) * 512;
}

double Ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(WorkspaceSnapshotTest, SparseCopyKeepsContentAndHoles) {
  std::string dir = TempDir();
  ASSERT_FALSE(dir.empty());
  const std::string src = dir + "/src.img", dst = dir + "/dst.img";
  MakeSparse(src, 256ll << 20, 4);
  auto m = CloneImage(src, dst, /*force_copy=*/true);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(*m, CloneMethod::kSparseCopy);
  EXPECT_EQ(fs::file_size(dst), fs::file_size(src));
  EXPECT_TRUE(SameContent(src, dst));
  EXPECT_LT(AllocatedBytes(dst), 8ll << 20);  // 4 MiB + one block, not 256 MiB
  // The destination must be new.
  EXPECT_FALSE(CloneImage(src, dst).has_value());
  // An unreadable source leaves no destination behind.
  EXPECT_FALSE(CloneImage(dir + "/missing", dir + "/x").has_value());
  EXPECT_FALSE(fs::exists(dir + "/x"));
  fs::remove_all(dir);
}

TEST(WorkspaceSnapshotTest, Ext4DataDirFallsBackToSparseCopy) {
  std::string dir = TempDir();
  const std::string src = dir + "/src.img", dst = dir + "/dst.img";
  MakeSparse(src, 64ll << 20, 1);
  auto m = CloneImage(src, dst);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  std::printf("clone on /var/tmp: %s\n", std::string(CloneMethodName(*m)).c_str());
  EXPECT_TRUE(SameContent(src, dst));
  fs::remove_all(dir);
}

// Mounted ext4 image: write, quiesce, clone, and the clone mounts with the file in it. On
// XFS with reflink=1 the clone is a reflink and O(1): a 1 GiB image full of data in <= 50 ms.
TEST(WorkspaceSnapshotTest, QuiesceThenReflinkOnXfsIsConsistentAndFast) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (loop mounts)";
  if (Sh("command -v mkfs.xfs >/dev/null 2>&1") != 0) GTEST_SKIP() << "mkfs.xfs missing";
  std::string dir = TempDir();
  const std::string xfs = dir + "/xfs.img", mnt = dir + "/xfs", ws = dir + "/xfs/ws.img",
                    wsm = dir + "/ws", cm = dir + "/clone";
  fs::create_directories(mnt);
  fs::create_directories(wsm);
  fs::create_directories(cm);
  struct Cleanup {
    std::string dir, mnt, wsm, cm;
    ~Cleanup() {
      // The kernel releases a loop device after its file system's umount asynchronously, so the
      // XFS holding ws.img can stay busy for a moment after ws is unmounted: retry (a CI run
      // under load saw "cannot remove all: Device or resource busy" here).
      for (const std::string& m : {cm, wsm, mnt}) {
        for (int i = 0; i < 50 && Sh("mountpoint -q " + m) == 0; ++i) {
          if (Sh("umount " + m + " 2>/dev/null") == 0) break;
          ::usleep(100'000);
        }
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
      if (ec) std::fprintf(stderr, "cleanup of %s: %s\n", dir.c_str(), ec.message().c_str());
    }
  } cleanup{dir, mnt, wsm, cm};
  ASSERT_EQ(Sh("truncate -s 4G " + xfs + " && mkfs.xfs -q -m reflink=1 " + xfs), 0);
  ASSERT_EQ(Sh("mount -o loop " + xfs + " " + mnt), 0);
  ASSERT_EQ(Sh("truncate -s 2G " + ws + " && mkfs.ext4 -q -m 0 -E lazy_itable_init=1," +
               "lazy_journal_init=1,nodiscard " + ws + " && mount -o loop " + ws + " " + wsm),
            0);
  ASSERT_EQ(Sh("head -c 1073741824 /dev/zero | tr '\\0' 'x' > " + wsm + "/big && echo hi > " + wsm +
               "/small"),
            0);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(QuiesceWorkspace(wsm).has_value());
  double quiesce_ms = Ms(t0);
  t0 = std::chrono::steady_clock::now();
  auto m = CloneImage(ws, mnt + "/clone.img");
  double clone_ms = Ms(t0);
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(*m, CloneMethod::kReflink);
  std::printf("xfs: quiesce after 1 GiB written %.1f ms, reflink of the 2 GiB image %.1f ms\n",
              quiesce_ms, clone_ms);
  EXPECT_LE(clone_ms, 50.0);
  // The source keeps changing; the clone shows the state at the quiesce.
  ASSERT_EQ(Sh("echo changed > " + wsm + "/small"), 0);
  ASSERT_EQ(Sh("mount -o loop,ro,noload " + mnt + "/clone.img " + cm), 0);
  std::ifstream f(cm + "/small");
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "hi");
  EXPECT_EQ(fs::file_size(cm + "/big"), 1ull << 30);
  // The same copy by bytes, for comparison.
  t0 = std::chrono::steady_clock::now();
  auto c = CloneImage(ws, dir + "/copy.img", /*force_copy=*/true);
  ASSERT_TRUE(c.has_value());
  std::printf("ext4 /var/tmp: sparse copy of the same image %.1f ms\n", Ms(t0));
}

}  // namespace
}  // namespace asb::isolation::ns
