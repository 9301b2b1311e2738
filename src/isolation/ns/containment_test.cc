// Privileged tests of the ns backend's isolation (ACCEPTANCE H1, H2), of its life cycle
// (failed create, destroy, adopt, ListOwned) and of what it leaves behind on the host.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "isolation/ns/ns_test_support.h"

namespace asb::isolation::ns::testing {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

TEST_F(NsBackendTest, H1HardenedDefaultsSeenFromInside) {
  auto sb = MustCreate(Spec());
  ASSERT_TRUE(sb);
  // Seen from the host: sandboxd was born in the sandbox's cgroups, in every hierarchy we use.
  std::ifstream cg("/proc/" + std::to_string(sb->host_pid()) + "/cgroup");
  int in_sandbox = 0;
  for (std::string line; std::getline(cg, line);) {
    const bool ours = line.find(cgroup_name_ + "/" + sb->id()) != std::string::npos;
    for (const char* ctrl : {":memory:", ":pids:", ":cpu:", ":cpuacct:", ":freezer:", "0::"}) {
      if (line.find(ctrl) != std::string::npos) {
        EXPECT_TRUE(ours) << line;
        in_sandbox += ours;
      }
    }
  }
  EXPECT_GE(in_sandbox, 1);
  // ... and the server thread that cloned it went back to where it was.
  std::ifstream self("/proc/thread-self/cgroup");
  std::string mine((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  EXPECT_EQ(mine.find(cgroup_name_), std::string::npos) << mine;
  EXPECT_EQ(Sh(*sb, "id -u").stdout_data, "1000\n");
  EXPECT_EQ(Sh(*sb, "grep CapEff /proc/self/status").stdout_data, "CapEff:\t0000000000000000\n");
  EXPECT_EQ(Sh(*sb, "grep NoNewPrivs /proc/self/status").stdout_data, "NoNewPrivs:\t1\n");
  auto etc = Sh(*sb, "echo x > /etc/asb-probe");
  EXPECT_NE(etc.result.exit_code, 0);
  EXPECT_NE(etc.stderr_data, "");
  EXPECT_EQ(Sh(*sb, "ls /sys/class/net").stdout_data, "lo\n");
  EXPECT_EQ(Sh(*sb, "cat /etc/hostname").stdout_data, "sandbox\n");
  EXPECT_EQ(Sh(*sb, "hostname").stdout_data, "sandbox\n");
  // Even root inside cannot write the template, and /proc/sys is read-only.
  protocol::ExecRequest as_root;
  as_root.command =
      "touch /etc/asb-probe || echo ro; echo 1 > /proc/sys/kernel/hostname || echo ro";
  as_root.user = protocol::kUserRoot;
  auto r = protocol::ExecCollect(*sb->connection(), as_root);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "ro\nro\n");
  // The workspace is the sandbox user's and writable; /tmp is a bounded tmpfs.
  EXPECT_EQ(Sh(*sb, "touch /workspace/f && stat -c %u /workspace/f").stdout_data, "1000\n");
  EXPECT_EQ(Sh(*sb, "df -k --output=size /tmp | tail -1 | tr -d ' '").stdout_data, "16384\n");
  ASSERT_TRUE(backend_->Destroy(sb->id()));
}

TEST_F(NsBackendTest, H2HostAndOtherSandboxesInvisible) {
  auto a = MustCreate(Spec());
  auto b = MustCreate(Spec());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Sh(*b, "echo secret > /workspace/only-in-b && echo ok").stdout_data, "ok\n");
  // Processes: only sandbox A's own (sandboxd is PID 1; no host process, not B's).
  auto ps = Sh(*a, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done");
  EXPECT_EQ(ps.stdout_data.find("containment_test"), std::string::npos) << ps.stdout_data;
  EXPECT_LT(std::stoi(Sh(*a, "ls /proc | grep -c '^[0-9]'").stdout_data), 10);
  EXPECT_EQ(Sh(*a, "readlink /proc/1/exe >/dev/null; cat /proc/1/comm").stdout_data.find("sh"),
            std::string::npos);
  // Files: the server's state dir and B's workspace are nowhere in A's tree.
  EXPECT_EQ(Sh(*a, "test -e " + state_dir_ + " && echo visible || echo hidden").stdout_data,
            "hidden\n");
  auto find = Sh(*a,
                 "find / -xdev -name only-in-b 2>/dev/null; find /workspace /tmp -name "
                 "only-in-b 2>/dev/null; echo done");
  EXPECT_EQ(find.stdout_data, "done\n");
  // Mount table: nothing of the host's beyond the template and the workspace.
  auto mounts = Sh(*a, "cat /proc/self/mountinfo");
  EXPECT_EQ(mounts.stdout_data.find(state_dir_ + "/" + b->id()), std::string::npos);
  EXPECT_EQ(mounts.stdout_data.find("/sys/fs/cgroup"), std::string::npos);
  // A's cgroup namespace is rooted at its own cgroups (commands run in its work child).
  EXPECT_EQ(Sh(*a, "grep -c -v -E ':/(work)?$' /proc/self/cgroup").stdout_data, "0\n");
}

size_t OpenFds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST_F(NsBackendTest, DestroyLeavesHostAsBefore) {
  // What the backend keeps for the next create (the blank workspace image, the idmap user
  // namespace of the uid range, one fd) is made by a first one: not a sandbox's leftovers.
  {
    auto first = Spec();
    ASSERT_TRUE(MustCreate(first));
    ASSERT_TRUE(backend_->Destroy(first.id));
  }
  const HostSnapshot before = Snapshot();
  const size_t fds_before = OpenFds();
  auto spec = Spec();
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  const HostSnapshot during = Snapshot();
  EXPECT_FALSE(during == before);
  EXPECT_EQ(during.loops.size(), before.loops.size() + 1) << Describe(during);
  EXPECT_EQ(during.uid_ranges.size(), before.uid_ranges.size() + 1) << Describe(during);
  EXPECT_EQ(Sh(*sb, "sleep 1000 & echo started").stdout_data, "started\n");
  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_EQ(*owned, std::vector<std::string>{spec.id});
  const int pid = sb->host_pid();
  ASSERT_TRUE(backend_->Destroy(spec.id));
  EXPECT_NE(::kill(pid, 0), 0) << "sandboxd still exists";
  EXPECT_FALSE(sb->connection()->alive() && Sh(*sb, "true").result.exit_code == 0);
  const HostSnapshot after = Snapshot();
  EXPECT_EQ(after, before) << "before:\n" << Describe(before) << "after:\n" << Describe(after);
  sb.reset();
  // (The pool's refill thread opens and closes fds of its own: allow it a moment.)
  for (int i = 0; i < 50 && OpenFds() > fds_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(OpenFds(), fds_before) << "the server process leaked file descriptors";
  // Idempotent, also for ids never seen.
  EXPECT_TRUE(backend_->Destroy(spec.id));
  EXPECT_TRUE(backend_->Destroy("sb_00000000000000ff"));
  owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_TRUE(owned->empty());
  EXPECT_FALSE(backend_->Destroy("../etc"));
  // Dropping the backend releases the workspace pool's mounts and loop devices too, and our
  // (now empty) cgroup parents.
  backend_.reset();
  for (const char* h : {"memory", "pids", "cpu", "cpuacct", "freezer", "unified"}) {
    EXPECT_FALSE(std::filesystem::exists(std::string("/sys/fs/cgroup/") + h + "/" + cgroup_name_))
        << h;
  }
  std::ifstream mi("/proc/self/mountinfo");
  std::string all((std::istreambuf_iterator<char>(mi)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.find(state_dir_), std::string::npos) << all;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block")) {
    std::ifstream bf(e.path() / "loop" / "backing_file");
    std::string backing;
    if (std::getline(bf, backing)) {
      EXPECT_EQ(backing.find(state_dir_), std::string::npos);
    }
  }
}

TEST_F(NsBackendTest, FailedCreateLeavesNothing) {
  const HostSnapshot before = Snapshot();
  auto spec = Spec();
  spec.rootfs = "/nonexistent/rootfs";
  auto sb = backend_->Create(spec);
  ASSERT_FALSE(sb);
  EXPECT_EQ(sb.error().code(), ErrorCode::kBackend) << sb.error().ToString();
  EXPECT_NE(sb.error().detail().find("bind rootfs"), std::string::npos) << sb.error().detail();
  EXPECT_EQ(sb.error().sys_errno(), ENOENT);
  EXPECT_EQ(Snapshot(), before) << Describe(Snapshot());
  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_TRUE(owned->empty());
  // Bad specs are rejected before anything is made.
  auto bad = Spec();
  bad.hostname = "no/slash";
  EXPECT_EQ(backend_->Create(bad).error().code(), ErrorCode::kInvalidArgument);
  bad = Spec();
  bad.id = "sb_../../etc";
  EXPECT_EQ(backend_->Create(bad).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Snapshot(), before);
  // A second create with a live id is a conflict and leaves the first alone.
  auto ok = MustCreate(spec = Spec());
  ASSERT_TRUE(ok);
  auto dup = backend_->Create(spec);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), ErrorCode::kConflict);
  EXPECT_EQ(Sh(*ok, "echo alive").stdout_data, "alive\n");
}

TEST_F(NsBackendTest, AdoptAfterDroppingTheBackend) {
  auto spec = Spec();
  int pid = -1;
  {
    auto sb = MustCreate(spec);
    ASSERT_TRUE(sb);
    pid = sb->host_pid();
    EXPECT_EQ(Sh(*sb, "echo kept > /workspace/mark && echo ok").stdout_data, "ok\n");
    sb->connection()->Close();
  }
  backend_.reset();  // as if the server died
  backend_ = NewBackend();
  ASSERT_TRUE(backend_);
  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_EQ(*owned, std::vector<std::string>{spec.id});
  auto sb = backend_->Adopt(spec.id);
  ASSERT_TRUE(sb) << sb.error().ToString();
  EXPECT_EQ((*sb)->host_pid(), pid);
  EXPECT_EQ(Sh(**sb, "cat /workspace/mark").stdout_data, "kept\n");
  auto usage = (*sb)->Usage();
  ASSERT_TRUE(usage) << usage.error().ToString();
  EXPECT_GE(usage->pids, 1u);
  EXPECT_GT(usage->memory_bytes, 0u);
  EXPECT_GT(usage->workspace_used_bytes, 0u);
  ASSERT_TRUE(backend_->Destroy(spec.id));
  ::waitpid(pid, nullptr, 0);  // we are still its parent: reap the zombie the kill left
  auto gone = backend_->Adopt(spec.id);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
}

TEST_F(NsBackendTest, MeasuresCreateAndExecLatency) {
  // create -> first stdout byte of `echo hi`, and the exec round trip of `true`.
  std::vector<double> create_ms, exec_ms, destroy_ms;
  for (int i = 0; i < 8; ++i) {
    auto spec = Spec();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the pool refill
    const auto t0 = Clock::now();
    auto sb = backend_->Create(spec);
    ASSERT_TRUE(sb) << sb.error().ToString();
    protocol::ExecRequest req;
    req.command = "echo hi";
    auto ch = (*sb)->connection()->Open(protocol::EncodeExecRequest(req));
    ASSERT_TRUE(ch);
    for (;;) {
      auto ev = (*ch)->Next(10'000);
      ASSERT_TRUE(ev) << ev.error().ToString();
      if (ev->kind == protocol::ChannelEvent::Kind::kData) break;
      ASSERT_FALSE(ev->terminal()) << "no output";
    }
    create_ms.push_back(MsSince(t0));
    for (int j = 0; j < 20; ++j) {
      protocol::ExecRequest t;
      t.argv = {"true"};
      const auto t1 = Clock::now();
      auto r = protocol::ExecCollect(*(*sb)->connection(), t);
      ASSERT_TRUE(r);
      exec_ms.push_back(MsSince(t1));
    }
    const auto t2 = Clock::now();
    ASSERT_TRUE(backend_->Destroy(spec.id));
    destroy_ms.push_back(MsSince(t2));
  }
  std::sort(create_ms.begin(), create_ms.end());
  std::sort(destroy_ms.begin(), destroy_ms.end());
  std::sort(exec_ms.begin(), exec_ms.end());
  std::printf(
      "[ns] create -> first byte of `echo hi`: p50 %.1f ms, max %.1f ms (n=%zu, pool of "
      "1)\n[ns] exec round trip of `true`: p50 %.2f ms, p99 %.2f ms (n=%zu)\n",
      create_ms[create_ms.size() / 2], create_ms.back(), create_ms.size(),
      exec_ms[exec_ms.size() / 2], exec_ms[exec_ms.size() * 99 / 100], exec_ms.size());
  std::printf("[ns] destroy: p50 %.1f ms, max %.1f ms\n", destroy_ms[destroy_ms.size() / 2],
              destroy_ms.back());
}

}  // namespace
}  // namespace asb::isolation::ns::testing
