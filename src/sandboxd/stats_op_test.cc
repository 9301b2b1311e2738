// The stats operation's reading (stats_op.h) against a cgroup directory and a /proc of files
// made by the test, and its wire form (stats_messages.h).
#include "sandboxd/stats_op.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/ids.h"
#include "common/unique_fd.h"

namespace asb::sandboxd {
namespace {

namespace fs = std::filesystem;

void Put(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(KeyedValue, ReadsKeysAndScalesKilobytes) {
  const std::string meminfo = "MemTotal:         200396 kB\nMemFree:  1000 kB\n";
  EXPECT_EQ(KeyedValue(meminfo, "MemTotal"), 200396ull * 1024);
  EXPECT_EQ(KeyedValue("nr_free_pages 12\noom_kill 3\n", "oom_kill"), 3u);
  EXPECT_EQ(KeyedValue("usage_usec 1500\nuser_usec 1000\n", "usage_usec"), 1500u);
  EXPECT_EQ(KeyedValue("max 0\n", "max"), 0u);
  EXPECT_EQ(KeyedValue("oom_kill_x 9\n", "oom_kill"), 0u);  // whole keys only
  EXPECT_EQ(KeyedValue("", "max"), 0u);
}

TEST(ReadSandboxStats, ReadsTheCommandsCgroupAndProc) {
  const fs::path dir = fs::temp_directory_path() / ("asb-stats-" + RandomHex(4));
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "proc");
  Put(dir / "work/cgroup.procs", "");
  Put(dir / "work/memory.current", "1048576\n");
  Put(dir / "work/memory.peak", "4194304\n");
  Put(dir / "work/pids.current", "7\n");
  Put(dir / "work/pids.events", "max 2\n");
  Put(dir / "work/cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
  Put(dir / "proc/meminfo", "MemTotal:  262144 kB\nMemAvailable: 100 kB\n");
  Put(dir / "proc/vmstat", "pgfault 10\noom_kill 1\n");
  UniqueFd procs(::open((dir / "work/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(procs);

  const protocol::SandboxStats s = ReadSandboxStats({procs.get()}, (dir / "proc").string());
  EXPECT_EQ(s.memory_bytes, 1048576u);
  EXPECT_EQ(s.memory_peak_bytes, 4194304u);
  EXPECT_EQ(s.memory_total_bytes, 262144ull * 1024);
  EXPECT_EQ(s.pids, 7u);
  EXPECT_EQ(s.pids_limit_hits, 2u);
  EXPECT_EQ(s.cpu_usage_ns, 2'500'000u);
  EXPECT_EQ(s.oom_kills, 1u);

  // Missing files are zeros, not errors.
  const protocol::SandboxStats none = ReadSandboxStats({}, (dir / "nothing").string());
  EXPECT_EQ(none.memory_total_bytes, 0u);
  EXPECT_EQ(none.oom_kills, 0u);
  fs::remove_all(dir);
}

TEST(SandboxStatsMessage, RoundTripsAndPinsItsBytes) {
  protocol::SandboxStats s;
  s.memory_bytes = 1;
  s.memory_peak_bytes = 2;
  s.memory_total_bytes = 3;
  s.pids = 4;
  s.cpu_usage_ns = 5;
  s.oom_kills = 6;
  s.pids_limit_hits = 7;
  const std::string json = protocol::EncodeSandboxStats(s);
  EXPECT_EQ(json, R"({"memory_bytes":1,"memory_peak_bytes":2,"memory_total_bytes":3,"pids":4,)"
                  R"("cpu_usage_ns":5,"oom_kills":6,"pids_limit_hits":7})");
  auto back = protocol::DecodeSandboxStats(json);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pids_limit_hits, 7u);
  EXPECT_EQ(back->cpu_usage_ns, 5u);
  EXPECT_FALSE(protocol::DecodeSandboxStats(R"({"pids":"many"})"));
}

}  // namespace
}  // namespace asb::sandboxd
