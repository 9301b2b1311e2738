#include <gtest/gtest.h>

#include "core/sandbox_record.h"

namespace asb::core {
namespace {

TEST(SandboxSpecTest, RequestHostMasksTakeHostNamesAndThePortVariable) {
  for (const char* ok : {"", "localhost:${PORT}", "app.example.test", "${PORT}-x.test:${PORT}",
                         "[::1]:8080", "a_b-c.d"}) {
    EXPECT_TRUE(ValidRequestHostMask(ok)) << ok;
  }
  // Header injection, spaces, a path, a lone '$', past 253 bytes: refused by name.
  for (std::string bad :
       {std::string("evil\r\nX-Admin: 1"), std::string("a b"), std::string("host/path"),
        std::string("${HOST}"), std::string(254, 'a')}) {
    auto st = ValidRequestHostMask(bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(st.error().message().rfind("mask_request_host: ", 0), 0u) << st.error().message();
  }
  EXPECT_EQ(RequestHostFor("", 8000), "127.0.0.1:8000");
  EXPECT_EQ(RequestHostFor("localhost:${PORT}", 3000), "localhost:3000");
  EXPECT_EQ(RequestHostFor("${PORT}-app.test", 80), "80-app.test");
}

TEST(SandboxSpecTest, PublicTrafficAndTheHostMaskSurviveTheRecord) {
  SandboxInfo a;
  a.allow_public_traffic = true;
  a.mask_request_host = "localhost:${PORT}";
  SandboxInfo b;
  DecodeSpecJson(EncodeSpecJson(a), &b);
  EXPECT_TRUE(b.allow_public_traffic);
  EXPECT_EQ(b.mask_request_host, "localhost:${PORT}");
  SandboxInfo c;
  DecodeSpecJson(EncodeSpecJson(SandboxInfo{}), &c);
  EXPECT_FALSE(c.allow_public_traffic);
  EXPECT_EQ(c.mask_request_host, "");
}

}  // namespace
}  // namespace asb::core
