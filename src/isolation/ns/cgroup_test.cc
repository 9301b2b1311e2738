// Privileged tests of the cgroup layer alone: limits written, processes joined, usage read,
// and both ways of killing a sandbox's processes (cgroup.kill; freeze + SIGKILL + thaw for
// hosts without a cgroup2 mount), each leaving no directory behind.
#include "isolation/ns/cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ids.h"
#include "isolation/ns/files.h"

extern char** environ;

namespace asb::isolation::ns {
namespace {

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::getuid() != 0) GTEST_SKIP() << "needs root";
    auto layout = DetectCgroupLayout();
    if (!layout) GTEST_SKIP() << layout.error().ToString();
    layout_ = *layout;
    name_ = "asb-cgtest-" + RandomHex(4);
  }
  void TearDown() override {
    for (pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    for (const auto& m : {layout_.v2_mount, layout_.v1_memory, layout_.v1_pids, layout_.v1_cpu,
                          layout_.v1_cpuacct, layout_.v1_freezer}) {
      if (!m.empty()) ::rmdir((m + "/" + name_).c_str());
    }
  }
  pid_t SpawnSleep() {
    pid_t pid;
    char* argv[] = {const_cast<char*>("/bin/sleep"), const_cast<char*>("100"), nullptr};
    EXPECT_EQ(posix_spawn(&pid, "/bin/sleep", nullptr, nullptr, argv, environ), 0);
    pids_.push_back(pid);
    return pid;
  }
  // Kills through `paths` and checks that every spawned process died of SIGKILL.
  void KillAndCheck(const CgroupPaths& paths) {
    ASSERT_TRUE(KillCgroupProcesses(paths));
    ASSERT_TRUE(WaitCgroupsEmpty(paths, 5000));
    for (pid_t pid : pids_) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    pids_.clear();
    ASSERT_TRUE(RemoveCgroups(paths));
    EXPECT_FALSE(AnyCgroupExists(paths));
  }

  CgroupLayout layout_;
  std::string name_;
  std::vector<pid_t> pids_;
};

TEST_F(CgroupTest, LimitsUsageAndCgroupKill) {
  auto paths = CgroupPathsFor(layout_, name_, "sb_00000000000000c1");
  ASSERT_TRUE(CreateCgroupsFromParent(layout_, name_, paths, {64ull << 20, 16, 0.5}));
  if (layout_.v2_mode) {
    EXPECT_EQ(*ReadSmallFile(paths.v2 + "/memory.max"), "67108864\n");
    EXPECT_EQ(*ReadSmallFile(paths.v2 + "/cpu.max"), "50000 100000\n");
    EXPECT_EQ(*ReadSmallFile(paths.v2 + "/pids.max"), "16\n");
  } else {
    // Commands' limits on the work children; sandboxd's cgroup has the headroom (cgroup.h).
    EXPECT_EQ(*ReadSmallFile(paths.work_memory + "/memory.limit_in_bytes"), "67108864\n");
    EXPECT_EQ(*ReadSmallFile(paths.memory + "/memory.limit_in_bytes"), "100663296\n");
    if (PathExists(paths.memory + "/memory.memsw.limit_in_bytes")) {
      EXPECT_EQ(*ReadSmallFile(paths.work_memory + "/memory.memsw.limit_in_bytes"), "67108864\n");
      EXPECT_EQ(*ReadSmallFile(paths.memory + "/memory.memsw.limit_in_bytes"), "100663296\n");
    }
    EXPECT_EQ(*ReadSmallFile(paths.work_cpu + "/cpu.cfs_quota_us"), "50000\n");
    EXPECT_EQ(*ReadSmallFile(paths.cpu + "/cpu.cfs_quota_us"), "-1\n");
    EXPECT_EQ(*ReadSmallFile(paths.work_pids + "/pids.max"), "16\n");
    EXPECT_EQ(*ReadSmallFile(paths.pids + "/pids.max"), "48\n");
  }
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(AddProcessFromParent(paths, SpawnSleep()));
  auto usage = ReadCgroupUsage(paths);
  ASSERT_TRUE(usage) << usage.error().ToString();
  EXPECT_EQ(usage->pids, 3u);
  EXPECT_EQ(usage->oom_kills, 0u);  // (memory stays charged where it was allocated on v1)
  auto ids = ListCgroupIds(layout_, name_);
  EXPECT_EQ(ids, std::vector<std::string>{"sb_00000000000000c1"});
  KillAndCheck(paths);
  EXPECT_EQ(ReadCgroupUsage(paths).error().code(), ErrorCode::kNotFound);
}

// The exec path's counters (LimitCounterFiles): opened once, and each Read sees the count the
// kernel keeps now, the same as ReadCgroupUsage's; after removal, kNotFound.
TEST_F(CgroupTest, LimitCounterFilesRereadInPlace) {
  auto paths = CgroupPathsFor(layout_, name_, "sb_00000000000000c3");
  ASSERT_TRUE(CreateCgroupsFromParent(layout_, name_, paths, {64ull << 20, 1, 1.0}));
  auto files = LimitCounterFiles::Open(paths);
  ASSERT_TRUE(files) << files.error().ToString();
  auto before = files->Read();
  ASSERT_TRUE(before) << before.error().ToString();
  EXPECT_EQ(before->pids_limit_hits, 0u);
  EXPECT_EQ(before->oom_kills, 0u);

  // A shell in the commands' cgroup, whose pids limit is 1: each fork it tries is refused.
  pid_t pid;
  char* argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                  const_cast<char*>("read x; /bin/true; /bin/true"), nullptr};
  int in[2];
  ASSERT_EQ(::pipe(in), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_addclose(&fa, in[1]);
  ASSERT_EQ(posix_spawn(&pid, "/bin/sh", &fa, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ASSERT_TRUE(AddProcessFromParent(CommandCgroupPaths(paths), pid));
  ::close(in[1]);  // `read` ends: the shell now forks, and is refused
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);

  auto after = files->Read();
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_GE(after->pids_limit_hits, 1u);
  auto usage = ReadCgroupUsage(paths);
  ASSERT_TRUE(usage);
  EXPECT_EQ(after->pids_limit_hits, usage->pids_limit_hits);
  EXPECT_EQ(after->oom_kills, usage->oom_kills);

  ASSERT_TRUE(RemoveCgroups(paths));
  auto gone = files->Read();
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(LimitCounterFiles::Open(paths).error().code(), ErrorCode::kNotFound);
}

TEST_F(CgroupTest, FreezeAndKillWithoutCgroup2) {
  if (layout_.v2_mode) GTEST_SKIP() << "v2 host: cgroup.kill is always there";
  CgroupLayout no_v2 = layout_;
  no_v2.v2_mount.clear();  // as on a pure v1 host
  if (no_v2.v1_freezer.empty()) GTEST_SKIP() << "no v1 freezer";
  auto paths = CgroupPathsFor(no_v2, name_, "sb_00000000000000c2");
  ASSERT_TRUE(paths.v2.empty());
  ASSERT_TRUE(CreateCgroupsFromParent(no_v2, name_, paths, {64ull << 20, 64, 1.0}));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(AddProcessFromParent(paths, SpawnSleep()));
  KillAndCheck(paths);
}

}  // namespace
}  // namespace asb::isolation::ns
