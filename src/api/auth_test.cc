// Unit tests of the auth layer's pure parts: the sliding-window rate limiter exact at its
// boundary, expiry parsing, the metrics exposition text, and JSON log lines.
#include "api/auth.h"

#include <gtest/gtest.h>

#include "api/audit.h"
#include "api/json_log.h"
#include "api/metrics.h"
#include "common/log.h"

namespace asb::api {
namespace {

TEST(RateLimiterTest, ExactlyNPerSixtySeconds) {
  RateLimiter rl;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rl.Admit("k", 5, 1000 + i * 1000), 0) << i;
  // The 6th inside the window waits until the first (t=1000) leaves it at t=61000.
  EXPECT_EQ(rl.Admit("k", 5, 6000), 55);
  EXPECT_EQ(rl.Admit("k", 5, 60'999), 1);
  EXPECT_EQ(rl.Admit("k", 5, 61'000), 0);  // the first left the window
  EXPECT_EQ(rl.Admit("k", 5, 61'001), 1);  // the second (t=2000) leaves at 62000
  EXPECT_EQ(rl.Admit("other", 5, 61'001), 0);
  EXPECT_EQ(rl.Admit("k", 0, 61'001), 0);  // unlimited
}

TEST(ParseExpiryTest, DurationsTimesAndErrors) {
  const int64_t now = 1'700'000'000'000;
  EXPECT_EQ(*ParseExpiry("", now), 0);
  EXPECT_EQ(*ParseExpiry("never", now), 0);
  EXPECT_EQ(*ParseExpiry("30d", now), now + 30 * 86'400'000LL);
  EXPECT_EQ(*ParseExpiry("12h", now), now + 12 * 3'600'000LL);
  EXPECT_EQ(*ParseExpiry("45s", now), now + 45'000);
  EXPECT_EQ(*ParseExpiry("2099-01-01T00:00:00Z", now), 4'070'908'800'000LL);
  EXPECT_EQ(*ParseRfc3339Ms("2099-01-01T00:00:00.5Z"), 4'070'908'800'500LL);
  for (const char* bad : {"0d", "-1d", "5x", "2001-01-01T00:00:00Z", "2099-01-01 00:00:00",
                          "2099-13-01T00:00:00Z", "2099-01-01T00:00:00+01:00", "tomorrow"}) {
    EXPECT_FALSE(ParseExpiry(bad, now)) << bad;
  }
}

TEST(MetricsTest, RendersFamiliesWithEscapedLabels) {
  Metrics m;
  m.ObserveHttp("GET", "/v1/sandboxes/{id}", 200, 0.003);
  m.ObserveHttp("GET", "/v1/sandboxes/{id}", 200, 7);
  m.ObserveCreate("ns", "we\"ird\\", "ok", 0.05);
  m.CountAuth("ok");
  Metrics::Gauges g;
  g.sandboxes_by_state["running"] = 2;
  std::string text = m.Render(g);
  EXPECT_NE(text.find("asb_sandboxes{state=\"running\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("asb_http_requests_total{method=\"GET\",route=\"/v1/sandboxes/{id}\","
                      "status=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("asb_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/"
                      "sandboxes/{id}\",status=\"200\",le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("template=\"we\\\"ird\\\\\""), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE asb_exec_duration_seconds histogram\n"), std::string::npos);
}

TEST(JsonLogTest, EscapesAndLiftsFields) {
  std::string line = JsonLogLine("2026-01-01T00:00:00.000Z", "info",
                                 "http out request_id=req_1 key_id=key_2 sandbox_id=- "
                                 "status=200 \"quoted\"\n\x01");
  EXPECT_EQ(line,
            "{\"ts\":\"2026-01-01T00:00:00.000Z\",\"level\":\"info\",\"msg\":\"http out "
            "request_id=req_1 key_id=key_2 sandbox_id=- status=200 \\\"quoted\\\"\\\\x0a\\\\x01\","
            "\"request_id\":\"req_1\",\"key_id\":\"key_2\",\"status\":\"200\"}");
}

// ADR 0014: JSON text must be UTF-8, and one hostile message stays one bounded line.
TEST(JsonLogTest, InvalidUtf8IsEscapedAndLongMessagesAreCut) {
  std::string line = JsonLogLine("t", "info", "route=/x\xff\xc3\xa9\x1b[2J");
  EXPECT_NE(line.find("\"msg\":\"route=/x\\\\xff\xc3\xa9\\\\x1b[2J\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"route\":\"/x\\\\xff\xc3\xa9\\\\x1b[2J\""), std::string::npos) << line;
  std::string big = JsonLogLine("t", "info", "route=/" + std::string(100000, 'a'));
  EXPECT_LT(big.size(), 2 * kLogMessageMax + 200);
  EXPECT_NE(big.find("...(100007 bytes)"), std::string::npos);
}

TEST(AuditTest, ExecEndIsFoundWithoutBeingFooledByOutput) {
  ExecEnd e =
      ExecEndOfJson(R"({"stdout":"\"exit_code\":99 \"timed_out\":true","stderr":"","exit_code":-3,)"
                    R"("signal":0,"timed_out":false})");
  EXPECT_FALSE(e.error);
  EXPECT_EQ(e.exit_code, -3);
  EXPECT_FALSE(e.timed_out);
  e = ExecEndOfJson(R"({"type":"exit","exit_code":0,"timed_out":true})");
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_TRUE(e.timed_out);
  EXPECT_TRUE(ExecEndOfJson(R"({"type":"error","code":"backend_error"})").error);
  EXPECT_TRUE(ExecEndOfJson("{}").error);
}

// Found by fuzz/fuzz_http.cc: a query value with invalid UTF-8 was stored as an event's target
// verbatim, and GET /v1/events then answered a body that was not JSON. Targets are valid UTF-8,
// and the 1000-byte cut never splits a character.
TEST(AuditTest, TargetsAreValidUtf8AndCutAtACharacterBoundary) {
  Route route;
  route.method = "PUT";
  route.pattern = "/v1/sandboxes/{id}/files";
  route.options.file_body = true;
  HttpRequest req;
  req.method = "PUT";
  req.query["path"] = "a\xfftxt";
  EXPECT_EQ(DescribeCall(route, req).target, "a\xef\xbf\xbdtxt");
  req.query["path"] = "x";
  for (int i = 0; i < 500; ++i) req.query["path"] += "\xc3\xa9";  // 1 + 1000 bytes
  std::string t = DescribeCall(route, req).target;
  EXPECT_EQ(t.size(), 999u + 3u);  // "x" + 499 whole "é", then "..."
  EXPECT_EQ(t.substr(t.size() - 5), "\xc3\xa9...");
}

}  // namespace
}  // namespace asb::api

namespace asb::api {
namespace {

HttpRequest Upgrade(std::string protocols) {
  HttpRequest req;
  req.headers["upgrade"] = "websocket";
  req.headers["sec-websocket-protocol"] = std::move(protocols);
  return req;
}

// The browser console's WebSocket key (ADR 0022): base64url of the key in a subprotocol.
TEST(WebSocketProtocolKeyTest, DecodesTheBearerSubprotocolOfAnUpgradeOnly) {
  // base64url("asb_k1") = "YXNiX2sx"; base64url("a?>") = "YT8-" ('-' and no padding).
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("agent-sandbox.v1, agent-sandbox.bearer.YXNiX2sx")),
            "asb_k1");
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("agent-sandbox.bearer.YT8-,agent-sandbox.v1")), "a?>");
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("agent-sandbox.v1")), "");
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("agent-sandbox.bearer.YT8+")), "");  // not base64url
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("agent-sandbox.bearer.YT8=")), "");  // padding
  EXPECT_EQ(WebSocketProtocolKey(Upgrade("x.agent-sandbox.bearer.YXNiX2sx")), "");
  HttpRequest plain = Upgrade("agent-sandbox.bearer.YXNiX2sx");
  plain.headers.erase("upgrade");  // not an upgrade: the subprotocol means nothing
  EXPECT_EQ(WebSocketProtocolKey(plain), "");
}

}  // namespace
}  // namespace asb::api
