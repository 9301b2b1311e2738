// ScanArchive over archives written here with libarchive: what an uploaded snapshot archive
// (POST /v1/snapshots) must not contain is refused at upload, naming the member, instead of
// being stored and failing at fork or rollback.
#include "core/snapshot_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace asb::core {
namespace {

struct Member {
  std::string name;
  unsigned type = AE_IFREG;
  std::string data;  // file content, or the symlink / hard-link target
  bool hardlink = false;
};

class ScanArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb-scan-archive-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { unlink(path_.c_str()); }

  // Writes `members` as a plain (uncompressed) pax tar to path_.
  void Write(const std::vector<Member>& members) {
    struct archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    ASSERT_EQ(archive_write_open_filename(a, path_.c_str()), ARCHIVE_OK);
    for (const auto& m : members) {
      struct archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, m.name.c_str());
      archive_entry_set_filetype(e, m.type);
      archive_entry_set_perm(e, 0644);
      if (m.hardlink) {
        archive_entry_set_hardlink(e, m.data.c_str());
      } else if (m.type == AE_IFLNK) {
        archive_entry_set_symlink(e, m.data.c_str());
      } else if (m.type == AE_IFREG) {
        archive_entry_set_size(e, static_cast<la_int64_t>(m.data.size()));
      }
      ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
      if (m.type == AE_IFREG && !m.hardlink && !m.data.empty()) {
        archive_write_data(a, m.data.data(), m.data.size());
      }
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
  }

  std::string path_;
};

TEST_F(ScanArchiveTest, OrdinaryTreeWithSymlinksPasses) {
  Write({{"d", AE_IFDIR, ""},
         {"d/f", AE_IFREG, "hello"},
         {"l", AE_IFLNK, "d"},
         {"abs", AE_IFLNK, "/etc/passwd"},
         {"h", AE_IFREG, "d/f", true},
         {"d/l2", AE_IFLNK, "../l"}});
  auto facts = ScanArchive(path_, 0);
  ASSERT_TRUE(facts) << facts.error().ToString();
  EXPECT_EQ(facts->entries, 6u);
  EXPECT_EQ(facts->content_bytes, 5u);
}

TEST_F(ScanArchiveTest, MembersThroughSymlinksAndFifosAreRefused) {
  struct Case {
    std::vector<Member> members;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{{"l", AE_IFLNK, "/tmp"}, {"l/evil", AE_IFREG, "x"}}, "l/evil: path goes through symlink l"},
      {{{"./l", AE_IFLNK, "/tmp"}, {"l//x/evil", AE_IFREG, "x"}}, "through symlink l"},
      {{{"d", AE_IFDIR, ""}, {"d/l", AE_IFLNK, "/"}, {"d/./l/etc/evil", AE_IFDIR, ""}},
       "through symlink d/l"},
      {{{"l", AE_IFLNK, "/etc"}, {"h", AE_IFREG, "l/shadow", true}},
       "h: hard link goes through symlink l"},
      {{{"p", AE_IFIFO, ""}}, "p: FIFO"},
  };
  for (const auto& c : cases) {
    Write(c.members);
    auto facts = ScanArchive(path_, 0);
    ASSERT_FALSE(facts) << c.needle;
    EXPECT_EQ(facts.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(facts.error().message().find(c.needle), std::string::npos) << facts.error().message();
  }
}

}  // namespace
}  // namespace asb::core
