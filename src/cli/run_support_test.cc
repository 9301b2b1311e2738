#include "cli/run_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "cli/command.h"

namespace asb::cli {
namespace {
namespace fs = std::filesystem;

TEST(ExitCodeFor, PassesStatusSignalAndTimeout) {
  protocol::ExecResult r;
  r.exit_code = 3;
  EXPECT_EQ(ExitCodeFor(r), 3);
  r.exit_code = 0;
  EXPECT_EQ(ExitCodeFor(r), 0);
  r.exit_code = 137;
  r.signal = 9;
  EXPECT_EQ(ExitCodeFor(r), 137);
  r.signal = 15;
  EXPECT_EQ(ExitCodeFor(r), 143);
  r.timed_out = true;
  EXPECT_EQ(ExitCodeFor(r), kExitTimeout);
}

TEST(ParseEnvAssignments, DockerStyle) {
  ::setenv("ASB_TEST_COPIED", "from-host", 1);
  ::unsetenv("ASB_TEST_UNSET");
  auto env =
      ParseEnvAssignments({"A=1", "B=", "C=x=y", "ASB_TEST_COPIED", "ASB_TEST_UNSET", "A=2"});
  ASSERT_TRUE(env) << env.error().ToString();
  EXPECT_EQ(env->at("A"), "2");
  EXPECT_EQ(env->at("B"), "");
  EXPECT_EQ(env->at("C"), "x=y");
  EXPECT_EQ(env->at("ASB_TEST_COPIED"), "from-host");
  EXPECT_EQ(env->count("ASB_TEST_UNSET"), 0u);
  EXPECT_EQ(env->size(), 4u);
}

TEST(ParseEnvAssignments, RejectsEmptyNameAndNul) {
  EXPECT_EQ(ParseEnvAssignments({"=x"}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseEnvAssignments({std::string("A=b\0c", 5)}).error().code(),
            ErrorCode::kInvalidArgument);
}

class TemplateRootfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb-cli-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TemplateRootfsTest, FindsBuiltTemplate) {
  fs::create_directories(dir_ / "templates/base/rootfs/usr");
  auto r = TemplateRootfs(dir_, "base");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, (dir_ / "templates/base/rootfs").string());
}

TEST_F(TemplateRootfsTest, MissingTemplateNamesTheAvailableOnes) {
  fs::create_directories(dir_ / "templates/base/rootfs/usr");
  fs::create_directories(dir_ / "templates/python/rootfs/usr");
  fs::create_directories(dir_ / "templates/.build-x/rootfs");
  auto r = TemplateRootfs(dir_, "node");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("available: base, python)"), std::string::npos)
      << r.error().message();
}

TEST_F(TemplateRootfsTest, RejectsPathLikeNames) {
  for (const char* name : {"../etc", "a/b", "", ".hidden", "Base"}) {
    auto r = TemplateRootfs(dir_, name);
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << name;
  }
}

TEST(FindSandboxd, HonoursEnvAndReportsMissing) {
  ::setenv("AGENT_SANDBOX_SANDBOXD", "/bin/true", 1);
  auto found = FindSandboxd();
  ASSERT_TRUE(found) << found.error().ToString();
  EXPECT_EQ(*found, "/bin/true");
  ::setenv("AGENT_SANDBOX_SANDBOXD", "/nonexistent/sandboxd", 1);
  auto missing = FindSandboxd();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(missing.error().detail().find("/nonexistent/sandboxd"),
            std::string::npos);  // the operator reads it
  ::unsetenv("AGENT_SANDBOX_SANDBOXD");
}

TEST(DefaultDataDir, EnvOrVarLib) {
  ::unsetenv("AGENT_SANDBOX_DATA_DIR");
  EXPECT_EQ(DefaultDataDir(), "/var/lib/agent-sandbox");
  ::setenv("AGENT_SANDBOX_DATA_DIR", "/srv/asb", 1);
  EXPECT_EQ(DefaultDataDir(), "/srv/asb");
  ::unsetenv("AGENT_SANDBOX_DATA_DIR");
}

}  // namespace
}  // namespace asb::cli
