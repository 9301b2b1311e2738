#include "common/ids.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace asb {
namespace {

TEST(IdsTest, NewIdHasPrefixAndSixteenHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewId("sb_");
    EXPECT_TRUE(std::regex_match(id, std::regex("^sb_[0-9a-f]{16}$"))) << id;
    EXPECT_TRUE(IsValidId(id, "sb_"));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(IdsTest, IsValidIdRejectsHostileInput) {
  EXPECT_FALSE(IsValidId("sb_../../etc/pass", "sb_"));
  EXPECT_FALSE(IsValidId("sb_0123456789abcdeF", "sb_"));
  EXPECT_FALSE(IsValidId("sb_0123456789abcde", "sb_"));
  EXPECT_FALSE(IsValidId("snap_0123456789abcdef", "sb_"));
  EXPECT_TRUE(IsValidId("snap_0123456789abcdef", "snap_"));
}

}  // namespace
}  // namespace asb
