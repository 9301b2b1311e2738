// End-to-end tests of `agent-sandbox run` with the real binary, the real ns backend, sandboxd and
// the base template (CTest label `privileged`). Each test runs the binary with a private data
// directory (whose templates/base/rootfs links to the real template) and checks afterwards that
// the sandbox left nothing behind: no state directory entry, mount, cgroup, loop device or
// process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Outcome {
  int exit_code = -1;  // exit status, or 128+signal
  std::string out, err;
  double seconds = 0;
  double first_stdout_seconds = -1;  // when the first stdout byte arrived
};

std::string Bin() {
  const char* env = std::getenv("AGENT_SANDBOX_BIN");
  return env != nullptr && *env != '\0' ? env : ASB_TEST_AGENT_SANDBOX_BIN;
}

std::string ReadFileOr(const fs::path& p, std::string fallback = {}) {
  std::ifstream in(p);
  if (!in) return fallback;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs agent-sandbox with `args`, feeding `input` to its stdin (closed after), and collects both
// streams. `signals` are sent to it, each {seconds after the first stdout byte, signal}.
using TimedSignals = std::vector<std::pair<double, int>>;
Outcome RunBin(const std::vector<std::string>& args, const std::string& input = {},
               double kill_after_s = 120, TimedSignals signals = {}) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  EXPECT_EQ(::pipe2(in_pipe, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(out_pipe, O_CLOEXEC), 0);
  EXPECT_EQ(::pipe2(err_pipe, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<std::string> all = {Bin()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  auto start = Clock::now();
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  Outcome o;
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << strerror(rc);
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return o;
  }
  (void)!::write(in_pipe[1], input.data(), input.size());
  ::close(in_pipe[1]);
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  struct pollfd pfds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  size_t next_signal = 0;
  while (open_fds > 0) {
    if (o.first_stdout_seconds >= 0 && next_signal < signals.size() &&
        elapsed() >= o.first_stdout_seconds + signals[next_signal].first) {
      ::kill(pid, signals[next_signal++].second);
    }
    if (!killed && elapsed() > kill_after_s) {
      ADD_FAILURE() << "agent-sandbox did not finish within " << kill_after_s << " s; killing";
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (::poll(pfds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (pfds[i].fd < 0 || pfds[i].revents == 0) continue;
      char buf[65536];
      ssize_t n = ::read(pfds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(pfds[i].fd);
        pfds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0 && o.first_stdout_seconds < 0) o.first_stdout_seconds = elapsed();
      (i == 0 ? o.out : o.err).append(buf, static_cast<size_t>(n));
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  o.seconds = elapsed();
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (namespaces, cgroups, loop devices)";
    if (!fs::exists(Bin())) GTEST_SKIP() << "agent-sandbox binary missing: " << Bin();
    const char* dd = std::getenv("AGENT_SANDBOX_DATA_DIR");
    fs::path real_rootfs =
        fs::path(dd != nullptr && *dd ? dd : "/var/lib/agent-sandbox") / "templates/base/rootfs";
    if (!fs::exists(real_rootfs / "usr/bin/python3")) {
      GTEST_SKIP() << "base template missing at " << real_rootfs
                   << " (sudo bash scripts/build-template.sh base)";
    }
    char tmpl[] = "/tmp/asb-run-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "templates/base");
    fs::create_directory_symlink(real_rootfs, dir_ / "templates/base/rootfs");
    cidfile_ = dir_ / "cid";
  }

  void TearDown() override {
    if (dir_.empty()) return;
    if (!::testing::Test::HasFailure()) ExpectNothingLeft();
    std::error_code ec;
    fs::remove(dir_ / "templates/base/rootfs", ec);  // the symlink, never its target
    fs::remove_all(dir_, ec);
  }

  // agent-sandbox run with the private data dir and a cidfile, then the given arguments.
  Outcome Run(std::vector<std::string> args, const std::string& input = {},
              TimedSignals signals = {}) {
    std::vector<std::string> full = {"run", "--data-dir", dir_.string(), "--cidfile",
                                     cidfile_.string()};
    full.insert(full.end(), args.begin(), args.end());
    Outcome o = RunBin(full, input, 120, std::move(signals));
    std::string id = ReadFileOr(cidfile_);
    while (!id.empty() && id.back() == '\n') id.pop_back();
    if (!id.empty()) ids_.push_back(id);
    return o;
  }

  // Whether a process runs from our data directory or names one of our sandboxes.
  bool OursRun() {
    std::error_code ec;
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
      std::string name = p.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = ReadFileOr(p.path() / "cmdline");
      for (auto& c : cmdline) c = c == '\0' ? ' ' : c;
      bool ours = cmdline.find(dir_.string()) != std::string::npos;
      for (const auto& id : ids_) ours = ours || cmdline.find(id) != std::string::npos;
      if (ours) return true;
    }
    return false;
  }

  void ExpectNothingLeft() {
    // After a command that ended, run hands the destroy to its watcher and exits at once
    // (RunClaim::HandOff): the watcher finishes within tens of milliseconds. Give it 10 s.
    for (int i = 0; i < 1000 && OursRun(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // State directory: every sandbox's entry is gone.
    std::error_code ec;
    if (!ids_.empty()) {
      EXPECT_TRUE(fs::is_directory(dir_ / "run")) << "the state dir moved?";
    }
    // (Dot entries are the backend's own bookkeeping, e.g. its uid-slot table.)
    for (const auto& e : fs::directory_iterator(dir_ / "run", ec)) {
      if (e.path().filename().string().starts_with(".")) continue;
      ADD_FAILURE() << "left in the state dir: " << e.path();
    }
    std::string mountinfo = ReadFileOr("/proc/self/mountinfo");
    std::string losetup;
    if (FILE* p = ::popen("losetup -a 2>/dev/null", "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, p)) > 0) losetup.append(buf, n);
      ::pclose(p);
    }
    EXPECT_EQ(mountinfo.find(dir_.string()), std::string::npos) << "a mount below " << dir_;
    EXPECT_EQ(losetup.find(dir_.string()), std::string::npos) << "a loop device on " << dir_;
    for (const auto& id : ids_) {
      EXPECT_EQ(mountinfo.find(id), std::string::npos) << "a mount of " << id;
      EXPECT_EQ(losetup.find(id), std::string::npos) << "a loop device of " << id;
      // cgroups: v1 /sys/fs/cgroup/<ctrl>/agent-sandbox-run/<id>, v2 .../agent-sandbox-run/<id>.
      for (auto it = fs::recursive_directory_iterator(
               "/sys/fs/cgroup", fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        if (it.depth() >= 3) {
          it.disable_recursion_pending();
          continue;
        }
        if (it->path().filename() == id) ADD_FAILURE() << "cgroup left: " << it->path();
      }
    }
    // Processes: nothing runs from our data directory (sandboxd's socket lives there).
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
      std::string name = p.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = ReadFileOr(p.path() / "cmdline");
      for (auto& c : cmdline) c = c == '\0' ? ' ' : c;
      bool ours = cmdline.find(dir_.string()) != std::string::npos;
      for (const auto& id : ids_) ours = ours || cmdline.find(id) != std::string::npos;
      if (ours) ADD_FAILURE() << "process left: " << name << " " << cmdline;
    }
  }

  fs::path dir_;
  fs::path cidfile_;
  std::vector<std::string> ids_;
};

TEST_F(RunTest, PythonPrintsAndExitsZero) {
  Outcome o = Run({"--", "python3", "-c", "print(1)"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "1\n");
  EXPECT_EQ(o.err, "");
  ASSERT_EQ(ids_.size(), 1u);
  EXPECT_TRUE(ids_[0].starts_with("sb_") && ids_[0].size() == 19) << ids_[0];
}

TEST_F(RunTest, ExitCodeIsPassedThrough) {
  EXPECT_EQ(Run({"--", "sh", "-c", "exit 3"}).exit_code, 3);
  EXPECT_EQ(Run({"--", "false"}).exit_code, 1);
}

TEST_F(RunTest, SignalDeathIs128PlusSignal) {
  EXPECT_EQ(Run({"--", "sh", "-c", "kill -TERM $$"}).exit_code, 128 + SIGTERM);
}

TEST_F(RunTest, StdoutAndStderrStaySeparate) {
  Outcome o = Run({"--", "sh", "-c", "echo out; echo err >&2; echo out2"});
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out, "out\nout2\n");
  EXPECT_EQ(o.err, "err\n");
}

TEST_F(RunTest, ArgvIsNotShellExpanded) {
  Outcome o = Run({"--", "printf", "%s\\n", "a b", "$HOME", "*"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "a b\n$HOME\n*\n");
}

TEST_F(RunTest, OutputIsStreamedAsItComes) {
  Outcome o = Run({"--", "sh", "-c", "echo first; sleep 2; echo second"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "first\nsecond\n");
  ASSERT_GE(o.first_stdout_seconds, 0);
  EXPECT_LT(o.first_stdout_seconds + 1.5, o.seconds)
      << "first byte at " << o.first_stdout_seconds << " s, end at " << o.seconds << " s";
}

TEST_F(RunTest, StdinIsClosedUnlessInteractive) {
  Outcome closed = Run({"--", "cat"}, "ignored");
  EXPECT_EQ(closed.exit_code, 0) << closed.err;
  EXPECT_EQ(closed.out, "");
  Outcome fed = Run({"-i", "--", "sh", "-c", "tr a-z A-Z; echo done"}, "hello\nworld\n");
  EXPECT_EQ(fed.exit_code, 0) << fed.err;
  EXPECT_EQ(fed.out, "HELLO\nWORLD\ndone\n");
}

TEST_F(RunTest, EnvWorkdirAndIdentity) {
  Outcome o = Run({"--env", "GREETING=hi there", "--workdir", "/tmp", "--", "sh", "-c",
                   "echo \"$GREETING\"; pwd; id -u; hostname; echo $HOME"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "hi there\n/tmp\n1000\nsandbox\n/workspace\n");
}

TEST_F(RunTest, TimeoutGives124) {
  Outcome o = Run({"--timeout", "1", "--", "sh", "-c", "echo started; sleep 60; echo never"});
  EXPECT_EQ(o.exit_code, 124) << o.err;
  EXPECT_EQ(o.out, "started\n");
  EXPECT_LT(o.seconds, 15);
}

TEST_F(RunTest, MissingProgramIs127) {
  Outcome o = Run({"--", "no-such-program-xyz"});
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_NE(o.err.find("no-such-program-xyz"), std::string::npos) << o.err;
}

// The limits are the server's (asb::core::Limits, ADR 0017): at a limit passes, one past it is
// refused before anything is created, with the API's message.
TEST_F(RunTest, LimitsAreTheServersAtTheLimitPassesOneOverFails) {
  const asb::core::Limits l = asb::core::Limits::Defaults();
  const std::string max_mem = std::to_string(l.max_memory_mb);
  const std::string over_mem = std::to_string(l.max_memory_mb + 1);
  Outcome over = Run({"--memory-mb", over_mem, "--", "true"});
  EXPECT_EQ(over.exit_code, 125) << over.err;
  EXPECT_NE(over.err.find("memory_mb must be between " + std::to_string(l.min_memory_mb) + " and " +
                          max_mem + ", got " + over_mem),
            std::string::npos)
      << over.err;
  Outcome pids = Run({"--pids-limit", std::to_string(l.max_pids_limit + 1), "--", "true"});
  EXPECT_EQ(pids.exit_code, 125) << pids.err;
  EXPECT_NE(pids.err.find("pids_limit must be between"), std::string::npos) << pids.err;
  Outcome at =
      Run({"--memory-mb", max_mem, "--pids-limit", std::to_string(l.max_pids_limit), "--", "true"});
  EXPECT_EQ(at.exit_code, 0) << at.err;
}

TEST_F(RunTest, UnknownTemplateIs125WithMessage) {
  Outcome o = Run({"--template", "nope", "--", "true"});
  EXPECT_EQ(o.exit_code, 125);
  EXPECT_TRUE(o.err.starts_with("agent-sandbox: ")) << o.err;
  EXPECT_NE(o.err.find("available: base"), std::string::npos) << o.err;
}

TEST_F(RunTest, SigintIsForwardedAndTheSandboxIsDestroyed) {
  Outcome o = Run({"--", "sh", "-c", "echo ready; exec sleep 60"}, {}, {{0.0, SIGINT}});
  EXPECT_EQ(o.exit_code, 128 + SIGINT) << o.err;
  EXPECT_EQ(o.out, "ready\n");
  EXPECT_LT(o.seconds, 15);
}

TEST_F(RunTest, ASecondSignalCancelsACommandThatIgnoresTheFirst) {
  // The command ignores SIGTERM, so the first forwarded signal does nothing; the second one
  // makes agent-sandbox cancel the command. It still exits promptly and cleans up.
  Outcome o = Run({"--", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"}, {},
                  {{0.0, SIGTERM}, {1.0, SIGTERM}});
  EXPECT_EQ(o.exit_code, 128 + SIGTERM) << o.err;
  EXPECT_EQ(o.out, "ready\n");
  EXPECT_GT(o.seconds, 1.0);
  EXPECT_LT(o.seconds, 15);
}

}  // namespace
