// Unprivileged unit tests of the ns backend's pure parts: uid slots, state.json, cgroup paths,
// the mount plan, the file helpers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/ids.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/files.h"
#include "isolation/ns/mount.h"
#include "isolation/ns/state.h"
#include "isolation/ns/user.h"

namespace asb::isolation::ns {
namespace {

namespace fs = std::filesystem;

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("asb-nsunit-" + RandomHex(4))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

using UidSlotsTest = TempDir;

TEST_F(UidSlotsTest, AcquireIsExclusiveAndPersisted) {
  const std::string reg = dir_ + "/reg", state = dir_ + "/state";
  for (char c : std::string("abcd")) fs::create_directories(state + "/sb_000000000000000" + c);
  UidSlots slots(reg, state, 1'000'000'000, 3);
  auto a = slots.Acquire("sb_000000000000000a");
  auto b = slots.Acquire("sb_000000000000000b");
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  // Another object over the same registry (a restarted server) sees the same slots.
  UidSlots again(reg, state, 1'000'000'000, 3);
  auto found = again.Find("sb_000000000000000b");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, *b);
  auto c = again.Acquire("sb_000000000000000c");
  ASSERT_TRUE(c);
  EXPECT_NE(*c, *a);
  EXPECT_NE(*c, *b);
  auto full = again.Acquire("sb_000000000000000d");
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code(), ErrorCode::kLimitExceeded);
  ASSERT_TRUE(again.ReleaseAll("sb_000000000000000a"));
  auto d = again.Acquire("sb_000000000000000d");
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, *a);
  auto list = again.List();
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(again.Find("sb_000000000000000a").error().code(), ErrorCode::kNotFound);
  for (const auto& e : fs::directory_iterator(reg)) {
    EXPECT_EQ(e.path().extension(), "") << e.path();  // no temp files left
  }
}

TEST_F(UidSlotsTest, RangesNeverOverlapAcrossStateDirsAndBases) {
  const std::string reg = dir_ + "/reg";
  fs::create_directories(dir_ + "/one/sb_0000000000000001");
  fs::create_directories(dir_ + "/two/sb_0000000000000002");
  UidSlots one(reg, dir_ + "/one", 1'000'000'000, 4);
  UidSlots two(reg, dir_ + "/two", 1'000'000'000 + 1000, 4);  // unaligned, overlapping base
  auto a = one.Acquire("sb_0000000000000001");
  auto b = two.Acquire("sb_0000000000000002");
  ASSERT_TRUE(a && b);
  const uint64_t first_a = 1'000'000'000ull + *a * kIdsPerSlot;
  const uint64_t first_b = 1'000'001'000ull + *b * kIdsPerSlot;
  EXPECT_TRUE(first_a + kIdsPerSlot <= first_b || first_b + kIdsPerSlot <= first_a);
  // Each backend lists only its own.
  EXPECT_EQ(one.List()->size(), 1u);
  EXPECT_EQ(two.List()->size(), 1u);
  EXPECT_EQ(one.Find("sb_0000000000000002").error().code(), ErrorCode::kNotFound);
  // A record whose state dir is gone is stale and is taken over.
  fs::remove_all(dir_ + "/one/sb_0000000000000001");
  fs::create_directories(dir_ + "/two/sb_0000000000000003");
  auto c = two.Acquire("sb_0000000000000003");
  ASSERT_TRUE(c);
  EXPECT_TRUE(one.List()->empty());
}

TEST(SandboxStateTest, RoundTrip) {
  SandboxState s;
  s.id = "sb_0123456789abcdef";
  s.pid = 4242;
  s.start_time = 123456789;
  s.slot = 7;
  s.uid_base = 1'000'458'752;
  s.loop_device = "/dev/loop3";
  s.cgroup_mode = "v1";
  s.cgroups = {"/sys/fs/cgroup/memory/x/sb_0123456789abcdef"};
  s.created_unix_ms = 1'700'000'000'000;
  auto d = DecodeSandboxState(EncodeSandboxState(s));
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->id, s.id);
  EXPECT_EQ(d->pid, s.pid);
  EXPECT_EQ(d->start_time, s.start_time);
  EXPECT_EQ(d->slot, s.slot);
  EXPECT_EQ(d->uid_base, s.uid_base);
  EXPECT_EQ(d->loop_device, s.loop_device);
  EXPECT_EQ(d->cgroups, s.cgroups);
  EXPECT_EQ(d->created_unix_ms, s.created_unix_ms);
  EXPECT_EQ(DecodeSandboxState("{\"id\":1}").error().code(), ErrorCode::kBackend);
  EXPECT_EQ(DecodeSandboxState("not json").error().code(), ErrorCode::kBackend);
}

TEST(ProcessStartTimeTest, OwnProcessAndMissingOne) {
  auto mine = ProcessStartTime(::getpid());
  ASSERT_TRUE(mine);
  EXPECT_GT(*mine, 0u);
  EXPECT_EQ(*ProcessStartTime(::getpid()), *mine);
  EXPECT_EQ(ProcessStartTime(0x3fffffff).error().code(), ErrorCode::kNotFound);
}

TEST(CgroupPathsTest, V1AndV2Layouts) {
  CgroupLayout v1;
  v1.v2_mount = "/sys/fs/cgroup/unified";
  v1.v1_memory = "/sys/fs/cgroup/memory";
  v1.v1_pids = "/sys/fs/cgroup/pids";
  v1.v1_cpu = "/sys/fs/cgroup/cpu,cpuacct";
  v1.v1_cpuacct = "/sys/fs/cgroup/cpu,cpuacct";  // co-mounted: one directory
  auto p = CgroupPathsFor(v1, "asb", "sb_1");
  EXPECT_EQ(p.memory, "/sys/fs/cgroup/memory/asb/sb_1");
  EXPECT_EQ(p.v2, "/sys/fs/cgroup/unified/asb/sb_1");
  EXPECT_EQ(p.freezer, "");
  EXPECT_EQ(p.work_pids, "/sys/fs/cgroup/pids/asb/sb_1/work");
  EXPECT_EQ(p.work_cpu, "/sys/fs/cgroup/cpu,cpuacct/asb/sb_1/work");
  EXPECT_EQ(p.All().size(), 7u);  // memory, pids, cpu(+cpuacct), v2, and the 3 work children
  CgroupLayout v2;
  v2.v2_mode = true;
  v2.v2_mount = "/sys/fs/cgroup";
  auto q = CgroupPathsFor(v2, "asb", "sb_1");
  EXPECT_EQ(q.All(), std::vector<std::string>{"/sys/fs/cgroup/asb/sb_1"});
  EXPECT_EQ(q.memory, "");
}

// The cgroup files are plain files here: what is written where, on v2 and v1, and how usage is
// read back (the kernel's side is covered by the privileged cgroup_test on this host, which is
// v1 + a controller-less v2; plain v2 hosts are covered only here).
using FakeCgroupFsTest = TempDir;

void Touch(const std::string& path, const std::string& content = "") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << content;
}

TEST_F(FakeCgroupFsTest, V2LimitsAndUsage) {
  CgroupLayout layout;
  layout.v2_mode = true;
  layout.v2_mount = dir_;
  auto paths = CgroupPathsFor(layout, "asb", "sb_1");
  Touch(dir_ + "/cgroup.subtree_control");
  Touch(dir_ + "/asb/cgroup.subtree_control");
  for (const char* f : {"memory.max", "memory.swap.max", "pids.max", "cpu.max"}) {
    Touch(paths.v2 + "/" + f);
  }
  ASSERT_TRUE(CreateCgroupsFromParent(layout, "asb", paths, {256ull << 20, 64, 0.5}));
  EXPECT_EQ(*ReadSmallFile(dir_ + "/cgroup.subtree_control"), "+memory +pids +cpu");
  EXPECT_EQ(*ReadSmallFile(dir_ + "/asb/cgroup.subtree_control"), "+memory +pids +cpu");
  EXPECT_EQ(*ReadSmallFile(paths.v2 + "/memory.max"), "268435456");
  EXPECT_EQ(*ReadSmallFile(paths.v2 + "/memory.swap.max"), "0");
  EXPECT_EQ(*ReadSmallFile(paths.v2 + "/pids.max"), "64");
  EXPECT_EQ(*ReadSmallFile(paths.v2 + "/cpu.max"), "50000 100000");
  Touch(paths.v2 + "/memory.current", "1000\n");
  Touch(paths.v2 + "/memory.peak", "2000\n");
  Touch(paths.v2 + "/pids.current", "3\n");
  Touch(paths.v2 + "/cpu.stat", "usage_usec 1234\nuser_usec 1000\n");
  Touch(paths.v2 + "/memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n");
  auto u = ReadCgroupUsage(paths);
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->memory_bytes, 1000u);
  EXPECT_EQ(u->memory_peak_bytes, 2000u);
  EXPECT_EQ(u->pids, 3u);
  EXPECT_EQ(u->cpu_usage_ns, 1'234'000u);
  EXPECT_EQ(u->oom_kills, 2u);
}

TEST_F(FakeCgroupFsTest, V1LimitsAndUsage) {
  CgroupLayout layout;
  layout.v1_memory = dir_ + "/memory";
  layout.v1_pids = dir_ + "/pids";
  layout.v1_cpu = dir_ + "/cpu";
  layout.v1_cpuacct = dir_ + "/cpuacct";
  auto paths = CgroupPathsFor(layout, "asb", "sb_1");
  for (const std::string* dir : {&paths.memory, &paths.work_memory}) {
    for (const char* f : {"memory.limit_in_bytes", "memory.memsw.limit_in_bytes"}) {
      Touch(*dir + "/" + f);
    }
  }
  Touch(paths.pids + "/pids.max");
  Touch(paths.work_pids + "/pids.max");
  Touch(paths.work_cpu + "/cpu.cfs_period_us");
  Touch(paths.work_cpu + "/cpu.cfs_quota_us");
  fs::create_directories(layout.v1_cpuacct);
  auto st = CreateCgroupsFromParent(layout, "asb", paths, {256ull << 20, 64, 2.0});
  ASSERT_TRUE(st) << st.error().ToString();
  // The commands' limits on <dir>/work; sandboxd's <dir> has the headroom and no CPU quota.
  EXPECT_EQ(*ReadSmallFile(paths.work_memory + "/memory.limit_in_bytes"), "268435456");
  EXPECT_EQ(*ReadSmallFile(paths.work_memory + "/memory.memsw.limit_in_bytes"), "268435456");
  EXPECT_EQ(*ReadSmallFile(paths.memory + "/memory.limit_in_bytes"),
            std::to_string((256ull << 20) + kDaemonMemoryHeadroom));
  EXPECT_EQ(*ReadSmallFile(paths.work_pids + "/pids.max"), "64");
  EXPECT_EQ(*ReadSmallFile(paths.pids + "/pids.max"), std::to_string(64 + kDaemonPidsHeadroom));
  EXPECT_EQ(*ReadSmallFile(paths.work_cpu + "/cpu.cfs_quota_us"), "200000");
  EXPECT_FALSE(PathExists(paths.cpu + "/cpu.cfs_quota_us"));
  Touch(paths.memory + "/memory.usage_in_bytes", "1000\n");
  Touch(paths.memory + "/memory.max_usage_in_bytes", "2000\n");
  Touch(paths.memory + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
  Touch(paths.work_memory + "/memory.oom_control", "oom_kill_disable 0\noom_kill 3\n");
  Touch(paths.work_pids + "/pids.events", "max 7\n");
  Touch(paths.pids + "/pids.current", "3\n");
  Touch(paths.cpuacct + "/cpuacct.usage", "5555\n");
  auto u = ReadCgroupUsage(paths);
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->memory_peak_bytes, 2000u);
  EXPECT_EQ(u->cpu_usage_ns, 5555u);
  EXPECT_EQ(u->oom_kills, 7u);  // the sandbox's and the work cgroup's (v1 counts locally)
  EXPECT_EQ(u->pids_limit_hits, 7u);
}

TEST(CgroupLayoutTest, DetectsThisHost) {
  auto layout = DetectCgroupLayout();
  if (!layout) GTEST_SKIP() << layout.error().ToString();
  if (layout->v2_mode) {
    EXPECT_FALSE(layout->v2_mount.empty());
  } else {
    EXPECT_FALSE(layout->v1_memory.empty());
    EXPECT_FALSE(layout->v1_pids.empty());
    EXPECT_FALSE(layout->v1_cpu.empty());
  }
}

TEST(MountPlanTest, EverythingIsPreparedRelativeToTheNewRoot) {
  auto p = MakeMountPlan("/t/rootfs", "/s/sb/ws", "sandbox\n", 16 << 20);
  EXPECT_EQ(p.workspace, "/t/rootfs/workspace");
  EXPECT_EQ(p.etc_hostname, "/t/rootfs/etc/hostname");
  EXPECT_EQ(p.proc, "proc");
  EXPECT_EQ(p.tmp_options, "mode=1777,size=16777216");
  EXPECT_EQ(p.dev_node_src.size(), p.dev_node_dst.size());
  EXPECT_NE(std::find(p.readonly_paths.begin(), p.readonly_paths.end(), "proc/sys"),
            p.readonly_paths.end());
  EXPECT_NE(std::find(p.masked_files.begin(), p.masked_files.end(), "proc/kcore"),
            p.masked_files.end());
  for (const auto& d : p.dev_node_dst) EXPECT_EQ(d.rfind("dev/", 0), 0u);
  // ADR 0014: host facts masked, and the small files come from a scratch tmpfs, not the host.
  for (const char* f : {"proc/config.gz", "proc/partitions"}) {
    EXPECT_NE(std::find(p.masked_files.begin(), p.masked_files.end(), f), p.masked_files.end());
  }
  ASSERT_EQ(p.scratch_files.size(), 2u);
  EXPECT_EQ(p.scratch_files[0].target, "proc/cmdline");
  EXPECT_EQ(p.scratch_files[0].content, kSandboxCmdline);
  EXPECT_EQ(p.scratch_files[1].target, "etc/hostname");
  EXPECT_EQ(p.scratch_files[1].content, "sandbox\n");
  for (const auto& s : p.scratch_files) EXPECT_EQ(s.path.rfind(p.tmp + "/", 0), 0u);
}

// A build step's root (ADR 0017): writable, no /sys, /tmp or /workspace of its own, and the
// very /proc and /dev of a sandbox (the same masks, nodes and links).
TEST(MountPlanTest, BuildPlanIsTheSandboxsProcAndDevOverAWritableRoot) {
  auto b = MakeBuildMountPlan("/t/stage/rootfs", 64 << 20);
  auto s = MakeMountPlan("/t/rootfs", "/s/sb/ws", "", 64 << 20);
  EXPECT_EQ(b.root, "/t/stage/rootfs");
  EXPECT_FALSE(b.read_only_root);
  EXPECT_TRUE(s.read_only_root);
  EXPECT_TRUE(b.sys.empty());
  EXPECT_TRUE(b.tmp.empty());
  EXPECT_TRUE(b.ws_source.empty());
  EXPECT_TRUE(b.scratch_files.empty());  // they would need a /tmp to stage in
  EXPECT_EQ(b.proc, s.proc);
  EXPECT_EQ(b.dev, s.dev);
  EXPECT_EQ(b.dev_node_src, s.dev_node_src);
  EXPECT_EQ(b.dev_link_path, s.dev_link_path);
  EXPECT_EQ(b.masked_files, s.masked_files);
  EXPECT_EQ(b.readonly_paths, s.readonly_paths);
  EXPECT_EQ(b.shm_options, s.shm_options);
  EXPECT_EQ(b.devpts_options, s.devpts_options);
  for (const auto& d : b.masked_dirs) EXPECT_EQ(d.rfind("proc/", 0), 0u) << d;
}

// A command's cgroups: the v1 work children (the limits, no sandboxd headroom); v2 unchanged.
TEST(CgroupPathsTest, CommandPathsAreTheWorkChildren) {
  CgroupLayout v1;
  v1.v1_memory = "/c/memory";
  v1.v1_pids = "/c/pids";
  v1.v1_cpu = "/c/cpu,cpuacct";
  v1.v2_mount = "/c/unified";
  auto p = CommandCgroupPaths(CgroupPathsFor(v1, "n", "id"));
  EXPECT_EQ(p.memory, "/c/memory/n/id/work");
  EXPECT_EQ(p.pids, "/c/pids/n/id/work");
  EXPECT_EQ(p.cpu, "/c/cpu,cpuacct/n/id/work");
  EXPECT_EQ(p.v2, "/c/unified/n/id");
  CgroupLayout v2;
  v2.v2_mode = true;
  v2.v2_mount = "/c";
  auto q = CommandCgroupPaths(CgroupPathsFor(v2, "n", "id"));
  EXPECT_EQ(q.v2, "/c/n/id");
  EXPECT_TRUE(q.memory.empty());
}

using FilesTest = TempDir;

TEST_F(FilesTest, AtomicWriteAndRemoveTree) {
  const std::string f = dir_ + "/state.json";
  ASSERT_TRUE(WriteFileAtomic(f, "one"));
  ASSERT_TRUE(WriteFileAtomic(f, "two"));
  EXPECT_EQ(*ReadSmallFile(f), "two");
  EXPECT_FALSE(PathExists(f + ".tmp"));
  fs::create_directories(dir_ + "/a/b/c");
  std::ofstream(dir_ + "/a/b/c/x") << "x";
  fs::create_symlink("/etc", dir_ + "/a/link");
  ASSERT_TRUE(RemoveTree(dir_ + "/a"));
  EXPECT_FALSE(PathExists(dir_ + "/a"));
  EXPECT_TRUE(PathExists("/etc/passwd"));  // the symlink was removed, not followed
  EXPECT_TRUE(RemoveTree(dir_ + "/missing"));
  EXPECT_EQ(*ParseU64(" 42\n"), 42u);
  EXPECT_EQ(*ParseU64("max"), UINT64_MAX);
  EXPECT_FALSE(ParseU64("4x"));
}

}  // namespace
}  // namespace asb::isolation::ns
