#include "core/data_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace asb::core {
namespace {

unsigned ModeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 07777;
}

TEST(DataDirModesTest, LooseFilesAreTightenedAndReportedOthersLeftAlone) {
  char tmpl[] = "/tmp/asb_data_dir_test.XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ::chmod(dir.c_str(), 0755);
  for (const char* f : {"agent-sandbox.db", "agent-sandbox.db-wal", "e2b-token.key", "tight"}) {
    std::ofstream(dir + "/" + f) << "x";
  }
  ::chmod((dir + "/agent-sandbox.db").c_str(), 0644);
  ::chmod((dir + "/agent-sandbox.db-wal").c_str(), 0664);
  ::chmod((dir + "/e2b-token.key").c_str(), 0600);
  ::chmod((dir + "/tight").c_str(), 0400);
  std::filesystem::create_directory(dir + "/templates");
  ::chmod((dir + "/templates").c_str(), 0755);
  // A symlink at the top is never followed to what it names.
  std::ofstream(dir + "/../asb_data_dir_outside") << "x";
  const std::string outside =
      std::filesystem::canonical(dir + "/..").string() + "/asb_data_dir_outside";
  ::chmod(outside.c_str(), 0644);
  std::filesystem::create_symlink(outside, dir + "/link");

  auto changed = TightenDataDirModes(dir);
  ASSERT_TRUE(changed) << changed.error().ToString();
  EXPECT_EQ(ModeOf(dir), 0711u);
  EXPECT_EQ(ModeOf(dir + "/agent-sandbox.db"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/agent-sandbox.db-wal"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/e2b-token.key"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/tight"), 0400u);
  EXPECT_EQ(ModeOf(dir + "/templates"), 0755u);  // sandboxes read their rootfs below it
  EXPECT_EQ(ModeOf(outside), 0644u);
  ASSERT_EQ(changed->size(), 3u);  // the dir and the two loose files, each with its old mode
  EXPECT_EQ((*changed)[0].old_mode, 0755u);
  for (size_t i = 1; i < changed->size(); ++i) {
    EXPECT_NE((*changed)[i].old_mode & 0077, 0u) << (*changed)[i].path;
  }
  // Once tight, nothing more to do.
  EXPECT_TRUE(TightenDataDirModes(dir)->empty());
  std::filesystem::remove_all(dir);
  std::filesystem::remove(outside);
  EXPECT_EQ(TightenDataDirModes(dir).error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace asb::core
