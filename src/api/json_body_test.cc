#include "api/json_body.h"

#include <gtest/gtest.h>

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
