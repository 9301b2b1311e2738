#include "templates/layer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "templates/test_tar.h"

namespace asb::templates {
namespace {

namespace fs = std::filesystem;
using testing::TarEntry;
using testing::TarFilter;
using testing::WriteTar;

class LayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb-layer-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/root";
    fs::create_directory(root_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<LayerStats> Apply(const std::vector<TarEntry>& entries, LayerOptions opts = {},
                           TarFilter filter = TarFilter::kNone) {
    const std::string tar = dir_ + "/layer" + std::to_string(n_++) + ".tar";
    WriteTar(tar, entries, filter);
    UniqueFd fd(::open(tar.c_str(), O_RDONLY | O_CLOEXEC));
    auto root = RootedDir::Open(root_);
    if (!root) return Fail(root.error());
    return ApplyArchive(fd.get(), *root, opts);
  }

  std::string Read(const std::string& rel) {
    std::ifstream in(root_ + "/" + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool Exists(const std::string& rel) {
    struct stat st;
    return ::lstat((root_ + "/" + rel).c_str(), &st) == 0;
  }

  std::string dir_, root_;
  int n_ = 0;
};

TEST_F(LayerTest, UnpacksFilesDirsLinksAndModes) {
  auto st = Apply({{"./usr/", TarEntry::kDir, "", 0755},
                   {"./usr/bin/tool", TarEntry::kFile, "#!/bin/sh\necho hi\n", 04755},
                   {"./usr/bin/alias", TarEntry::kSymlink, "tool"},
                   {"./usr/bin/hard", TarEntry::kHardlink, "./usr/bin/tool"},
                   {"etc/abs", TarEntry::kSymlink, "/usr/bin/tool"},
                   {"run/fifo", TarEntry::kFifo, "", 0600}},
                  {}, TarFilter::kGzip);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->entries, 6u);
  EXPECT_EQ(Read("usr/bin/tool"), "#!/bin/sh\necho hi\n");
  struct stat s;
  ASSERT_EQ(::stat((root_ + "/usr/bin/tool").c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 07777, 04755u);
  EXPECT_EQ(s.st_nlink, 2u);
  EXPECT_EQ(fs::read_symlink(root_ + "/usr/bin/alias"), "tool");
  EXPECT_EQ(fs::read_symlink(root_ + "/etc/abs"), "/usr/bin/tool");
  EXPECT_TRUE(fs::is_fifo(root_ + "/run/fifo"));
}

TEST_F(LayerTest, ZstdAndReplacingEntries) {
  ASSERT_TRUE(Apply({{"a", TarEntry::kDir}, {"a/f", TarEntry::kFile, "one"}}));
  // A later layer replaces a directory by a file and a file by a symlink.
  auto st = Apply({{"a", TarEntry::kFile, "now a file"}, {"b", TarEntry::kSymlink, "a"}}, {},
                  TarFilter::kZstd);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(Read("a"), "now a file");
  EXPECT_TRUE(fs::is_symlink(root_ + "/b"));
}

TEST_F(LayerTest, WhiteoutsAndOpaqueDirectories) {
  LayerOptions layer;
  layer.whiteouts = true;
  ASSERT_TRUE(Apply({{"a/x", TarEntry::kFile, "x"},
                     {"a/y", TarEntry::kFile, "y"},
                     {"b/old1", TarEntry::kFile, "1"},
                     {"b/sub/old2", TarEntry::kFile, "2"},
                     {"c/keep", TarEntry::kFile, "k"}},
                    layer));
  auto st = Apply({{"a/.wh.x", TarEntry::kFile},
                   {"b/new", TarEntry::kFile, "n"},  // before the marker: kept
                   {"b/.wh..wh..opq", TarEntry::kFile},
                   {"b/newer", TarEntry::kFile, "m"},
                   {".wh.c", TarEntry::kFile},
                   {"nowhere/.wh.ghost", TarEntry::kFile}},
                  layer);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(st->whiteouts, 4u);
  EXPECT_FALSE(Exists("a/x"));
  EXPECT_TRUE(Exists("a/y"));
  EXPECT_FALSE(Exists("b/old1"));
  EXPECT_FALSE(Exists("b/sub"));
  EXPECT_EQ(Read("b/new"), "n");
  EXPECT_EQ(Read("b/newer"), "m");
  EXPECT_FALSE(Exists("c"));
  EXPECT_FALSE(Exists("a/.wh.x"));
  // Without whiteout processing (ADD), a .wh. file is just a file.
  ASSERT_TRUE(Apply({{"d/.wh.e", TarEntry::kFile, "plain"}}));
  EXPECT_EQ(Read("d/.wh.e"), "plain");
}

TEST_F(LayerTest, RefusesTraversalAbsoluteLinksOutAndDevices) {
  const std::vector<std::pair<TarEntry, std::string>> bad = {
      {{"../evil", TarEntry::kFile, "x"}, "'..' are not allowed"},
      {{"a/../../evil", TarEntry::kFile, "x"}, "'..' are not allowed"},
      {{"/etc/evil", TarEntry::kFile, "x"}, "absolute"},
      {{"link", TarEntry::kHardlink, "/etc/passwd"}, "leads out of the tree"},
      {{"link", TarEntry::kHardlink, "../outside"}, "leads out of the tree"},
      {{"d/link", TarEntry::kSymlink, "../../outside"}, "leads out of the tree"},
      {{"dev/null", TarEntry::kCharDevice}, "device nodes"},
  };
  for (const auto& [entry, why] : bad) {
    auto st = Apply({entry});
    ASSERT_FALSE(st) << entry.name;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.error().message().find(why), std::string::npos) << st.error().message();
  }
  EXPECT_FALSE(fs::exists(dir_ + "/evil"));
  EXPECT_FALSE(fs::exists(dir_ + "/outside"));
}

TEST_F(LayerTest, SymlinksInTheTreeNeverLeadOutside) {
  // A planted absolute symlink to a host directory, then an entry written through it: the write
  // lands inside the root (the link is resolved as if the root were /).
  const std::string host = dir_ + "/host";
  fs::create_directory(host);
  auto first = Apply({{"esc", TarEntry::kSymlink, host}, {"up", TarEntry::kSymlink, "/"}});
  ASSERT_TRUE(first) << first.error().message();
  // The link's target does not exist inside the root: the write fails, the host is untouched.
  EXPECT_FALSE(Apply({{"esc/pwned", TarEntry::kFile, "x"}}));
  EXPECT_FALSE(fs::exists(host + "/pwned"));
  auto st = Apply({{host.substr(1), TarEntry::kDir},
                   {"esc/pwned", TarEntry::kFile, "x"},
                   {"up/also", TarEntry::kFile, "y"}});
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_FALSE(fs::exists(host + "/pwned"));
  EXPECT_EQ(Read(host.substr(1) + "/pwned"), "x");  // root_/<host path>/pwned
  EXPECT_EQ(Read("also"), "y");
}

TEST_F(LayerTest, BaseDirectoryAndSizeLimit) {
  LayerOptions add;
  add.base = "opt/pkg";
  ASSERT_TRUE(Apply({{"bin/x", TarEntry::kFile, "x"}, {"l", TarEntry::kHardlink, "bin/x"}}, add));
  EXPECT_EQ(Read("opt/pkg/bin/x"), "x");
  EXPECT_EQ(Read("opt/pkg/l"), "x");
  LayerOptions limited;
  limited.max_bytes = 10;
  EXPECT_TRUE(Apply({{"ten", TarEntry::kFile, std::string(10, 'a')}}, limited));
  auto over = Apply({{"eleven", TarEntry::kFile, std::string(11, 'a')}}, limited);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kTooLarge);
}

TEST_F(LayerTest, NotAnArchive) {
  const std::string junk = dir_ + "/junk";
  std::ofstream(junk) << "this is not a tar archive at all, not even close";
  UniqueFd fd(::open(junk.c_str(), O_RDONLY | O_CLOEXEC));
  auto root = RootedDir::Open(root_);
  ASSERT_TRUE(root);
  auto st = ApplyArchive(fd.get(), *root, {});
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace asb::templates
