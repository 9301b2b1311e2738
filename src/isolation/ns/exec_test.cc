// Privileged tests of exec semantics through the ns backend (ACCEPTANCE E1, E3, E4, E5 at the
// backend level): the real sandboxd in a real sandbox, driven with protocol::ExecCollect.
#include <chrono>

#include "isolation/ns/ns_test_support.h"

namespace asb::isolation::ns::testing {
namespace {

protocol::CollectedExec RunExec(Sandbox& sb, protocol::ExecRequest req) {
  auto r = protocol::ExecCollect(*sb.connection(), req);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? *r : protocol::CollectedExec{};
}

TEST_F(NsBackendTest, E1CommandStringAndArgv) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  auto hi = Sh(*sb, "echo hi");
  EXPECT_EQ(hi.stdout_data, "hi\n");
  EXPECT_EQ(hi.result.exit_code, 0);
  EXPECT_FALSE(hi.result.timed_out);
  protocol::ExecRequest exit2;
  exit2.argv = {"sh", "-c", "exit 2"};
  EXPECT_EQ(RunExec(*sb, exit2).result.exit_code, 2);
  protocol::ExecRequest literal;
  literal.argv = {"printf", "%s\\n", "a b", "$HOME"};
  EXPECT_EQ(RunExec(*sb, literal).stdout_data, "a b\n$HOME\n");
}

TEST_F(NsBackendTest, E3EnvAndWorkdir) {
  auto spec = Spec();
  spec.env = {{"SANDBOX_VAR", "from-sandbox"}};
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  protocol::ExecRequest req;
  req.command = "echo $SANDBOX_VAR $EXEC_VAR $HOME";
  req.env = {{"EXEC_VAR", "from-exec"}};
  EXPECT_EQ(RunExec(*sb, req).stdout_data, "from-sandbox from-exec /workspace\n");
  protocol::ExecRequest tmp;
  tmp.command = "pwd";
  tmp.cwd = "/tmp";
  EXPECT_EQ(RunExec(*sb, tmp).stdout_data, "/tmp\n");
  EXPECT_EQ(Sh(*sb, "mkdir -p /workspace/src && echo ok").stdout_data, "ok\n");
  protocol::ExecRequest rel;
  rel.command = "pwd";
  rel.cwd = "src";
  EXPECT_EQ(RunExec(*sb, rel).stdout_data, "/workspace/src\n");
}

TEST_F(NsBackendTest, LargeSandboxEnvReachesCommands) {
  auto spec = Spec();
  // 200 KB of env: more than a default pipe holds (the config is written before sandboxd
  // runs), each value below the kernel's 128 KiB per-string limit.
  spec.env = {{"BIG_A", std::string(100'000, 'a')}, {"BIG_B", std::string(100'000, 'b')}};
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  EXPECT_EQ(Sh(*sb, "printf %s \"$BIG_A$BIG_B\" | wc -c").stdout_data, "200000\n");
}

TEST_F(NsBackendTest, E4TimeoutKillsTheWholeGroup) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  protocol::ExecRequest req;
  req.command = "sleep 300 & sleep 300; echo never";
  req.timeout_ms = 1000;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunExec(*sb, req);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_TRUE(r.result.timed_out);
  EXPECT_NE(r.result.exit_code, 0);
  EXPECT_EQ(r.stdout_data.find("never"), std::string::npos);
  EXPECT_LT(ms, 5000);
  EXPECT_EQ(Sh(*sb, "grep -l 'sleep' /proc/[0-9]*/comm 2>/dev/null | wc -l").stdout_data, "0\n");
}

TEST_F(NsBackendTest, E5OutputCap) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  protocol::ExecRequest req;
  req.command = "head -c 80 /dev/zero | tr '\\0' a; head -c 80 /dev/zero | tr '\\0' b >&2";
  req.max_output_bytes = 100;
  auto r = RunExec(*sb, req);
  EXPECT_TRUE(r.result.stdout_truncated || r.result.stderr_truncated);
  EXPECT_EQ(r.stdout_data.size() + r.stderr_data.size(), 100u);
  EXPECT_EQ(r.result.exit_code, 0);
}

}  // namespace
}  // namespace asb::isolation::ns::testing
