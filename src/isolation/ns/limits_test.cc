// Privileged tests of the ns backend's limits: pids (E6, fork bomb), memory (OOM), zombies,
// the workspace quota. Each checks that the sandbox still answers afterwards.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "isolation/ns/cgroup.h"
#include "isolation/ns/files.h"
#include "isolation/ns/ns_test_support.h"

namespace asb::isolation::ns::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `echo alive` until it works; returns how long that took (ms), or -1 after `limit_ms`.
double MsUntilAlive(Sandbox& sb, int64_t limit_ms) {
  const auto t0 = Clock::now();
  for (;;) {
    protocol::ExecRequest req;
    req.command = "echo alive";
    req.timeout_ms = 2000;
    auto r = protocol::ExecCollect(*sb.connection(), req);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (r && r->stdout_data == "alive\n") return ms;
    if (ms > limit_ms) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST_F(NsBackendTest, E6PidsLimitStopsForkLoop) {
  auto spec = Spec();
  spec.pids_limit = 32;
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  auto r = Sh(*sb, "for i in $(seq 100); do sleep 2 & done; wait; echo finished");
  std::printf("[ns] E6: exit %d, stdout %s, stderr (first 200 bytes) %s\n", r.result.exit_code,
              r.stdout_data.c_str(), r.stderr_data.substr(0, 200).c_str());
  EXPECT_TRUE(r.stderr_data.find("fork") != std::string::npos ||
              r.stderr_data.find("Resource temporarily unavailable") != std::string::npos)
      << r.stderr_data;
  auto usage = sb->Usage();
  ASSERT_TRUE(usage);
  EXPECT_LE(usage->pids, 32u);
  EXPECT_GE(MsUntilAlive(*sb, 5000), 0);
}

TEST_F(NsBackendTest, ForkBombIsContained) {
  auto spec = Spec();
  spec.pids_limit = 64;  // the limit is in place before the bomb runs (pid_max is 32768 here)
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  protocol::ExecRequest bomb;
  // The shell stays (sleep) so that the bomb keeps running until the timeout kills the group.
  bomb.argv = {"/bin/bash", "-c", ":(){ :|:& };:; sleep 10"};
  bomb.timeout_ms = 2000;
  bomb.kill_grace_ms = 200;
  bomb.max_output_bytes = 4096;
  const auto t0 = Clock::now();
  uint64_t peak_pids = 0;
  std::thread watch([&] {
    for (int i = 0; i < 15; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (auto u = sb->Usage()) peak_pids = std::max(peak_pids, u->pids);
    }
  });
  auto r = protocol::ExecCollect(*sb->connection(), bomb);
  watch.join();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->result.timed_out);
  EXPECT_GE(peak_pids, 60u) << "the bomb never reached the pids limit";
  // Commands get the limit; sandboxd (and a command between its fork and its move into the
  // work cgroup) count beside them, within the headroom (cgroup.h).
  EXPECT_LE(peak_pids, 64u + kDaemonPidsHeadroom);
  std::printf("[ns] fork bomb: exit %d, signal %d, timed_out %d, stderr %s\n", r->result.exit_code,
              r->result.signal, r->result.timed_out, r->stderr_data.substr(0, 200).c_str());
  auto usage = sb->Usage();
  ASSERT_TRUE(usage);
  EXPECT_LE(usage->pids, 64u + kDaemonPidsHeadroom);
  // The bomb's processes left the exec's process group (each `:|:&` is a background job);
  // the sandbox must still run the next command within a second.
  double ms = MsUntilAlive(*sb, 1000);
  if (ms < 0) {
    auto killed = protocol::KillAll(*sb->connection());
    ASSERT_TRUE(killed) << killed.error().ToString();
    ms = MsUntilAlive(*sb, 1000);
  }
  EXPECT_GE(ms, 0) << "sandbox did not answer within 1 s after the fork bomb";
  std::printf("[ns] fork bomb: exec returned after %.0f ms, next command after %.0f ms\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t0).count() - ms, ms);
}

TEST_F(NsBackendTest, MemoryHogIsOomKilledAndCounted) {
  auto spec = Spec();
  spec.memory_bytes = 256ull << 20;
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  auto before = sb->Usage();
  ASSERT_TRUE(before);
  // 10 GiB, touched: python3 when the template has it, else dd with a 10 GiB buffer.
  auto r = Sh(*sb,
              "if command -v python3 >/dev/null; then python3 -c 'b = bytearray(10 << 30)'; "
              "else dd if=/dev/zero of=/dev/null bs=10G count=1; fi",
              60'000);
  EXPECT_NE(r.result.exit_code, 0);
  auto after = sb->Usage();
  ASSERT_TRUE(after);
  EXPECT_GT(after->oom_kills, before->oom_kills)
      << "exit " << r.result.exit_code << " signal " << r.result.signal << " " << r.stderr_data;
  // The sandbox's figure includes sandboxd, which has the headroom beyond the commands' limit.
  EXPECT_LE(after->memory_peak_bytes, spec.memory_bytes + kDaemonMemoryHeadroom);
  EXPECT_GE(MsUntilAlive(*sb, 1000), 0);
}

// A warm pool's claim changes a running sandbox's memory and CPU (UpdateLimits): lowered, a
// command that fit is OOM-killed; raised, it fits again; the CPU quota follows; the pids limit
// and sandboxd's headroom stay as they were.
TEST_F(NsBackendTest, UpdateLimitsChangesMemoryAndCpuOfARunningSandbox) {
  auto spec = Spec();
  spec.memory_bytes = 256ull << 20;
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  ASSERT_TRUE(backend_->Capabilities().live_limits);
  const std::string hog = "dd if=/dev/zero of=/dev/null bs=160M count=1 2>/dev/null";
  EXPECT_EQ(Sh(*sb, hog, 60'000).result.exit_code, 0);

  ASSERT_TRUE(backend_->UpdateLimits(spec.id, 96ull << 20, 0.5));
  auto before = sb->Usage();
  ASSERT_TRUE(before);
  EXPECT_NE(Sh(*sb, hog, 60'000).result.exit_code, 0);
  auto after = sb->Usage();
  ASSERT_TRUE(after);
  EXPECT_GT(after->oom_kills, before->oom_kills);
  auto layout = DetectCgroupLayout();
  ASSERT_TRUE(layout);
  const CgroupPaths paths = CgroupPathsFor(*layout, cgroup_name_, spec.id);
  auto read = [](const std::string& path) {
    auto text = ReadSmallFile(path);
    return text ? std::string(text->substr(0, text->find_last_not_of("\n") + 1)) : "";
  };
  if (!layout->v2_mode) {
    EXPECT_EQ(read(paths.work_memory + "/memory.limit_in_bytes"), std::to_string(96 << 20));
    EXPECT_EQ(read(paths.memory + "/memory.limit_in_bytes"),
              std::to_string((96ull << 20) + kDaemonMemoryHeadroom));
    EXPECT_EQ(read(paths.work_cpu + "/cpu.cfs_quota_us"), "50000");
    EXPECT_EQ(read(paths.work_pids + "/pids.max"), std::to_string(spec.pids_limit));
  }

  ASSERT_TRUE(backend_->UpdateLimits(spec.id, 512ull << 20, 2));
  EXPECT_EQ(Sh(*sb, hog, 60'000).result.exit_code, 0);
  if (!layout->v2_mode) {
    EXPECT_EQ(read(paths.work_memory + "/memory.limit_in_bytes"), std::to_string(512 << 20));
    EXPECT_EQ(read(paths.work_cpu + "/cpu.cfs_quota_us"), "200000");
  }
  EXPECT_EQ(backend_->UpdateLimits("sb_0000000000000000", 64 << 20, 1).error().code(),
            ErrorCode::kNotFound);
}

TEST_F(NsBackendTest, ThousandBackgroundChildrenLeaveNoZombies) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  auto r = Sh(*sb, "for i in $(seq 1000); do (true &); done; echo spawned", 60'000);
  EXPECT_EQ(r.stdout_data, "spawned\n") << r.stderr_data;
  // The orphans were re-parented to sandboxd (PID 1), which must reap them.
  std::string zombies;
  for (int i = 0; i < 50; ++i) {
    zombies = Sh(*sb, "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l").stdout_data;
    if (zombies == "0\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(zombies, "0\n");
  auto usage = sb->Usage();
  ASSERT_TRUE(usage);
  EXPECT_LE(usage->pids, 3u);
}

TEST_F(NsBackendTest, WorkspaceQuotaGivesEnospcAndSparesTheHostDisk) {
  auto spec = Spec();
  spec.workspace_bytes = 32ull << 20;  // not the pool's size: formatted on demand
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  auto r =
      Sh(*sb, "dd if=/dev/zero of=/workspace/big bs=1M count=100 2>&1; sync; echo rc=$?", 60'000);
  EXPECT_NE(r.stdout_data.find("No space left on device"), std::string::npos) << r.stdout_data;
  struct stat st;
  const std::string image = state_dir_ + "/" + spec.id + "/workspace.img";
  ASSERT_EQ(::stat(image.c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), spec.workspace_bytes);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, spec.workspace_bytes);
  auto usage = sb->Usage();
  ASSERT_TRUE(usage);
  EXPECT_GT(usage->workspace_used_bytes, 20ull << 20);
  // After deleting, the space is usable again.
  EXPECT_EQ(Sh(*sb, "rm /workspace/big && echo ok > /workspace/small && cat /workspace/small")
                .stdout_data,
            "ok\n");
}

}  // namespace
}  // namespace asb::isolation::ns::testing
