#include "templates/context_copy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "templates/test_tar.h"
#include "templates/user_db.h"

namespace asb::templates {
namespace {

namespace fs = std::filesystem;

class ContextCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb-copy-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/ctx/tree/sub");
    fs::create_directories(dir_ + "/root/etc");
    std::ofstream(dir_ + "/ctx/a.txt") << "A";
    std::ofstream(dir_ + "/ctx/tree/sub/b.txt") << "B";
    fs::create_symlink("sub/b.txt", dir_ + "/ctx/tree/link");
    fs::permissions(dir_ + "/ctx/a.txt", fs::perms(0640));
    std::ofstream(dir_ + "/root/etc/passwd")
        << "root:x:0:0:root:/root:/bin/bash\nsandbox:x:1000:1000:sandbox:/workspace:/bin/bash\n";
    std::ofstream(dir_ + "/root/etc/group") << "root:x:0:\nsandbox:x:1000:\nstaff:x:50:\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<CopyStats> Copy(const std::string& src, const std::string& dest, bool add = false) {
    auto ctx = RootedDir::Open(dir_ + "/ctx");
    auto root = RootedDir::Open(dir_ + "/root");
    CopyRequest r;
    r.source = src;
    r.dest = dest;
    r.dest_is_dir = !dest.empty() && dest.back() == '/';
    r.unpack_archives = add;
    r.owner = {::geteuid(), ::getegid(), "/"};
    return CopyFromContext(*ctx, *root, r);
  }
  std::string Read(const std::string& rel) {
    std::ifstream in(dir_ + "/root/" + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
};

TEST_F(ContextCopyTest, FilesDirectoriesAndDestinations) {
  ASSERT_TRUE(Copy("a.txt", "/opt/"));
  EXPECT_EQ(Read("opt/a.txt"), "A");
  EXPECT_EQ(fs::status(dir_ + "/root/opt/a.txt").permissions(), fs::perms(0640));
  ASSERT_TRUE(Copy("a.txt", "/opt/renamed"));
  EXPECT_EQ(Read("opt/renamed"), "A");
  ASSERT_TRUE(Copy("a.txt", "/opt"));   // an existing directory receives it by name
  ASSERT_TRUE(Copy("tree", "/srv/t"));  // a directory copies its contents
  EXPECT_EQ(Read("srv/t/sub/b.txt"), "B");
  EXPECT_EQ(fs::read_symlink(dir_ + "/root/srv/t/link"), "sub/b.txt");
  auto missing = Copy("nope", "/x");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST_F(ContextCopyTest, AddUnpacksArchivesCopyDoesNot) {
  testing::WriteTar(dir_ + "/ctx/t.tar.gz", {{"x/y", testing::TarEntry::kFile, "Y"}},
                    testing::TarFilter::kGzip);
  ASSERT_TRUE(Copy("t.tar.gz", "/unpacked", /*add=*/true));
  EXPECT_EQ(Read("unpacked/x/y"), "Y");
  ASSERT_TRUE(Copy("t.tar.gz", "/copied/", /*add=*/false));
  EXPECT_TRUE(fs::is_regular_file(dir_ + "/root/copied/t.tar.gz"));
  ASSERT_TRUE(Copy("a.txt", "/plain/", /*add=*/true));  // not an archive: copied
  EXPECT_EQ(Read("plain/a.txt"), "A");
}

TEST_F(ContextCopyTest, SymlinksNeverLeadOutOfContextOrRoot) {
  const std::string host = dir_ + "/host";
  fs::create_directory(host);
  std::ofstream(host + "/secret") << "S";
  // The rootfs holds a link to a host directory: the copy lands inside the rootfs.
  fs::create_symlink(host, dir_ + "/root/evil");
  EXPECT_FALSE(Copy("a.txt", "/evil/"));  // the link's target does not exist in the rootfs
  fs::create_directories(dir_ + "/root" + host);
  ASSERT_TRUE(Copy("a.txt", "/evil/"));
  EXPECT_FALSE(fs::exists(host + "/a.txt"));
  EXPECT_EQ(Read(host.substr(1) + "/a.txt"), "A");
  // The context holds a link to a host file: it resolves inside the context (missing there).
  fs::create_symlink(host + "/secret", dir_ + "/ctx/leak");
  auto leak = Copy("leak", "/leaked");
  EXPECT_FALSE(leak);
  EXPECT_FALSE(fs::exists(dir_ + "/root/leaked"));
  auto up = Copy("../host/secret", "/up");
  EXPECT_FALSE(up);
}

TEST_F(ContextCopyTest, ResolveUser) {
  auto root = RootedDir::Open(dir_ + "/root");
  ASSERT_TRUE(root);
  auto u = ResolveUser(*root, "sandbox");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->uid, 1000u);
  EXPECT_EQ(u->gid, 1000u);
  EXPECT_EQ(u->home, "/workspace");
  auto g = ResolveUser(*root, "sandbox:staff");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->gid, 50u);
  auto n = ResolveUser(*root, "1234:5");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->uid, 1234u);
  EXPECT_EQ(n->gid, 5u);
  EXPECT_EQ(ResolveUser(*root, "0")->gid, 0u);
  EXPECT_TRUE(ResolveUser(*root, "65535"));
  EXPECT_FALSE(ResolveUser(*root, "65536"));
  EXPECT_FALSE(ResolveUser(*root, "nobody-here"));
  EXPECT_FALSE(ResolveUser(*root, "sandbox:nogroup"));
}

}  // namespace
}  // namespace asb::templates
