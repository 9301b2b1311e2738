// Background processes (proc.* ops) in the real sandboxd binary, driven by the real host
// client. Label: privileged (commands run as uid 1000).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "protocol/proc_client.h"
#include "sandboxd/proc_table.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::Channel;
using protocol::ChannelEvent;
using protocol::ProcInfo;
using protocol::ProcStartRequest;

ProcStartRequest Cmd(const std::string& cmd, bool stdin_pipe = false) {
  ProcStartRequest r;
  r.command = cmd;
  r.cwd = ".";
  r.stdin_pipe = stdin_pipe;
  return r;
}

// Reads an attach channel until `want` appears in the output (or the channel ends, or 10 s).
// Returns the output; *final gets the RESULT's ProcInfo if the channel ended.
std::string ReadUntil(Channel& ch, const std::string& want, std::optional<ProcInfo>* final,
                      uint64_t* skipped = nullptr) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!want.empty() && out.find(want) != std::string::npos) break;
    auto ev = ch.Next(200);
    if (!ev) continue;
    if (ev->kind == ChannelEvent::Kind::kData) out += ev->payload;
    if (ev->kind == ChannelEvent::Kind::kInfo && skipped &&
        ev->payload.find("skipped") != std::string::npos) {
      *skipped = std::stoull(ev->payload.substr(ev->payload.find(':') + 1));
    }
    if (ev->kind == ChannelEvent::Kind::kResult) {
      if (final) *final = *protocol::DecodeProcInfo(ev->payload);
      break;
    }
    if (ev->kind == ChannelEvent::Kind::kError) {
      ADD_FAILURE() << ev->error->ToString();
      break;
    }
  }
  return out;
}

TEST_F(SandboxdTest, ProcStdinAttachReplayAndExit) {
  auto p = protocol::StartProcess(
      *conn_, Cmd("echo start; read x; echo got $x; read y; echo bye $y", true));
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->state, "running");
  EXPECT_TRUE(p->stdin_open);
  auto list = protocol::ListProcesses(*conn_);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].pid, p->pid);

  // Two attachers: one with replay (sees "start"), one live only.
  auto a1 = protocol::AttachProcess(*conn_, {p->pid, 4096, false});
  ASSERT_TRUE(a1);
  std::optional<ProcInfo> fin;
  EXPECT_EQ(ReadUntil(**a1, "start\n", &fin), "start\n");
  auto a2 = protocol::AttachProcess(*conn_, {p->pid, 0, false});
  ASSERT_TRUE(a2);
  auto n = protocol::WriteProcessStdin(*conn_, p->pid, "one\n");
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(*n, 4u);
  EXPECT_EQ(ReadUntil(**a1, "got one\n", &fin), "got one\n");
  EXPECT_EQ(ReadUntil(**a2, "got one\n", &fin), "got one\n");
  ASSERT_TRUE(protocol::WriteProcessStdin(*conn_, p->pid, "two\n"));
  std::string rest = ReadUntil(**a1, "", &fin);
  EXPECT_EQ(rest, "bye two\n");
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->state, "exited");
  EXPECT_EQ(fin->exit_code, 0);
  // Still listed, with its exit code; stdin now refused.
  auto after = protocol::ListProcesses(*conn_);
  ASSERT_TRUE(after);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].state, "exited");
  auto late = protocol::WriteProcessStdin(*conn_, p->pid, "x");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code(), ErrorCode::kConflict);
  auto none = protocol::SignalProcess(*conn_, 999999, SIGTERM);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::kNotFound);
}

TEST_F(SandboxdTest, ProcCatEchoesAndExitsAtClose) {
  ProcStartRequest r;
  r.argv = {"cat"};
  r.cwd = ".";
  r.stdin_pipe = true;
  auto p = protocol::StartProcess(*conn_, r);
  ASSERT_TRUE(p) << p.error().ToString();
  auto a = protocol::AttachProcess(*conn_, {p->pid, 0, false});
  ASSERT_TRUE(a);
  ASSERT_TRUE(protocol::WriteProcessStdin(*conn_, p->pid, "hello cat\n"));
  std::optional<ProcInfo> fin;
  EXPECT_EQ(ReadUntil(**a, "hello cat\n", &fin), "hello cat\n");
  ASSERT_TRUE(protocol::CloseProcessStdin(*conn_, p->pid));
  ReadUntil(**a, "", &fin);
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->exit_code, 0);
}

TEST_F(SandboxdTest, ProcOutlivesItsConnectionAndKillTakesTheWholeTree) {
  auto p = protocol::StartProcess(
      *conn_, Cmd("sleep 3031 & setsid sleep 3032 & echo ready; exec sleep 3033"));
  ASSERT_TRUE(p) << p.error().ToString();
  auto a = protocol::AttachProcess(*conn_, {p->pid, 1024, false});
  ASSERT_TRUE(a);
  EXPECT_EQ(ReadUntil(**a, "ready\n", nullptr), "ready\n");
  conn_->Close();
  auto conn2 = proc_->Connect();
  ASSERT_TRUE(conn2);
  auto list = protocol::ListProcesses(**conn2);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].state, "running");
  // "ready" comes before the shell's own `exec sleep 3033`, and the two background children may
  // not have exec'd yet either: wait for the three sleeps themselves.
  EXPECT_TRUE(WaitUntil([] {
    return CountProcessesWithCommandLine("sleep 3031") == 1 &&
           CountProcessesWithCommandLine("sleep 3032") == 1 &&
           CountProcessesWithCommandLine("sleep 3033") == 1;
  })) << CountProcessesMatching("sleep 303")
      << " processes match";
  EXPECT_EQ(CountProcessesMatching("sleep 303"), 3);
  auto killed = protocol::KillProcess(**conn2, p->pid);
  ASSERT_TRUE(killed) << killed.error().ToString();
  EXPECT_EQ(killed->state, "exited");
  EXPECT_EQ(killed->signal, SIGKILL);
  EXPECT_EQ(CountProcessesMatching("sleep 303"), 0);
  conn_ = *conn2;
}

TEST_F(SandboxdTest, ProcSignalReachesTheProcessGroup) {
  auto p = protocol::StartProcess(
      *conn_, Cmd("trap 'echo parent-term; wait; exit 3' TERM; "
                  "sh -c 'trap \"echo child-term; exit 0\" TERM; echo child-ready; "
                  "while :; do sleep 0.05; done' & "
                  "while :; do sleep 0.05; done"));
  ASSERT_TRUE(p) << p.error().ToString();
  auto a = protocol::AttachProcess(*conn_, {p->pid, 1024, false});
  ASSERT_TRUE(a);
  EXPECT_EQ(ReadUntil(**a, "child-ready\n", nullptr), "child-ready\n");
  ASSERT_TRUE(protocol::SignalProcess(*conn_, p->pid, SIGTERM));
  std::optional<ProcInfo> fin;
  std::string out = ReadUntil(**a, "", &fin);
  EXPECT_NE(out.find("parent-term"), std::string::npos) << out;
  EXPECT_NE(out.find("child-term"), std::string::npos) << out;
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->exit_code, 3);
}

TEST_F(SandboxdTest, ProcPtyPythonInteractive) {
  if (system("command -v python3 >/dev/null") != 0) GTEST_SKIP() << "no python3 on the host";
  ProcStartRequest r;
  r.argv = {"python3", "-i", "-q"};
  r.cwd = ".";
  r.pty = protocol::ExecRequest::Pty{100, 30};
  auto p = protocol::StartProcess(*conn_, r);
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->pty);
  EXPECT_TRUE(p->stdin_open);
  auto a = protocol::AttachProcess(*conn_, {p->pid, 4096, true});
  ASSERT_TRUE(a);
  EXPECT_NE(ReadUntil(**a, ">>> ", nullptr).find(">>> "), std::string::npos);
  ASSERT_TRUE((*a)->Write("6*7\n"));
  // Wait for the next prompt too: readline may drop typeahead while it sets up a line.
  EXPECT_NE(ReadUntil(**a, "42\r\n>>> ", nullptr).find("42\r\n>>> "), std::string::npos);
  ASSERT_TRUE(protocol::ResizeProcess(*conn_, p->pid, 132, 43));
  ASSERT_TRUE((*a)->Write("import os; print(os.get_terminal_size())\n"));
  std::string sized = ReadUntil(**a, "columns=132, lines=43", nullptr);
  EXPECT_NE(sized.find("columns=132, lines=43"), std::string::npos) << sized;
  ASSERT_TRUE((*a)->Write("exit()\n"));
  std::optional<ProcInfo> fin;
  ReadUntil(**a, "", &fin);
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->exit_code, 0);
  auto no_pty = protocol::ResizeProcess(*conn_, p->pid, 80, 24);
  EXPECT_FALSE(no_pty);
}

TEST_F(SandboxdTest, ProcRingKeepsOnlyTheLastBytesAndSkipsAreReported) {
  ProcStartRequest r = Cmd("head -c 10000 /dev/zero | tr '\\0' a; echo; echo end; sleep 0.3");
  r.ring_bytes = 1024;
  auto p = protocol::StartProcess(*conn_, r);
  ASSERT_TRUE(p) << p.error().ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto a = protocol::AttachProcess(*conn_, {p->pid, 1 << 20, false});
  ASSERT_TRUE(a);
  std::optional<ProcInfo> fin;
  std::string out = ReadUntil(**a, "", &fin);
  EXPECT_EQ(out.size(), 1024u);
  EXPECT_EQ(out.substr(out.size() - 5), "\nend\n");
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->output_bytes, 10005u);
  // Over the limits at the boundary.
  r.ring_bytes = protocol::kProcRingMaxBytes + 1;
  auto big = protocol::StartProcess(*conn_, r);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::kInvalidArgument);
  r.ring_bytes = protocol::kProcRingMaxBytes;
  r.command = "true";
  EXPECT_TRUE(protocol::StartProcess(*conn_, r));
  r.tag = std::string(257, 't');
  EXPECT_FALSE(protocol::StartProcess(*conn_, r));
  r.tag = std::string(256, 't');
  EXPECT_TRUE(protocol::StartProcess(*conn_, r));
}

TEST_F(SandboxdTest, ProcStartFailureIsAnError) {
  ProcStartRequest r = Cmd("true");
  r.cwd = "/nonexistent-dir";
  auto p = protocol::StartProcess(*conn_, r);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kInvalidArgument);
  auto list = protocol::ListProcesses(*conn_);
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->empty());
}

// The sum of ring caps of kept processes is bounded per daemon (ProcTable::kRingBudgetBytes,
// security review W2): exactly at the budget starts, one byte over is limit_exceeded; exited
// processes are forgotten oldest-first to make room, running ones never.
TEST_F(SandboxdTest, ProcRingBudgetBoundsTheSumOfRingCaps) {
  constexpr uint64_t kMax = protocol::kProcRingMaxBytes;
  static_assert(ProcTable::kRingBudgetBytes % kMax == 0);
  const size_t kFull = ProcTable::kRingBudgetBytes / kMax;  // 4 rings of 4 MiB
  auto start = [&](const std::string& cmd, uint64_t ring) {
    ProcStartRequest r = Cmd(cmd);
    r.ring_bytes = ring;
    return protocol::StartProcess(*conn_, r);
  };
  // Two exited (oldest first), then running ones up to exactly the budget.
  auto e1 = start("true", kMax);
  ASSERT_TRUE(e1) << e1.error().ToString();
  auto e2 = start("true", kMax);
  ASSERT_TRUE(e2) << e2.error().ToString();
  auto exited = [&](int pid) {
    for (int i = 0; i < 100; ++i) {
      auto l = protocol::ListProcesses(*conn_);
      if (!l) return false;
      for (const auto& p : *l) {
        if (p.pid == pid && p.state == "exited") return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  ASSERT_TRUE(exited(e1->pid));
  ASSERT_TRUE(exited(e2->pid));
  std::vector<int> running;
  for (size_t i = 0; i + 3 < kFull; ++i) {  // 1 running of 4 MiB
    auto p = start("sleep 30", kMax);
    ASSERT_TRUE(p) << p.error().ToString();
    running.push_back(p->pid);
  }
  // 2 exited + 1 running = 12 MiB; one more 4 MiB - 1 fits with nothing forgotten.
  auto r1 = start("sleep 30", kMax - 1);
  ASSERT_TRUE(r1) << r1.error().ToString();
  running.push_back(r1->pid);
  auto pids = [&] {
    std::vector<int> out;
    auto l = protocol::ListProcesses(*conn_);
    EXPECT_TRUE(l);
    if (l) {
      for (const auto& p : *l) out.push_back(p.pid);
    }
    return out;
  };
  EXPECT_EQ(pids().size(), 4u);
  // 4 MiB more fits only by forgetting an exited one: the oldest, not the newer.
  auto r2 = start("sleep 30", kMax);
  ASSERT_TRUE(r2) << r2.error().ToString();
  running.push_back(r2->pid);
  auto now = pids();
  EXPECT_EQ(std::count(now.begin(), now.end(), e1->pid), 0);
  EXPECT_EQ(std::count(now.begin(), now.end(), e2->pid), 1);
  // Again: now the other exited one goes.
  auto r3 = start("sleep 30", kMax);
  ASSERT_TRUE(r3) << r3.error().ToString();
  running.push_back(r3->pid);
  now = pids();
  EXPECT_EQ(std::count(now.begin(), now.end(), e2->pid), 0);
  EXPECT_EQ(now.size(), running.size());
  // Running processes hold exactly 16 MiB - 1: 1 byte more fits, 2 bytes do not.
  auto over = start("true", 2);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(over.error().message().find("16777216 bytes (16777215 in use"), std::string::npos)
      << over.error().ToString();
  auto last = start("sleep 30", 1);
  ASSERT_TRUE(last) << last.error().ToString();
  running.push_back(last->pid);
  EXPECT_FALSE(start("true", 1));
  // No running process was forgotten.
  now = pids();
  for (int pid : running) EXPECT_EQ(std::count(now.begin(), now.end(), pid), 1) << pid;
  // Killing one frees nothing until a start needs room: then its record goes.
  ASSERT_TRUE(protocol::KillProcess(*conn_, running.front()));
  auto again = start("sleep 30", kMax);
  ASSERT_TRUE(again) << again.error().ToString();
  running.push_back(again->pid);
  now = pids();
  EXPECT_EQ(std::count(now.begin(), now.end(), running.front()), 0);
  for (size_t i = 1; i < running.size(); ++i) {
    ASSERT_TRUE(protocol::KillProcess(*conn_, running[i])) << running[i];
  }
}

// Stdin waiting in sandboxd is bounded for all processes together (ProcTable::kStdinBudgetBytes;
// 256 processes x 1 MiB OOM-killed sandboxd): exactly at the budget passes, one byte over is
// limit_exceeded.
TEST_F(SandboxdTest, ProcStdinBudgetBoundsAllQueuesTogether) {
  constexpr uint64_t kBudget = ProcTable::kStdinBudgetBytes;
  std::vector<int> pids;
  for (int i = 0; i < 5; ++i) {  // none reads its stdin
    ProcStartRequest r = Cmd("exec sleep 30", /*stdin_pipe=*/true);
    r.ring_bytes = 1;
    auto p = protocol::StartProcess(*conn_, r);
    ASSERT_TRUE(p) << p.error().ToString();
    pids.push_back(p->pid);
  }
  const std::string mib(ProcTable::kMaxStdinQueue, 'x');
  // Four fill their pipe and queue (just under) 1 MiB each; the fifth reaches the budget.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(protocol::WriteProcessStdin(*conn_, pids[i], mib));
  auto refused = protocol::WriteProcessStdin(*conn_, pids[4], mib);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), ErrorCode::kLimitExceeded);
  const std::string& msg = refused.error().message();
  ASSERT_NE(msg.find("exceed 4194304 bytes waiting in total ("), std::string::npos) << msg;
  uint64_t waiting = std::stoull(msg.substr(msg.find(" total (") + 8));
  ASSERT_LE(waiting, kBudget);
  ASSERT_GT(waiting, kBudget - ProcTable::kMaxStdinQueue);
  // Exactly up to the budget passes, then one byte more does not.
  if (waiting < kBudget) {
    auto fill = protocol::WriteProcessStdin(*conn_, pids[4], std::string(kBudget - waiting, 'y'));
    ASSERT_TRUE(fill) << fill.error().ToString();
  }
  auto one = protocol::WriteProcessStdin(*conn_, pids[4], "z");
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_NE(one.error().message().find("(4194304 waiting)"), std::string::npos)
      << one.error().ToString();
  // Killing a process gives its queue back.
  ASSERT_TRUE(protocol::KillProcess(*conn_, pids[0]));
  EXPECT_TRUE(protocol::WriteProcessStdin(*conn_, pids[4], "z"));
  for (size_t i = 1; i < pids.size(); ++i) ASSERT_TRUE(protocol::KillProcess(*conn_, pids[i]));
}

// An attacher that does not read cannot keep a forgotten process's ring alive outside the
// budget: when the table forgets the process its ring goes, and the attacher is told what it
// skipped and ends.
TEST_F(SandboxdTest, ProcForgottenRingIsFreedUnderAStalledAttacher) {
  constexpr uint64_t kMax = protocol::kProcRingMaxBytes;
  ProcStartRequest r = Cmd("head -c 1048576 /dev/zero");
  r.ring_bytes = kMax;
  auto old = protocol::StartProcess(*conn_, r);
  ASSERT_TRUE(old) << old.error().ToString();
  auto a = protocol::AttachProcess(*conn_, {old->pid, kMax, false});
  ASSERT_TRUE(a) << a.error().ToString();
  // Not read: after its first window (256 KiB) the attacher stalls. Fill the budget with
  // running rings, which forgets the exited process.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<int> running;
  for (uint64_t i = 0; i < ProcTable::kRingBudgetBytes / kMax; ++i) {
    ProcStartRequest s = Cmd("sleep 30");
    s.ring_bytes = kMax;
    auto p = protocol::StartProcess(*conn_, s);
    ASSERT_TRUE(p) << p.error().ToString();
    running.push_back(p->pid);
  }
  auto list = protocol::ListProcesses(*conn_);
  ASSERT_TRUE(list);
  for (const auto& p : *list) EXPECT_NE(p.pid, old->pid);
  uint64_t skipped = 0;
  std::optional<ProcInfo> fin;
  std::string out = ReadUntil(**a, "", &fin, &skipped);
  ASSERT_TRUE(fin);
  EXPECT_EQ(fin->output_bytes, 1048576u);
  EXPECT_GT(skipped, 0u);
  EXPECT_EQ(out.size() + skipped, 1048576u);
  for (int pid : running) ASSERT_TRUE(protocol::KillProcess(*conn_, pid)) << pid;
}

}  // namespace
}  // namespace asb::sandboxd::testing
