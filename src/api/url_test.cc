#include "api/url.h"

#include <gtest/gtest.h>

namespace asb::api {
namespace {

TEST(UrlTest, SplitsAndDecodesTargets) {
  std::string path;
  std::map<std::string, std::string> q;
  SplitTarget("/v1/sandboxes/sb_1/files?path=src%2Fa%20b.py&mode=755&x", &path, &q);
  EXPECT_EQ(path, "/v1/sandboxes/sb_1/files");
  EXPECT_EQ(q["path"], "src/a b.py");
  EXPECT_EQ(q["mode"], "755");
  EXPECT_EQ(q.count("x"), 1u);
  SplitTarget("/a+b?q=a+b", &path, &q);
  EXPECT_EQ(path, "/a+b");
  EXPECT_EQ(q["q"], "a b");
  EXPECT_FALSE(PercentDecode("%2", false));
  EXPECT_FALSE(PercentDecode("%zz", false));
  EXPECT_EQ(PercentEncode("a b/é"), "a%20b/%C3%A9");
}

}  // namespace
}  // namespace asb::api
