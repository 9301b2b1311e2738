// sandboxd as PID 1 of its own pid namespace (as in a real sandbox), and under a pids cgroup
// limit (fork failures and fork loops). Label: privileged.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "protocol/client.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::ExecRequest;

class SandboxdPid1Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    auto p = SandboxdProcess::Start("", /*as_pid1=*/true);
    ASSERT_TRUE(p) << p.error().ToString();
    proc_ = std::move(*p);
    auto c = proc_->Connect();
    ASSERT_TRUE(c) << c.error().ToString();
    conn_ = *c;
  }
  void TearDown() override {
    if (conn_) conn_->Close();
    proc_.reset();
  }
  protocol::CollectedExec Sh(const std::string& cmd) {
    auto r = protocol::ExecCollect(*conn_, ShellRequest(cmd));
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : protocol::CollectedExec{};
  }
  std::unique_ptr<SandboxdProcess> proc_;
  std::shared_ptr<protocol::Connection> conn_;
};

TEST_F(SandboxdPid1Test, RunsAsPid1AndIgnoresSigterm) {
  EXPECT_EQ(Sh("cat /proc/1/comm").stdout_data, "sandboxd\n");
  pid_t host_pid = proc_->pid();
  ASSERT_GT(host_pid, 0);
  ASSERT_EQ(kill(host_pid, SIGTERM), 0);
  ASSERT_EQ(kill(host_pid, SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Sh("echo alive").stdout_data, "alive\n");
}

TEST_F(SandboxdPid1Test, ReapsOrphansAndKillAllEmptiesTheNamespace) {
  EXPECT_EQ(Sh("i=0; while [ $i -lt 200 ]; do (true &); i=$((i+1)); done; "
               "sleep 3020 & sleep 3020 & echo started")
                .stdout_data,
            "started\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(CountZombieChildren(proc_->pid()), 0);
  EXPECT_EQ(CountProcessesMatching("sleep 3020"), 2);
  auto killed = protocol::KillAll(*conn_);
  ASSERT_TRUE(killed) << killed.error().ToString();
  EXPECT_EQ(*killed, 2u);
  EXPECT_EQ(CountProcessesMatching("sleep 3020"), 0);
  // Left in the namespace: sandboxd and this shell. Counted with shell builtins only: a
  // pipeline (ls /proc | grep) raced with itself, ls listing /proc before grep was forked.
  EXPECT_EQ(Sh("set -- /proc/[0-9]*; echo $#").stdout_data, "2\n");
}

// A pids limit on the sandbox: fork failures are reported and sandboxd keeps going.
class SandboxdLimitsTest : public SandboxdTest {};

TEST_F(SandboxdLimitsTest, ForkFailureIsLimitExceededAndSandboxdSurvives) {
  auto cg = PidsCgroup::Create(proc_->pid(), "1");  // sandboxd itself only
  if (!cg && cg.error().code() == ErrorCode::kUnavailable) GTEST_SKIP() << cg.error().message();
  ASSERT_TRUE(cg) << cg.error().ToString();
  auto r = protocol::ExecCollect(*conn_, ShellRequest("echo never"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(r.error().message(), "fork: Resource temporarily unavailable");
  ASSERT_TRUE((*cg)->SetMax("max"));
  EXPECT_EQ(Sh("echo back").stdout_data, "back\n");
}

TEST_F(SandboxdLimitsTest, ForkLoopIsStoppedByThePidsLimit) {
  auto cg = PidsCgroup::Create(proc_->pid(), "32");
  if (!cg && cg.error().code() == ErrorCode::kUnavailable) GTEST_SKIP() << cg.error().message();
  ASSERT_TRUE(cg) << cg.error().ToString();
  auto r = Sh("i=0; while [ $i -lt 100 ]; do sleep 3021 & i=$((i+1)); done; echo looped");
  EXPECT_NE(r.stderr_data.find("fork"), std::string::npos) << r.stderr_data;
  EXPECT_LE(CountProcessesMatching("sleep 3021"), 32);
  auto killed = protocol::KillAll(*conn_);
  ASSERT_TRUE(killed) << killed.error().ToString();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Sh("echo next").stdout_data, "next\n");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(CountProcessesMatching("sleep 3021"), 0);
}

}  // namespace
}  // namespace asb::sandboxd::testing
