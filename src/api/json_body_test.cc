#include "api/json_body.h"

#include <gtest/gtest.h>

#include <limits>

namespace asb::api {
namespace {

TEST(JsonBodyTest, ReadsTypedFieldsAndRejectsUnknownOnes) {
  auto b = JsonBody::Parse(R"({"cpus":0.5,"memory_mb":256,"env":{"A":"1"},"x":1})");
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ(*b->Number("cpus").value(), 0.5);
  EXPECT_EQ(*b->Integer("memory_mb", 0, 1000).value(), 256);
  EXPECT_EQ(b->StringMap("env").value()->at("A"), "1");
  EXPECT_FALSE(b->String("absent").value().has_value());
  auto fin = b->Finish();
  ASSERT_FALSE(fin);
  EXPECT_EQ(fin.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fin.error().message(), "unknown field: x");
}

TEST(JsonBodyTest, WrongTypesNameTheField) {
  auto b = JsonBody::Parse(R"({"memory_mb":"big","argv":[1],"env":{"A":2},"n":2.5})");
  ASSERT_TRUE(b);
  auto m = b->Integer("memory_mb", 0, 10);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("memory_mb"), std::string::npos);
  EXPECT_FALSE(b->StringArray("argv"));
  auto e = b->StringMap("env");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("env.A"), std::string::npos);
  EXPECT_FALSE(b->Integer("n", 0, 10));
}

// 2^63 as a double equals double(INT64_MAX) (it rounds up), so a range check in doubles let it
// through to an undefined conversion (UBSan: float-cast-overflow). Reached by POST /exec with
// {"max_output_bytes": 9223372036854775808.0}; the input is in fuzz/corpus/fuzz_api_bodies/.
TEST(JsonBodyTest, IntegerRangeIsExactAtTheEdgesOfInt64) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  auto b = JsonBody::Parse(R"({"a":9223372036854775808.0,"b":9223372036854774784.0,)"
                           R"("c":-9223372036854775808.0,"d":-9223372036854777856.0,)"
                           R"("e":9223372036854775807,"f":1e300})");
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->Integer("a", 1, kMax));  // 2^63: one past the largest int64
  EXPECT_EQ(*b->Integer("b", 1, kMax).value(), 9223372036854774784);  // the largest double below
  EXPECT_EQ(*b->Integer("c", kMin, 0).value(), kMin);                 // -2^63 is exact
  EXPECT_FALSE(b->Integer("d", kMin, 0));                             // below it
  EXPECT_EQ(*b->Integer("e", 1, kMax).value(), kMax);
  EXPECT_FALSE(b->Integer("f", 1, kMax));
  EXPECT_FALSE(b->Integer("b", 1, 1000));  // and an ordinary max still applies
}

TEST(JsonBodyTest, EmptyBodyIsAnEmptyObjectAndGarbageIsRejected) {
  EXPECT_TRUE(JsonBody::Parse(""));
  EXPECT_TRUE(JsonBody::Parse("  \n"));
  auto bad = JsonBody::Parse("{not json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(JsonBody::Parse("[1,2]"));
  EXPECT_FALSE(JsonBody::Parse("\"x\""));
}

}  // namespace
}  // namespace asb::api
