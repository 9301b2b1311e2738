// The header rules of the Streamable HTTP transport (http_transport.h): the Origin check
// against DNS rebinding and Accept negotiation. The transport end to end is tested by
// tests/mcp/http.test.mjs with the official SDK client against the real server.
#include "mcp/http_transport.h"

#include <gtest/gtest.h>

namespace asb::mcp {
namespace {

TEST(OriginAllowed, NoOriginAndLoopbackOriginsPass) {
  EXPECT_TRUE(OriginAllowed("", {}));
  EXPECT_TRUE(OriginAllowed("http://localhost", {}));
  EXPECT_TRUE(OriginAllowed("http://localhost:3000", {}));
  EXPECT_TRUE(OriginAllowed("https://127.0.0.1:8443", {}));
  EXPECT_TRUE(OriginAllowed("http://[::1]:8080", {}));
  EXPECT_TRUE(OriginAllowed("HTTP://LOCALHOST:1", {}));
}

TEST(OriginAllowed, OtherOriginsAreRefusedUnlessListed) {
  // DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1.
  EXPECT_FALSE(OriginAllowed("http://evil.example:8080", {}));
  EXPECT_FALSE(OriginAllowed("null", {}));
  EXPECT_FALSE(OriginAllowed("file://", {}));
  EXPECT_FALSE(OriginAllowed("http://localhost.evil.example", {}));
  EXPECT_FALSE(OriginAllowed("http://127.0.0.1.evil.example", {}));
  EXPECT_FALSE(OriginAllowed("http://[::1]x", {}));
  EXPECT_TRUE(OriginAllowed("https://app.example.com", {"https://app.example.com"}));
  EXPECT_FALSE(OriginAllowed("https://app.example.com:444", {"https://app.example.com"}));
}

TEST(AcceptAdmits, ExactWildcardsAndQZero) {
  EXPECT_TRUE(AcceptAdmits("", "text/event-stream"));
  EXPECT_TRUE(AcceptAdmits("application/json, text/event-stream", "text/event-stream"));
  EXPECT_TRUE(AcceptAdmits("application/json, text/event-stream", "application/json"));
  EXPECT_TRUE(AcceptAdmits("*/*", "application/json"));
  EXPECT_TRUE(AcceptAdmits("text/*;q=0.5", "text/event-stream"));
  EXPECT_FALSE(AcceptAdmits("application/json", "text/event-stream"));
  EXPECT_FALSE(AcceptAdmits("text/event-stream;q=0, application/json", "text/event-stream"));
  EXPECT_FALSE(AcceptAdmits("text/html", "application/json"));
}

}  // namespace
}  // namespace asb::mcp
