#include "sandboxd/options.h"

#include <gtest/gtest.h>

namespace asb::sandboxd {
namespace {

TEST(OptionsTest, ParsesTheStableCommandLine) {
  auto o = ParseCommandLine(
      {"sandboxd", "--listen-fd=5", "--config-fd=7", "--workspace=/ws/", "--no-pid1"});
  ASSERT_TRUE(o) << o.error().ToString();
  EXPECT_EQ(o->listen_fd, 5);
  EXPECT_EQ(o->config_fd, 7);
  EXPECT_EQ(o->workspace, "/ws");
  EXPECT_FALSE(o->pid1);
  EXPECT_EQ(o->env.at("HOME"), "/workspace");
  EXPECT_EQ(o->env.at("LANG"), "C.UTF-8");
  EXPECT_EQ(o->env.count("TERM"), 0u);
}

TEST(OptionsTest, Defaults) {
  auto o = ParseCommandLine({"sandboxd", "--listen-fd=3"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->workspace, "/workspace");
  EXPECT_TRUE(o->pid1);
  EXPECT_EQ(o->config_fd, -1);
}

TEST(OptionsTest, RejectsBadArguments) {
  EXPECT_FALSE(ParseCommandLine({"sandboxd"}));  // no listen fd
  EXPECT_FALSE(ParseCommandLine({"sandboxd", "--listen-fd=x"}));
  EXPECT_FALSE(ParseCommandLine({"sandboxd", "--listen-fd=3", "--workspace=rel"}));
  EXPECT_FALSE(ParseCommandLine({"sandboxd", "--listen-fd=3", "--bogus"}));
}

TEST(OptionsTest, ConfigOverlaysTheEnvironment) {
  Options o;
  o.env = DefaultEnv();
  ASSERT_TRUE(ApplyConfigJson(R"({"env":{"HOME":"/h","X":"1"},"hostname":"box"})", &o));
  EXPECT_EQ(o.env.at("HOME"), "/h");
  EXPECT_EQ(o.env.at("X"), "1");
  EXPECT_EQ(o.env.at("USER"), "sandbox");
  EXPECT_EQ(o.hostname, "box");
  EXPECT_FALSE(ApplyConfigJson("[1]", &o));
  EXPECT_FALSE(ApplyConfigJson(R"({"env":{"A":1}})", &o));
  EXPECT_FALSE(ApplyConfigJson("{", &o));
}

}  // namespace
}  // namespace asb::sandboxd
