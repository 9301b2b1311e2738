// The real sandboxd binary, started on the host with --no-pid1 against a temp workspace and
// driven by the real host client. Needs root (commands run as uid 1000; file operations use
// setfsuid). Label: privileged.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "protocol/client.h"
#include "protocol/stats_client.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::ChannelEvent;
using protocol::CollectedExec;
using protocol::ExecRequest;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TEST_F(SandboxdTest, EchoHi) {
  auto r = Sh("echo hi");
  EXPECT_EQ(r.stdout_data, "hi\n");
  EXPECT_EQ(r.stderr_data, "");
  EXPECT_EQ(r.result.exit_code, 0);
  EXPECT_FALSE(r.result.timed_out);
  EXPECT_EQ(r.result.stdout_bytes, 3u);
  EXPECT_EQ(conn_->peer_software(), std::string("sandboxd ") + ASB_VERSION);
}

TEST_F(SandboxdTest, ExitCodesAndSignals) {
  ExecRequest req;
  req.argv = {"sh", "-c", "exit 2"};
  req.cwd = ".";
  EXPECT_EQ(Run(req).result.exit_code, 2);
  auto killed = Sh("kill -9 $$");
  EXPECT_EQ(killed.result.signal, 9);
  EXPECT_EQ(killed.result.exit_code, 137);
}

TEST_F(SandboxdTest, ArgvIsNotShellExpanded) {
  ExecRequest req;
  req.argv = {"printf", "%s\\n", "a b", "$HOME"};
  req.cwd = ".";
  EXPECT_EQ(Run(req).stdout_data, "a b\n$HOME\n");
}

TEST_F(SandboxdTest, StdoutAndStderrAreSeparateAndByteExact) {
  auto r = Sh("printf 'out\\0\\377'; printf 'err\\n' >&2");
  EXPECT_EQ(r.stdout_data, std::string("out\0\377", 5));
  EXPECT_EQ(r.stderr_data, "err\n");
}

TEST_F(SandboxdTest, EnvAndCwd) {
  ASSERT_EQ(Sh("mkdir -p src").result.exit_code, 0);
  ExecRequest req = ShellRequest("echo $BASE_VAR $OVERRIDE_ME $MINE $HOME $USER; pwd; id -u");
  req.env = {{"MINE", "mine"}, {"OVERRIDE_ME", "new"}};
  req.cwd = "src";
  auto r = Run(req);
  EXPECT_EQ(r.stdout_data,
            "base new mine /workspace sandbox\n" + proc_->workspace() + "/src\n1000\n");
  req.cwd = "/tmp";
  req.command = "pwd";
  EXPECT_EQ(Run(req).stdout_data, "/tmp\n");
  // As root, USER says so; HOME stays the writable workspace; a request's USER still wins.
  ExecRequest root = ShellRequest("echo $USER $HOME; id -u");
  root.user = "root";
  EXPECT_EQ(Run(root).stdout_data, "root /workspace\n0\n");
  root.env = {{"USER", "admin"}};
  EXPECT_EQ(Run(root).stdout_data, "admin /workspace\n0\n");
}

TEST_F(SandboxdTest, MissingProgramIs127WithAClearLine) {
  ExecRequest req;
  req.argv = {"no-such-program-xyz", "arg"};
  req.cwd = ".";
  auto r = Run(req);
  EXPECT_EQ(r.result.exit_code, 127);
  EXPECT_EQ(r.stderr_data, "sandboxd: no-such-program-xyz: command not found\n");
  ASSERT_EQ(Sh("printf '#!/bin/sh\\necho x\\n' > noexec; chmod 644 noexec").result.exit_code, 0);
  req.argv = {"./noexec"};
  auto r2 = Run(req);
  EXPECT_EQ(r2.result.exit_code, 126);
  EXPECT_EQ(r2.stderr_data, "sandboxd: ./noexec: Permission denied\n");
}

TEST_F(SandboxdTest, MissingCwdIsABadRequest) {
  ExecRequest req = ShellRequest("echo never");
  req.cwd = "/nonexistent-dir-xyz";
  auto r = protocol::ExecCollect(*conn_, req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message(), "workdir /nonexistent-dir-xyz: No such file or directory");
}

TEST_F(SandboxdTest, BadRequestsAreInvalid) {
  ExecRequest req;
  req.cwd = ".";
  auto r = protocol::ExecCollect(*conn_, req);  // neither argv nor command
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  req = ShellRequest("true");
  req.user = "nobody";
  r = protocol::ExecCollect(*conn_, req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  auto ch = conn_->Open(R"({"op":"no.such.op"})");
  ASSERT_TRUE(ch);
  auto ev = (*ch)->Next(5000);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->kind, ChannelEvent::Kind::kError);
  EXPECT_EQ(ev->error->code(), ErrorCode::kInvalidArgument);
  // The connection survives all of that.
  EXPECT_EQ(Sh("echo ok").stdout_data, "ok\n");
}

TEST_F(SandboxdTest, TimeoutKillsTheWholeSessionAndKeepsPartialOutput) {
  ExecRequest req = ShellRequest("echo before; sleep 3007 & sleep 3007; echo never");
  req.timeout_ms = 1000;
  int64_t t0 = NowMs();
  auto r = Run(req);
  int64_t took = NowMs() - t0;
  EXPECT_TRUE(r.result.timed_out);
  EXPECT_NE(r.result.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "before\n");
  EXPECT_LT(took, 4000);
  EXPECT_GE(took, 1000);
  EXPECT_EQ(CountProcessesMatching("sleep 3007"), 0);
}

TEST_F(SandboxdTest, TimeoutEscalatesToSigkillAfterGrace) {
  ExecRequest req = ShellRequest("trap '' TERM; echo ready; sleep 3008; echo never");
  req.timeout_ms = 300;
  req.kill_grace_ms = 300;
  int64_t t0 = NowMs();
  auto r = Run(req);
  EXPECT_TRUE(r.result.timed_out);
  EXPECT_EQ(r.stdout_data, "ready\n");
  EXPECT_LT(NowMs() - t0, 3000);
  EXPECT_EQ(CountProcessesMatching("sleep 3008"), 0);
}

// Found by the breaker: a child that calls setsid(2) leaves the exec's session, and the
// timeout kill (which signals the session) left it running. The kill now also reaches the
// sessions created by the leader's descendants.
TEST_F(SandboxdTest, TimeoutAlsoKillsSessionsTheCommandCreated) {
  ExecRequest req = ShellRequest(
      "setsid sleep $((3000+31)) & sh -c 'setsid sleep $((3000+32)) & sleep $((3000+33))' & "
      "sleep $((3000+30)); echo never");
  req.timeout_ms = 700;
  int64_t t0 = NowMs();
  auto r = Run(req);
  EXPECT_TRUE(r.result.timed_out);
  EXPECT_EQ(r.stdout_data, "");
  EXPECT_LT(NowMs() - t0, 4000);
  for (const char* p : {"sleep 3030", "sleep 3031", "sleep 3032", "sleep 3033"}) {
    EXPECT_EQ(CountProcessesMatching(p), 0) << p;
  }
}

TEST_F(SandboxdTest, OutputCapKeepsExactlyTheCapInArrivalOrder) {
  ExecRequest req = ShellRequest(
      "head -c 80 /dev/zero | tr '\\0' a; head -c 80 /dev/zero | tr '\\0' b >&2; echo done >&2");
  req.max_output_bytes = 100;
  auto r = Run(req);
  EXPECT_EQ(r.result.exit_code, 0);  // the cap never kills
  EXPECT_EQ(r.stdout_data, std::string(80, 'a'));
  EXPECT_EQ(r.stderr_data, std::string(20, 'b'));
  EXPECT_FALSE(r.result.stdout_truncated);
  EXPECT_TRUE(r.result.stderr_truncated);
  EXPECT_EQ(r.result.stdout_bytes, 80u);
  EXPECT_EQ(r.result.stderr_bytes, 85u);
}

TEST_F(SandboxdTest, PerStreamCapDiscardsWithoutBlocking) {
  ExecRequest req = ShellRequest("head -c 5000000 /dev/zero; echo tail >&2");
  req.max_stdout_bytes = 10;
  auto r = Run(req);
  EXPECT_EQ(r.stdout_data, std::string(10, '\0'));
  EXPECT_EQ(r.stderr_data, "tail\n");
  EXPECT_TRUE(r.result.stdout_truncated);
  EXPECT_EQ(r.result.stdout_bytes, 5000000u);
}

TEST_F(SandboxdTest, StdinDataThenEof) {
  ExecRequest req = ShellRequest("cat");
  req.stdin_pipe = true;
  EXPECT_EQ(Run(req, "hello\nworld").stdout_data, "hello\nworld");
  // Several MiB through stdin and back out, both directions flow controlled.
  std::string big(3 << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>(i);
  auto r = Run(req, big);
  EXPECT_EQ(r.stdout_data.size(), big.size());
  EXPECT_TRUE(r.stdout_data == big);
}

TEST_F(SandboxdTest, CommandThatIgnoresItsStdinStillFinishes) {
  ExecRequest req = ShellRequest("echo quick");
  req.stdin_pipe = true;
  int64_t t0 = NowMs();
  auto r = Run(req, std::string(3 << 20, 'y'));
  EXPECT_EQ(r.stdout_data, "quick\n");
  EXPECT_LT(NowMs() - t0, 5000);
}

TEST_F(SandboxdTest, StdinIsDevNullByDefault) {
  EXPECT_EQ(Sh("cat; echo end").stdout_data, "end\n");
}

TEST_F(SandboxdTest, ThousandBackgroundChildrenLeaveNoZombies) {
  auto r = Sh("i=0; while [ $i -lt 1000 ]; do (true &); i=$((i+1)); done; echo done");
  EXPECT_EQ(r.stdout_data, "done\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(CountZombieChildren(proc_->pid()), 0);
  EXPECT_EQ(Sh("echo still").stdout_data, "still\n");
}

TEST_F(SandboxdTest, BackgroundChildHoldingThePipesDoesNotHoldTheExec) {
  int64_t t0 = NowMs();
  auto r = Sh("echo started; sleep 3009 &");
  EXPECT_LT(NowMs() - t0, 2000);
  EXPECT_EQ(r.stdout_data, "started\n");
  EXPECT_EQ(r.result.exit_code, 0);
  EXPECT_EQ(CountProcessesMatching("sleep 3009"), 1);  // still running, not SIGPIPEd
  auto killed = protocol::KillAll(*conn_);
  ASSERT_TRUE(killed) << killed.error().ToString();
  EXPECT_GE(*killed, 1u);
  EXPECT_EQ(CountProcessesMatching("sleep 3009"), 0);
}

TEST_F(SandboxdTest, SlowReaderDoesNotStallAnotherExec) {
  // A flood whose output nobody reads: it fills its window and blocks on its own pipe.
  auto flood = conn_->Open(protocol::EncodeExecRequest(ShellRequest("head -c 50000000 /dev/zero")));
  ASSERT_TRUE(flood);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int64_t t0 = NowMs();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(Sh("echo hi").stdout_data, "hi\n");
  EXPECT_LT(NowMs() - t0, 2000);
  ASSERT_TRUE((*flood)->Cancel());
  // Drain to the terminal event: ERROR cancelled.
  for (;;) {
    auto ev = (*flood)->Next(10000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    if (!ev->terminal()) continue;
    ASSERT_EQ(ev->kind, ChannelEvent::Kind::kError);
    EXPECT_EQ(ev->error->code(), ErrorCode::kCancelled);
    break;
  }
}

TEST_F(SandboxdTest, HundredConcurrentExecsOnOneConnection) {
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 100; ++i) {
    threads.emplace_back([&, i] {
      ExecRequest req = ShellRequest("echo $N; head -c $((N * 1000)) /dev/zero | wc -c >&2");
      req.env = {{"N", std::to_string(i)}};
      auto r = protocol::ExecCollect(*conn_, req);
      if (r && r->stdout_data == std::to_string(i) + "\n" &&
          r->stderr_data == std::to_string(i * 1000) + "\n" && r->result.exit_code == 0) {
        ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 100);
  EXPECT_EQ(CountZombieChildren(proc_->pid()), 0);
}

TEST_F(SandboxdTest, SignalReachesTheProcessGroup) {
  auto ch = conn_->Open(protocol::EncodeExecRequest(ShellRequest("echo up; sleep 3010")));
  ASSERT_TRUE(ch);
  // Wait for the INFO pid and the first output.
  std::string out;
  while (out != "up\n") {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev);
    if (ev->kind == ChannelEvent::Kind::kData) out += ev->payload;
  }
  ASSERT_TRUE((*ch)->Signal(SIGTERM));
  for (;;) {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev);
    if (ev->kind != ChannelEvent::Kind::kResult) continue;
    auto res = protocol::DecodeExecResult(ev->payload);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->signal, SIGTERM);
    EXPECT_EQ(res->exit_code, 128 + SIGTERM);
    break;
  }
  EXPECT_EQ(CountProcessesMatching("sleep 3010"), 0);
}

TEST_F(SandboxdTest, SandboxUserHasNoPrivileges) {
  auto r =
      Sh("id -u; id -g; id -G; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|"
         "Seccomp):' /proc/self/status | tr -s '\\t' ' '");
  EXPECT_EQ(r.stdout_data,
            "1000\n1000\n1000\nCapInh: 0000000000000000\nCapPrm: 0000000000000000\n"
            "CapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000\n"
            "NoNewPrivs: 1\nSeccomp: 2\n");
  EXPECT_EQ(Sh("cat /proc/self/oom_score_adj").stdout_data, "0\n");
}

TEST_F(SandboxdTest, RootUserKeepsOnlyDockersCapabilities) {
  ExecRequest req = ShellRequest(
      "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status"
      " | tr -s '\\t' ' '");
  req.user = "root";
  EXPECT_EQ(Run(req).stdout_data,
            "0\nCapEff: 00000000a80425fb\nCapBnd: 00000000a80425fb\nNoNewPrivs: 1\n");
}

TEST_F(SandboxdTest, SeccompAllowsOnlyDockersPersonalities) {
  auto r = Sh("setarch x86_64 -R true 2>&1; echo rc=$?; setarch linux32 uname -m");
  EXPECT_NE(r.stdout_data.find("Operation not permitted"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("rc=1\ni686\n"), std::string::npos) << r.stdout_data;
}

TEST_F(SandboxdTest, SeccompBlocksNamespacesAndKeyring) {
  ExecRequest req = ShellRequest("unshare -U true 2>&1; echo rc=$?");
  req.user = "root";
  auto r = Run(req);
  EXPECT_NE(r.stdout_data.find("Operation not permitted"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("rc=1"), std::string::npos);
  // Ordinary fork/exec and threads still work.
  EXPECT_EQ(Sh("(echo sub) | cat; python3 -c 'import threading; t=threading.Thread(target=print,"
               "args=(\"thread\",)); t.start(); t.join()' 2>/dev/null || echo thread")
                .stdout_data,
            "sub\nthread\n");
}

TEST_F(SandboxdTest, PtyExecWithResize) {
  ExecRequest req = ShellRequest("tty; stty size");
  req.pty = ExecRequest::Pty{100, 30};
  auto r = Run(req);
  EXPECT_EQ(r.result.exit_code, 0);
  EXPECT_NE(r.stdout_data.find("/dev/pts/"), std::string::npos) << r.stdout_data;
  EXPECT_NE(r.stdout_data.find("30 100"), std::string::npos) << r.stdout_data;
}

TEST_F(SandboxdTest, PtyResizeAndStdin) {
  ExecRequest req = ShellRequest("read line; echo got:$line; stty size");
  req.pty = ExecRequest::Pty{80, 24};
  req.stdin_pipe = true;
  auto ch = conn_->Open(protocol::EncodeExecRequest(req));
  ASSERT_TRUE(ch);
  auto info = (*ch)->Next(5000);
  ASSERT_TRUE(info);
  ASSERT_EQ(info->kind, ChannelEvent::Kind::kInfo);
  ASSERT_TRUE((*ch)->Resize(120, 40));
  ASSERT_TRUE((*ch)->Write("hello\n"));
  std::string out;
  for (;;) {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    if (ev->kind == ChannelEvent::Kind::kData) out += ev->payload;
    if (ev->kind == ChannelEvent::Kind::kResult) break;
    ASSERT_NE(ev->kind, ChannelEvent::Kind::kError);
  }
  EXPECT_NE(out.find("got:hello"), std::string::npos) << out;
  EXPECT_NE(out.find("40 120"), std::string::npos) << out;
}

TEST_F(SandboxdTest, CommandsKeepTheOriginalOpenFileLimit) {
  struct rlimit own;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &own), 0);
  EXPECT_EQ(Sh("ulimit -n").stdout_data, std::to_string(own.rlim_cur) + "\n");
}

TEST_F(SandboxdTest, ConnectionLossKillsItsExecsAndReconnectWorks) {
  ExecRequest req;
  req.argv = {"sleep", "3012"};
  req.cwd = ".";
  auto ch = conn_->Open(protocol::EncodeExecRequest(req));
  ASSERT_TRUE(ch);
  auto ev = (*ch)->Next(5000);  // INFO pid: the command runs
  ASSERT_TRUE(ev);
  EXPECT_EQ(CountProcessesMatching("sleep 3012"), 1);
  conn_->Close();
  for (int i = 0; i < 200 && CountProcessesMatching("sleep 3012") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(CountProcessesMatching("sleep 3012"), 0);
  auto c = proc_->Connect();
  ASSERT_TRUE(c) << c.error().ToString();
  conn_ = *c;
  EXPECT_EQ(Sh("echo again").stdout_data, "again\n");
}

TEST_F(SandboxdTest, ConnectionLossAlsoKillsSessionsTheCommandCreated) {
  ExecRequest req = ShellRequest("setsid sleep $((3000+36)) & sleep $((3000+37))");
  auto ch = conn_->Open(protocol::EncodeExecRequest(req));
  ASSERT_TRUE(ch);
  for (int i = 0; i < 500 && CountProcessesMatching("sleep 3036") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(CountProcessesMatching("sleep 3036"), 1);  // its own session, still in the tree
  conn_->Close();
  for (int i = 0; i < 300 && CountProcessesMatching("sleep 303") > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(CountProcessesMatching("sleep 3036"), 0);
  EXPECT_EQ(CountProcessesMatching("sleep 3037"), 0);
  auto c = proc_->Connect();
  ASSERT_TRUE(c) << c.error().ToString();
  conn_ = *c;
}

TEST_F(SandboxdTest, SigtermIsIgnoredOnlyAsPid1) {
  // --no-pid1: SIGTERM stops sandboxd (this is how the harness ends it) and takes its
  // commands with it.
  auto ch = conn_->Open(protocol::EncodeExecRequest(ShellRequest("sleep 3014")));
  ASSERT_TRUE(ch);
  ASSERT_TRUE((*ch)->Next(5000));
  kill(proc_->pid(), SIGTERM);
  for (int i = 0; i < 300 && proc_->Alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(proc_->Alive());
  EXPECT_EQ(CountProcessesMatching("sleep 3014"), 0);
}

}  // namespace
}  // namespace asb::sandboxd::testing

namespace asb::sandboxd::testing {
namespace {

// Figures, not a check: run with --gtest_also_run_disabled_tests --gtest_filter='*Figures*'.
TEST_F(SandboxdTest, DISABLED_Figures) {
  ExecRequest t;
  t.argv = {"/bin/true"};
  t.cwd = ".";
  std::vector<double> ms;
  for (int i = 0; i < 300; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(Run(t).result.exit_code, 0);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  printf("exec round trip of /bin/true: p50 %.3f ms, p99 %.3f ms\n", ms[150], ms[297]);

  ExecRequest flood;
  flood.argv = {"head", "-c", "1073741824", "/dev/zero"};
  flood.cwd = ".";
  auto t0 = std::chrono::steady_clock::now();
  auto ch = conn_->Open(protocol::EncodeExecRequest(flood));
  ASSERT_TRUE(ch);
  uint64_t bytes = 0;
  for (;;) {
    auto ev = (*ch)->Next(60000);
    ASSERT_TRUE(ev);
    if (ev->kind == ChannelEvent::Kind::kData) bytes += ev->payload.size();
    if (ev->terminal()) break;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("stdout throughput: %llu bytes in %.2f s = %.0f MiB/s\n",
         static_cast<unsigned long long>(bytes), s, bytes / s / (1 << 20));
}

// clock.set is a VM guest's (sandboxd as its PID 1, --port): here sandboxd runs on the host,
// whose clock it must never touch, whatever it may be allowed.
TEST_F(SandboxdTest, ClockSetIsRefusedOutsideAVm) {
  Status st = protocol::SetGuestClock(*conn_, 1'000'000'000'000'000'000, 5000);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << st.error().ToString();
  EXPECT_GT(::time(nullptr), 1'700'000'000);  // the host's clock as it was
}

// env.set replaces the base environment of later commands (a warm pool's claim,
// core/warm_pool.h): the config's variables go, the defaults stay, the request's own still win;
// a bad name changes nothing.
TEST_F(SandboxdTest, EnvSetReplacesTheEnvironmentOfLaterCommands) {
  ExecRequest req = ShellRequest("echo \"[$BASE_VAR] [$CLAIMED] [$HOME] [$MINE]\"");
  EXPECT_EQ(Run(req).stdout_data, "[base] [] [/workspace] []\n");
  ASSERT_TRUE(protocol::SetSandboxEnv(*conn_, {{"CLAIMED", "a b=c"}, {"MINE", "set"}}, 5000));
  req.env = {{"MINE", "request"}};
  EXPECT_EQ(Run(req).stdout_data, "[] [a b=c] [/workspace] [request]\n");
  const std::vector<std::map<std::string, std::string>> bad = {
      {{"", "x"}}, {{"A=B", "x"}}, {{std::string("N\0", 2), "x"}}, {{"OK", std::string("v\0", 2)}}};
  for (const auto& env : bad) {
    Status st = protocol::SetSandboxEnv(*conn_, env, 5000);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument) << st.error().ToString();
  }
  req.env = {};
  EXPECT_EQ(Run(req).stdout_data, "[] [a b=c] [/workspace] [set]\n");
}

// stats answers with the kernel's figures wherever sandboxd runs (zeros where it has none).
TEST_F(SandboxdTest, StatsAnswers) {
  auto s = protocol::ReadSandboxStats(*conn_, 5000);
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_GT(s->memory_total_bytes, 0u);  // /proc/meminfo's MemTotal
}

}  // namespace
}  // namespace asb::sandboxd::testing
