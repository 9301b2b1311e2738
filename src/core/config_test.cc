#include "core/config.h"

#include <gtest/gtest.h>

namespace asb::core {
namespace {

TEST(ConfigTest, DefaultsAreValidAndMatchTheBrief) {
  ManagerConfig c;
  ASSERT_TRUE(c.Validate()) << c.Validate().error().ToString();
  EXPECT_EQ(c.limits.max_sandboxes, 20);
  EXPECT_EQ(c.limits.default_timeout_seconds, 900);
  EXPECT_EQ(c.limits.max_timeout_seconds, 86400);
  EXPECT_EQ(c.limits.default_memory_mb, 512);
  EXPECT_EQ(c.limits.max_memory_mb, 8192);
  EXPECT_EQ(c.limits.default_pids_limit, 256);
  EXPECT_EQ(c.limits.max_file_bytes, 100u << 20);
  EXPECT_EQ(c.limits.max_exec_output_bytes, 1u << 20);
  EXPECT_GE(c.limits.max_cpus, 1.0);
  EXPECT_EQ(c.limits.max_cpus, DefaultMaxCpus());
  EXPECT_EQ(c.DatabasePath(), "/var/lib/agent-sandbox/agent-sandbox.db");
  EXPECT_EQ(c.TemplatesDir(), "/var/lib/agent-sandbox/templates");
}

TEST(ConfigTest, InconsistentSettingsAreRejectedByName) {
  auto expect_bad = [](auto mutate, std::string_view word) {
    ManagerConfig c;
    mutate(c);
    auto st = c.Validate();
    ASSERT_FALSE(st) << word;
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.error().message().find(word), std::string::npos) << st.error().message();
  };
  expect_bad([](ManagerConfig& c) { c.limits.default_memory_mb = 9000; }, "memory_mb");
  expect_bad([](ManagerConfig& c) { c.limits.max_memory_mb = 32; }, "memory_mb");
  expect_bad([](ManagerConfig& c) { c.limits.default_cpus = 0; }, "cpus");
  expect_bad([](ManagerConfig& c) { c.limits.max_cpus = -1; }, "max_cpus");
  expect_bad([](ManagerConfig& c) { c.limits.max_sandboxes = 0; }, "max_sandboxes");
  expect_bad([](ManagerConfig& c) { c.limits.default_timeout_seconds = 0; }, "timeout");
  expect_bad([](ManagerConfig& c) { c.limits.default_pids_limit = 5000; }, "pids_limit");
  expect_bad([](ManagerConfig& c) { c.limits.default_workspace_mb = 8; }, "workspace_mb");
  expect_bad([](ManagerConfig& c) { c.limits.default_exec_timeout_seconds = 7200; }, "exec");
  expect_bad([](ManagerConfig& c) { c.limits.max_file_bytes = 0; }, "max_file_bytes");
  expect_bad([](ManagerConfig& c) { c.reap_interval_seconds = 0; }, "reap_interval");
  expect_bad([](ManagerConfig& c) { c.data_dir = "relative"; }, "data_dir");
}

}  // namespace
}  // namespace asb::core
