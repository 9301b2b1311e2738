#include "api/text.h"

#include <gtest/gtest.h>

namespace asb::api {
namespace {

TEST(TextTest, SanitizeReplacesInvalidBytesOnly) {
  EXPECT_EQ(SanitizeUtf8("héllo €"), "héllo €");
  EXPECT_EQ(SanitizeUtf8(std::string("a\xff"
                                     "b",
                                     3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8(std::string("\xC0\xAF", 2)), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(SanitizeUtf8(std::string("\xED\xA0\x80", 3)).find("\xED"), std::string::npos);
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(TextTest, StreamKeepsSplitCharactersWhole) {
  Utf8Stream s;
  std::string euro = "€";  // E2 82 AC
  EXPECT_EQ(s.Feed("x" + euro.substr(0, 1)), "x");
  EXPECT_EQ(s.Feed(euro.substr(1, 1)), "");
  EXPECT_EQ(s.Feed(euro.substr(2) + "y"), euro + "y");
  EXPECT_EQ(s.Feed(euro.substr(0, 2)), "");
  EXPECT_EQ(s.Flush(), "\xEF\xBF\xBD");
}

TEST(TextTest, Base64AndTimes) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(FormatMode(0755), "0755");
}

TEST(AsciiLowerTest, LowersAsciiLettersOnly) {
  EXPECT_EQ(AsciiLower("Content-Type: X-Sb_1.Preview.TEST:80"),
            "content-type: x-sb_1.preview.test:80");
  EXPECT_EQ(AsciiLower("\xc3\x89@[`{"), "\xc3\x89@[`{");
  EXPECT_EQ(AsciiLower(""), "");
}

}  // namespace
}  // namespace asb::api
