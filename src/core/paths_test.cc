#include "core/paths.h"

#include <gtest/gtest.h>

namespace asb::core {
namespace {

struct PathCase {
  std::string in;
  std::string want;  // "" = must be rejected
};

TEST(PathsTest, NormalizeWorkspacePathTable) {
  const PathCase cases[] = {
      {"", "/workspace"},
      {".", "/workspace"},
      {"src/app.py", "/workspace/src/app.py"},
      {"./src//app.py", "/workspace/src/app.py"},
      {"a/../b", "/workspace/b"},
      {"a/b/../../c", "/workspace/c"},
      {"/workspace", "/workspace"},
      {"/workspace/", "/workspace"},
      {"//workspace///a/./b/", "/workspace/a/b"},
      {"/workspace/a/..", "/workspace"},
      {".hidden", "/workspace/.hidden"},
      {"...", "/workspace/..."},
      {"a..b", "/workspace/a..b"},
      // Rejected (F4):
      {"/etc/x", ""},
      {"/etc/passwd", ""},
      {"../etc/passwd", ""},
      {"..", ""},
      {"a/../../x", ""},
      {"/workspace/..", ""},
      {"/workspace/../workspace/a", ""},  // leaves /workspace on the way
      {"/workspacex/a", ""},
      {"/workspacex", ""},
      {"/", ""},
      {"/work", ""},
      {"/./workspace", ""},
      {std::string("a\0b", 3), ""},
  };
  for (const auto& c : cases) {
    auto got = NormalizeWorkspacePath(c.in);
    if (c.want.empty()) {
      ASSERT_FALSE(got) << "'" << c.in << "' should be rejected, got " << *got;
      EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
    } else {
      ASSERT_TRUE(got) << "'" << c.in << "': " << got.error().ToString();
      EXPECT_EQ(*got, c.want) << "input '" << c.in << "'";
    }
  }
  EXPECT_FALSE(NormalizeWorkspacePath(std::string(5000, 'a')));
}

TEST(PathsTest, NormalizeWorkdir) {
  EXPECT_EQ(*NormalizeWorkdir(""), "/workspace");
  EXPECT_EQ(*NormalizeWorkdir("src"), "/workspace/src");
  EXPECT_EQ(*NormalizeWorkdir("/tmp"), "/tmp");
  EXPECT_EQ(*NormalizeWorkdir("/tmp/../usr//lib/"), "/usr/lib");
  EXPECT_EQ(*NormalizeWorkdir("/"), "/");
  EXPECT_FALSE(NormalizeWorkdir("/.."));
  EXPECT_FALSE(NormalizeWorkdir("../x"));
  EXPECT_FALSE(NormalizeWorkdir(std::string("/tmp\0x", 6)));
}

TEST(PathsTest, NormalizeFilePathTakesAbsolutePathsAnywhere) {
  auto in = [](std::string_view p) { return NormalizeFilePath(p)->in_workspace; };
  EXPECT_EQ(NormalizeFilePath("")->path, "/workspace");
  EXPECT_EQ(NormalizeFilePath("src/a.py")->path, "/workspace/src/a.py");
  EXPECT_EQ(NormalizeFilePath("/etc/os-release")->path, "/etc/os-release");
  EXPECT_EQ(NormalizeFilePath("/tmp//a/../b/")->path, "/tmp/b");
  EXPECT_EQ(NormalizeFilePath("/workspace/..")->path, "/");
  EXPECT_TRUE(in("") && in("a") && in("/workspace") && in("/workspace/a/b"));
  EXPECT_TRUE(in("/tmp/../workspace/x"));
  EXPECT_FALSE(in("/workspacex/a") || in("/tmp") || in("/") || in("/workspace/../etc"));
  // Relative paths stay in /workspace; nothing climbs above "/"; no NUL.
  for (std::string bad :
       {std::string("../etc/passwd"), std::string("a/../../x"), std::string("/.."),
        std::string("/tmp/../../x"), std::string("/tmp\0x", 6), std::string(5000, 'a')}) {
    auto r = NormalizeFilePath(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(PathsTest, ParseFileMode) {
  EXPECT_EQ(*ParseFileMode("755"), 0755u);
  EXPECT_EQ(*ParseFileMode("0644"), 0644u);
  EXPECT_EQ(*ParseFileMode("0o600"), 0600u);
  EXPECT_EQ(*ParseFileMode("0"), 0u);
  EXPECT_EQ(*ParseFileMode("777"), 0777u);
  for (const char* bad : {"999", "", "-1", "1000", "01000", "rwx", "7 5 5", "0o", "8",
                          "100000000000", "0x1ff", "+755"}) {
    auto got = ParseFileMode(bad);
    ASSERT_FALSE(got) << "'" << bad << "' accepted as " << *got;
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_TRUE(CheckFileMode(0777));
  EXPECT_FALSE(CheckFileMode(01000));
}

}  // namespace
}  // namespace asb::core
