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

// Seed B's exec "command" is a string or an argv list (ADR 0007).
TEST(JsonBodyTest, StringOrStringArray) {
  auto b = JsonBody::Parse(
      R"({"s":"echo hi","l":["a","b c"],"e":[],"n":null,"bad":["a",1],"obj":{},"num":2})");
  ASSERT_TRUE(b);
  auto s = b->StringOrStringArray("s");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->string, std::optional<std::string>("echo hi"));
  EXPECT_FALSE(s->list);
  auto l = b->StringOrStringArray("l");
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->string);
  EXPECT_EQ(l->list, std::optional<std::vector<std::string>>({"a", "b c"}));
  auto e = b->StringOrStringArray("e");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->list, std::optional<std::vector<std::string>>(std::vector<std::string>{}));
  for (const char* absent : {"n", "missing"}) {
    auto a = b->StringOrStringArray(absent);
    ASSERT_TRUE(a);
    EXPECT_FALSE(a->string || a->list) << absent;
  }
  for (const char* wrong : {"bad", "obj", "num"}) {
    auto w = b->StringOrStringArray(wrong);
    ASSERT_FALSE(w) << wrong;
    EXPECT_EQ(w.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(w.error().message(),
              std::string(wrong) + ": must be a string or an array of strings");
  }
  EXPECT_TRUE(b->Finish());  // every field was asked for
}

TEST(JsonBodyTest, MergeAliasTakesEitherOrBothWhenEqual) {
  using S = std::optional<std::string>;
  EXPECT_EQ(*MergeAlias("template", S("go"), "image", S()), S("go"));
  EXPECT_EQ(*MergeAlias("template", S(), "image", S("go")), S("go"));
  EXPECT_EQ(*MergeAlias("template", S("go"), "image", S("go")), S("go"));
  EXPECT_EQ(*MergeAlias("template", S(), "image", S()), S());
  auto both = MergeAlias("template", S("base"), "image", S("go"));
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(both.error().message(),
            "template and image: both given with different values (they are aliases)");
  using D = std::optional<double>;
  EXPECT_FALSE(MergeAlias("timeout", D(1), "timeout_seconds", D(2)));
  EXPECT_EQ(*MergeAlias("timeout", D(1.5), "timeout_seconds", D(1.5)), D(1.5));
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
