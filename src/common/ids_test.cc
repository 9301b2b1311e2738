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

namespace asb {
namespace {

TEST(HexAndHashTest, HexPadsAndFnvIsTheStandardOne) {
  EXPECT_EQ(HexU64(0xab), "00000000000000ab");
  EXPECT_EQ(HexU64(0xab, 1), "ab");
  EXPECT_EQ(HexU64(0, 8), "00000000");
  // FNV-1a 64 test vectors (the offset basis for "", and "a").
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace asb
