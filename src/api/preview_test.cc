#include "api/preview.h"

#include <gtest/gtest.h>

namespace asb::api {
namespace {

constexpr char kHex[] = "3f9a0c1d2e4b5a69";

TEST(PreviewHostTest, NamesAPortAndASandboxUnderTheDomainOnly) {
  auto h = ParsePreviewHost(std::string("8000-sb-") + kHex + ".preview.test:8080", "preview.test");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->sandbox_id, std::string("sb_") + kHex);
  EXPECT_EQ(h->port, "8000");
  // Case-insensitive, any port or none, the domain's own port ignored.
  h = ParsePreviewHost(std::string("1-SB-") + kHex + ".Preview.TEST", "preview.test:9999");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->port, "1");
  EXPECT_EQ(h->sandbox_id, std::string("sb_") + kHex);
  EXPECT_TRUE(ParsePreviewHost(std::string("65535-sb-") + kHex + ".localhost:1", "localhost:8080"));
  // The port's range is the handler's business; its shape is 1 to 5 digits.
  EXPECT_TRUE(ParsePreviewHost(std::string("99999-sb-") + kHex + ".localhost", "localhost"));
  for (std::string bad : {
           std::string("preview.test"),                           // the domain itself
           std::string("localhost:8080"),                         // the API's host
           std::string("127.0.0.1:8080"),                         //
           std::string("8000-sb-") + kHex + ".other.test",        // another domain
           std::string("8000-sb-") + kHex + ".xpreview.test",     // not a label boundary
           std::string("8000-sb-") + kHex + ".a.preview.test",    // two labels
           std::string("a.8000-sb-") + kHex + ".preview.test",    // two labels
           std::string("8000-sb_") + kHex + ".preview.test",      // the id's underscore
           std::string("8000-sb-") + kHex + "0.preview.test",     // 17 hex digits
           std::string("8000-sb-3f9a0c1d2e4b5a6.preview.test"),   // 15
           std::string("8000-sb-3f9a0c1d2e4b5a6g.preview.test"),  // not hex
           std::string("123456-sb-") + kHex + ".preview.test",    // 6 digits
           std::string("-sb-") + kHex + ".preview.test",          // no port
           std::string("80a-sb-") + kHex + ".preview.test",       //
           std::string("8000-ab-") + kHex + ".preview.test",      //
           std::string("[::1]:8080"),                             //
           std::string(),                                         //
       }) {
    EXPECT_FALSE(ParsePreviewHost(bad, "preview.test")) << bad;
  }
  EXPECT_FALSE(ParsePreviewHost(std::string("8000-sb-") + kHex + ".", ""));
}

TEST(PreviewHostTest, HostNamesAndUrlsRoundTrip) {
  std::string id = std::string("sb_") + kHex;
  EXPECT_EQ(PreviewHostName("localhost:8080", id, 8000),
            std::string("8000-sb-") + kHex + ".localhost:8080");
  auto back = ParsePreviewHost(PreviewHostName("localhost:8080", id, 8000), "localhost:8080");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->sandbox_id, id);
  PreviewOptions o;
  o.domain = "preview.example.com";
  o.scheme = "https";
  EXPECT_EQ(PreviewUrl(o, id, 3000, "asbp_00ff"),
            std::string("https://3000-sb-") + kHex +
                ".preview.example.com/?_asb_preview_token=asbp_00ff");
}

TEST(PreviewDomainTest, AcceptsDnsNamesWithAnOptionalPort) {
  for (const char* ok :
       {"localhost", "localhost:8080", "preview.example.com", "a-b.c0.test:1", "x.test:65535"}) {
    EXPECT_TRUE(ValidatePreviewDomain(ok)) << ok;
  }
  for (const char* bad : {"", ".example.com", "example.com.", "a..b", "Upper.test", "a_b.test",
                          "-a.test", "a-.test", "x.test:0", "x.test:65536", "x.test:", "x.test:a",
                          "http://x.test", "x.test/path", "*.x.test"}) {
    EXPECT_FALSE(ValidatePreviewDomain(bad)) << bad;
  }
}

TEST(PreviewTokenTransportTest, TheTokenLeavesTheQueryAndNothingElseDoes) {
  std::optional<std::string> v;
  EXPECT_EQ(RemoveQueryParam("/?_asb_preview_token=asbp_1", kPreviewTokenParam, &v), "/");
  EXPECT_EQ(v, "asbp_1");
  v.reset();
  EXPECT_EQ(RemoveQueryParam("/a/b?x=1&_asb_preview_token=t&y=%20+z", kPreviewTokenParam, &v),
            "/a/b?x=1&y=%20+z");
  EXPECT_EQ(v, "t");
  // An encoded name is the same name; every copy goes, the last value counts.
  v.reset();
  EXPECT_EQ(
      RemoveQueryParam("/?%5Fasb_preview_token=a&q=1&_asb_preview_token=b", kPreviewTokenParam, &v),
      "/?q=1");
  EXPECT_EQ(v, "b");
  v.reset();
  EXPECT_EQ(RemoveQueryParam("/p?_asb_preview_token", kPreviewTokenParam, &v), "/p");
  EXPECT_EQ(v, "");
  // Nothing to remove: the target byte for byte.
  v.reset();
  for (const char* same : {"/", "/a?b", "/a?x=_asb_preview_token", "/a?", "/a?&&x=%zz"}) {
    EXPECT_EQ(RemoveQueryParam(same, kPreviewTokenParam, &v), same);
    EXPECT_FALSE(v) << same;
  }
}

TEST(PreviewTokenTransportTest, EveryPreviewCookieLeavesTheHeaderAndTheAppsCookiesStay) {
  const std::string own = PreviewCookieName("sb_0123456789abcdef", 8000, false);
  EXPECT_EQ(own, "_asb_pv_8000_sb_0123456789abcdef");
  std::vector<std::string> v;
  EXPECT_EQ(RemovePreviewCookies("a=1; " + own + "=asbp_x; b=2", own, &v), "a=1; b=2");
  EXPECT_EQ(v, std::vector<std::string>{"asbp_x"});
  v.clear();
  EXPECT_EQ(RemovePreviewCookies(own + "=t", own, &v), "");
  EXPECT_EQ(v, std::vector<std::string>{"t"});
  v.clear();
  EXPECT_EQ(RemovePreviewCookies("session=abc;theme=dark", own, &v), "session=abc; theme=dark");
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(RemovePreviewCookies("x_asb_pv_1=1", own, &v), "x_asb_pv_1=1");
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(RemovePreviewCookies("", own, &v), "");
  // Another host's cookie is removed but never taken; the legacy name is still a candidate.
  EXPECT_EQ(RemovePreviewCookies("_asb_pv_9000_sb_ffffffffffffffff=other; "
                                 "__Host-_asb_pv_1_sb_x=y; _asb_preview_token=old",
                                 own, &v),
            "");
  EXPECT_EQ(v, std::vector<std::string>{"old"});
}

TEST(PreviewTokenTransportTest, ShadowingCookiesAreAllCandidatesInHeaderOrder) {
  // The attack of ADR 0014, round 3 (the tossed cookie): another tenant's app set a junk cookie of
  // this host's name for the whole preview domain; the browser sends both. Both are tried, so the
  // valid one still opens the host.
  const std::string own = PreviewCookieName("sb_0123456789abcdef", 8000, false);
  std::vector<std::string> v;
  EXPECT_EQ(RemovePreviewCookies(own + "=junk; app=1; " + own + "=asbp_good", own, &v), "app=1");
  EXPECT_EQ(v, (std::vector<std::string>{"junk", "asbp_good"}));
}

TEST(PreviewTokenTransportTest, TheCookieIsHostOnlyHttpOnlyAndLaxAndHostPrefixedUnderHttps) {
  EXPECT_EQ(PreviewSetCookie(PreviewCookieName("sb_1", 80, false), "asbp_1", 3600, false),
            "_asb_pv_80_sb_1=asbp_1; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax");
  EXPECT_EQ(PreviewSetCookie(PreviewCookieName("sb_1", 80, true), "asbp_1", 5, true),
            "__Host-_asb_pv_80_sb_1=asbp_1; Path=/; Max-Age=5; HttpOnly; SameSite=Lax; Secure");
}

}  // namespace
}  // namespace asb::api
