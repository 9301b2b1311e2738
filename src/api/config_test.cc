// Snapshot limits and the workspace pool (ADR 0008, ADR 0009): parsed in one place, at the
// boundary.
#include "api/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace asb::api {
namespace {

Status Apply(ServeConfig& cfg, const std::map<std::string, std::string>& env) {
  return ApplyEnvironment(cfg, [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ServeConfigTest, SnapshotLimitsComeFromTheEnvironmentIntoManagerConfig) {
  ServeConfig cfg;
  EXPECT_EQ(cfg.manager.snapshots.max_snapshot_bytes, 10ull << 30);
  ASSERT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_MAX_SNAPSHOT_BYTES", "1"},
                          {"AGENT_SANDBOX_MAX_SNAPSHOTS_PER_SANDBOX", "5"},
                          {"AGENT_SANDBOX_MAX_SNAPSHOTS_PER_OWNER", "7"},
                          {"AGENT_SANDBOX_MAX_SNAPSHOT_TOTAL_BYTES", "1048576"}}));
  EXPECT_EQ(cfg.manager.snapshots.max_snapshot_bytes, 1u);
  EXPECT_EQ(cfg.manager.snapshots.max_per_sandbox, 5);
  EXPECT_EQ(cfg.manager.snapshots.max_per_owner, 7);
  EXPECT_EQ(cfg.manager.snapshots.max_total_bytes_per_owner, 1048576u);
  EXPECT_TRUE(ValidateServeConfig(cfg));
  for (const char* name :
       {"AGENT_SANDBOX_MAX_SNAPSHOT_BYTES", "AGENT_SANDBOX_MAX_SNAPSHOTS_PER_SANDBOX",
        "AGENT_SANDBOX_MAX_SNAPSHOTS_PER_OWNER", "AGENT_SANDBOX_MAX_SNAPSHOT_TOTAL_BYTES"}) {
    ServeConfig c;
    for (const char* bad : {"0", "-1", "x", ""}) {
      auto st = Apply(c, {{name, bad}});
      ASSERT_FALSE(st) << name << "=" << bad;
      EXPECT_NE(st.error().message().find(name), std::string::npos) << st.error().message();
    }
  }
}

// Lifetimes are at most a hundred years (3153600000 s): at the bound they pass, one over they
// fail at start-up, since now + seconds * 1000 ms must not overflow (found by a breaker: a
// --paused-timeout-seconds of 2^61 expired a paused sandbox at once).
TEST(ServeConfigTest, LifetimesAreBoundedSoMillisecondsCannotOverflow) {
  for (const char* name :
       {"AGENT_SANDBOX_PAUSED_TIMEOUT_SECONDS", "AGENT_SANDBOX_MAX_TIMEOUT_SECONDS",
        "AGENT_SANDBOX_MAX_EXEC_TIMEOUT_SECONDS"}) {
    ServeConfig ok;
    EXPECT_TRUE(Apply(ok, {{name, "3153600000"}})) << name;
    ServeConfig over;
    EXPECT_FALSE(Apply(over, {{name, "3153600001"}})) << name;
    EXPECT_FALSE(Apply(over, {{name, "2305843009213693951"}})) << name;
  }
  ServeConfig cfg;
  ASSERT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_PAUSED_TIMEOUT_SECONDS", "60"}}));
  EXPECT_EQ(cfg.manager.limits.paused_timeout_seconds, 60);
}

TEST(ServeConfigTest, WorkspacePoolIsNoneOrXfs) {
  ServeConfig cfg;
  EXPECT_EQ(cfg.workspace_pool, "none");
  ASSERT_TRUE(Apply(
      cfg, {{"AGENT_SANDBOX_WORKSPACE_POOL", "xfs"}, {"AGENT_SANDBOX_WORKSPACE_POOL_GB", "1"}}));
  EXPECT_EQ(cfg.workspace_pool, "xfs");
  EXPECT_EQ(cfg.workspace_pool_gb, 1);
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_WORKSPACE_POOL", "btrfs"}}));
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_WORKSPACE_POOL_GB", "0"}}));
}

// ADR 0014: the HTTP server's connection limits.
TEST(ServeConfigTest, ConnectionLimitsAndTheReserveBelowTheTotal) {
  ServeConfig cfg;
  EXPECT_EQ(cfg.max_connections, 8192);
  EXPECT_EQ(cfg.max_connections_per_ip, 256);
  EXPECT_EQ(cfg.reserved_connections, 512);
  EXPECT_EQ(cfg.request_head_timeout_seconds, 10);
  ASSERT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_MAX_CONNECTIONS", "100"},
                          {"AGENT_SANDBOX_MAX_CONNECTIONS_PER_IP", "8"},
                          {"AGENT_SANDBOX_RESERVED_CONNECTIONS", "10"},
                          {"AGENT_SANDBOX_REQUEST_HEAD_TIMEOUT_SECONDS", "3"}}));
  EXPECT_EQ(cfg.max_connections, 100);
  EXPECT_EQ(cfg.max_connections_per_ip, 8);
  EXPECT_EQ(cfg.reserved_connections, 10);
  EXPECT_EQ(cfg.request_head_timeout_seconds, 3);
  EXPECT_TRUE(ValidateServeConfig(cfg));
  cfg.reserved_connections = 100;  // the whole total reserved: refused
  EXPECT_FALSE(ValidateServeConfig(cfg));
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_REQUEST_HEAD_TIMEOUT_SECONDS", "0"}}));
}

// ADR 0015: preview URLs.
TEST(ServeConfigTest, PreviewDomainSchemeAndMaxTtl) {
  ServeConfig cfg;
  EXPECT_EQ(cfg.preview_domain, "");  // serve makes it localhost:<port>
  EXPECT_EQ(cfg.preview_scheme, "http");
  EXPECT_EQ(cfg.preview_max_ttl_seconds, 86400);
  ASSERT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_DOMAIN", "preview.example.com:8443"},
                          {"AGENT_SANDBOX_PREVIEW_SCHEME", "https"},
                          {"AGENT_SANDBOX_PREVIEW_MAX_TTL_SECONDS", "31536000"}}));
  EXPECT_EQ(cfg.preview_domain, "preview.example.com:8443");
  EXPECT_EQ(cfg.preview_scheme, "https");
  EXPECT_EQ(cfg.preview_max_ttl_seconds, 31536000);
  EXPECT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_MAX_TTL_SECONDS", "1"}}));
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_MAX_TTL_SECONDS", "0"}}));
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_MAX_TTL_SECONDS", "31536001"}}));
  EXPECT_FALSE(Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_SCHEME", "ftp"}}));
  for (const char* bad : {"", "http://x.test", "x.test:0", "*.x.test", "X.test"}) {
    auto st = Apply(cfg, {{"AGENT_SANDBOX_PREVIEW_DOMAIN", bad}});
    ASSERT_FALSE(st) << bad;
    EXPECT_NE(st.error().message().find("AGENT_SANDBOX_PREVIEW_DOMAIN"), std::string::npos);
  }
}

// ADR 0022: the web console's directory ("" = found beside the binary at start).
TEST(ServeConfigTest, ConsoleDir) {
  ServeConfig cfg;
  EXPECT_EQ(cfg.console_dir, "");
  ASSERT_TRUE(Apply(cfg, {{"AGENT_SANDBOX_CONSOLE_DIR", "/opt/console"}}));
  EXPECT_EQ(cfg.console_dir, "/opt/console");
}

}  // namespace
}  // namespace asb::api
