// The manager over the real ns backend, the real sandboxd and the base template (CTest label
// "privileged"): create, TTL reaping (a 1 s TTL is gone within about 2 s with its processes,
// mounts, cgroups and files) and restart (a restart adopts running sandboxes with their original
// expires_at, drops records whose sandbox is gone, destroys orphans), and pause (a cgroup
// freeze that stops every process, across a restart too). Skips with the reason
// when not root, or sandboxd or the template is missing.
//
// Inputs: env ASB_SANDBOXD (default <build>/bin/sandboxd), env ASB_TEST_TEMPLATES (default
// /var/lib/agent-sandbox/templates).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/templates.h"
#include "isolation/ns/ns_backend.h"
#include "store/store.h"

#ifndef ASB_TEST_SANDBOXD_PATH
#define ASB_TEST_SANDBOXD_PATH ""
#endif

namespace asb::core {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name, const std::string& fallback) {
  const char* v = ::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

/// Lines of /proc/self/mountinfo that mention `needle`.
int MountsUnder(const std::string& needle) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) ++n;
  }
  return n;
}

/// Directories named `id` below any cgroup hierarchy's <cgroup_name>/.
int CgroupDirsOf(const std::string& cgroup_name, const std::string& id) {
  int n = 0;
  std::error_code ec;
  for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    if (fs::exists(h.path() / cgroup_name / id, ec)) ++n;
  }
  return n;
}

/// True if `pid` exists and is not a zombie (sandboxes created by this test process are its
/// children, so a killed one stays a zombie until reaped).
bool ProcessAlive(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

class ManagerNsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    sandboxd_ = Env("ASB_SANDBOXD", ASB_TEST_SANDBOXD_PATH);
    if (::access(sandboxd_.c_str(), X_OK) != 0) GTEST_SKIP() << "no sandboxd at " << sandboxd_;
    templates_dir_ = Env("ASB_TEST_TEMPLATES", "/var/lib/agent-sandbox/templates");
    if (!fs::is_directory(templates_dir_ + "/base/rootfs")) {
      GTEST_SKIP() << "no base template in " << templates_dir_;
    }
    char tmpl[] = "/tmp/asb_core_ns_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cgroup_name_ = "asb-core-test-" + std::to_string(::getpid());
    config_.data_dir = dir_;
    config_.limits.max_sandboxes = 4;
    config_.limits.default_workspace_mb = 64;
    catalog_ = std::make_unique<DirTemplateCatalog>(templates_dir_);
    OpenAll();
  }

  void TearDown() override {
    manager_.reset();
    if (backend_) {
      // Whatever a failed test left: destroy through the backend, then remove the dir.
      if (auto owned = backend_->ListOwned()) {
        for (const auto& id : *owned) (void)backend_->Destroy(id);
      }
    }
    backend_.reset();
    store_.reset();
    // The backend keeps its parent cgroup <cgroup_name> (the server's lives on); ours is a
    // test's private name, so remove it (empty by now) from every hierarchy.
    std::error_code ec;
    for (const auto& h : fs::directory_iterator("/sys/fs/cgroup", ec)) {
      const fs::path p = h.path() / cgroup_name_;
      if (!cgroup_name_.empty() && fs::is_directory(p, ec)) ::rmdir(p.c_str());
    }
    if (!dir_.empty()) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    }
  }

  /// Opens store, backend and manager (again, after a simulated restart) and starts it.
  void OpenAll() {
    isolation::ns::NsBackendOptions o;
    o.state_dir = dir_ + "/sandboxes";
    o.sandboxd_path = sandboxd_;
    o.cgroup_name = cgroup_name_;
    o.uid_range_base = 1'600'000'000;
    o.max_slots = 64;
    o.workspace_pool_size = 0;
    o.default_workspace_bytes = 64ull << 20;
    auto b = isolation::ns::MakeNsBackend(o);
    ASSERT_TRUE(b) << b.error().ToString();
    backend_ = std::move(*b);
    auto s = store::Store::Open(config_.DatabasePath(), SystemClock::Instance().NowUnixMs());
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
    manager_ = std::make_unique<SandboxManager>(config_, *store_, *backend_,
                                                SystemClock::Instance(), *catalog_);
    auto st = manager_->Start();
    ASSERT_TRUE(st) << st.error().ToString();
  }

  /// Drops manager, backend object and store without destroying anything (like SIGKILL).
  void Restart() {
    manager_.reset();
    backend_.reset();
    store_.reset();
    OpenAll();
  }

  /// Host pid of sandboxd, read from the backend's sandbox object.
  int HostPid(const std::string& id) {
    auto sb = backend_->Adopt(id);
    return sb ? (*sb)->host_pid() : -1;
  }

  std::string sandboxd_, templates_dir_, dir_, cgroup_name_;
  ManagerConfig config_;
  std::unique_ptr<DirTemplateCatalog> catalog_;
  std::unique_ptr<isolation::Backend> backend_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<SandboxManager> manager_;
};

TEST_F(ManagerNsTest, CreateExecDestroyLeavesNothing) {  // L1, L7, E1 through the manager
  auto info = manager_->lifecycle().Create("alice", {});
  ASSERT_TRUE(info) << info.error().ToString();
  EXPECT_EQ(info->state, SandboxState::kRunning);
  const int pid = HostPid(info->id);
  EXPECT_TRUE(ProcessAlive(pid));
  ExecOptions o;
  o.command = "echo hi; id -u";
  auto r = manager_->exec().Exec("alice", info->id, o);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "hi\n1000\n");
  auto w = manager_->files().WriteFile("alice", info->id, "src/app.py", "print(42)\n", 0755);
  ASSERT_TRUE(w) << w.error().ToString();
  EXPECT_EQ(w->path, "/workspace/src/app.py");
  EXPECT_EQ(*manager_->files().ReadFile("alice", info->id, "src/app.py"), "print(42)\n");

  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", info->id));
  EXPECT_EQ(manager_->lifecycle().Destroy("alice", info->id).error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(MountsUnder(dir_ + "/sandboxes/" + info->id), 0);
  EXPECT_EQ(CgroupDirsOf(cgroup_name_, info->id), 0);
  EXPECT_FALSE(fs::exists(dir_ + "/sandboxes/" + info->id));
  EXPECT_EQ(store_->GetSandbox(info->id)->state, "destroyed");
}

TEST_F(ManagerNsTest, OneSecondTtlIsReapedWithinAboutTwoSeconds) {  // L5
  CreateRequest req;
  req.timeout_seconds = 1;
  auto a = manager_->lifecycle().Create("alice", req);
  ASSERT_TRUE(a) << a.error().ToString();
  auto b = manager_->lifecycle().Create("alice", req);
  ASSERT_TRUE(b) << b.error().ToString();
  ASSERT_TRUE(manager_->lifecycle().SetTimeout("alice", b->id, 60));
  const int pid = HostPid(a->id);
  ASSERT_TRUE(ProcessAlive(pid));
  const auto t0 = std::chrono::steady_clock::now();
  while (manager_->lifecycle().Get("alice", a->id) &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(manager_->lifecycle().Get("alice", a->id));
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(MountsUnder(dir_ + "/sandboxes/" + a->id), 0);
  EXPECT_EQ(CgroupDirsOf(cgroup_name_, a->id), 0);
  EXPECT_FALSE(fs::exists(dir_ + "/sandboxes/" + a->id));
  EXPECT_TRUE(manager_->lifecycle().Get("alice", b->id));  // extended: still there
}

TEST_F(ManagerNsTest, RestartAdoptsRunningDropsGoneAndDestroysOrphans) {  // L6
  auto keep = manager_->lifecycle().Create("alice", {});
  ASSERT_TRUE(keep) << keep.error().ToString();
  auto gone = manager_->lifecycle().Create("alice", {});
  ASSERT_TRUE(gone) << gone.error().ToString();
  auto w = manager_->files().WriteFile("alice", keep->id, "f", "data\n");
  EXPECT_TRUE(w) << w.error().ToString();

  // An orphan: a sandbox the backend made but no record names (a crash before the INSERT).
  isolation::SandboxSpec spec;
  spec.id = "sb_0c0ffee000000001";
  spec.rootfs = templates_dir_ + "/base/rootfs";
  spec.workspace_bytes = 64ull << 20;
  auto orphan = backend_->Create(spec);
  ASSERT_TRUE(orphan) << orphan.error().ToString();
  const int orphan_pid = (*orphan)->host_pid();
  orphan->reset();

  // `gone` dies while the server is down.
  const int gone_pid = HostPid(gone->id);
  Restart();
  ASSERT_EQ(::kill(gone_pid, SIGKILL), 0);
  // The backend cloned it from this test process, so reap it here, as init would reap it
  // after a real server died (a zombie would still look alive to the backend).
  int status = 0;
  (void)::waitpid(gone_pid, &status, 0);
  Restart();

  auto k = manager_->lifecycle().Get("alice", keep->id);
  ASSERT_TRUE(k) << k.error().ToString();
  EXPECT_EQ(k->state, SandboxState::kRunning);
  EXPECT_EQ(k->expires_at_ms, keep->expires_at_ms);
  auto r = manager_->files().ReadFile("alice", keep->id, "f");  // over the re-dialled connection
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, "data\n");

  EXPECT_EQ(manager_->lifecycle().Get("alice", gone->id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store_->GetSandbox(gone->id)->state, "destroyed");
  EXPECT_FALSE(fs::exists(dir_ + "/sandboxes/" + gone->id));

  EXPECT_FALSE(ProcessAlive(orphan_pid));
  EXPECT_FALSE(fs::exists(dir_ + "/sandboxes/" + spec.id));
  EXPECT_EQ(CgroupDirsOf(cgroup_name_, spec.id), 0);

  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_EQ(*owned, std::vector<std::string>{keep->id});
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", keep->id));
}

// The ticks a background process wrote, one per line (nanoseconds since the epoch).
std::vector<int64_t> Ticks(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream in(text);
  int64_t t;
  while (in >> t) out.push_back(t);
  return out;
}

int64_t LongestGapMs(const std::vector<int64_t>& ticks) {
  int64_t gap = 0;
  for (size_t i = 1; i < ticks.size(); ++i)
    gap = std::max(gap, (ticks[i] - ticks[i - 1]) / 1'000'000);
  return gap;
}

// ADR 0024: a pause stops every process of the sandbox where it is and a resume lets it go
// on (a clock-writing loop has a hole as long as the pause, and keeps writing after); a restart
// keeps it paused and still reaches its sandboxd after the resume; a paused sandbox is
// destroyed without a trace.
TEST_F(ManagerNsTest, PauseFreezesEveryProcessAcrossARestartAndResumeContinues) {
  if (!backend_->Capabilities().pause) GTEST_SKIP() << "no cgroup freezer on this host";
  auto a = manager_->lifecycle().Create("alice", {});
  ASSERT_TRUE(a) << a.error().ToString();
  const int pid = HostPid(a->id);
  ProcessOptions loop;
  loop.command = "while :; do date +%s%N >> /workspace/ticks; sleep 0.02; done";
  auto proc = manager_->processes().StartProcess("alice", a->id, loop);
  ASSERT_TRUE(proc) << proc.error().ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  auto p = manager_->lifecycle().Pause("alice", a->id);
  ASSERT_TRUE(p) << p.error().ToString();
  const int64_t paused_ns = SystemClock::Instance().NowUnixMs() * 1'000'000;
  EXPECT_EQ(p->state, SandboxState::kPaused);
  EXPECT_TRUE(ProcessAlive(pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  Restart();  // the server goes away and comes back while it is paused
  auto after = manager_->lifecycle().Get("alice", a->id);
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(after->state, SandboxState::kPaused);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  auto read_paused = manager_->files().ReadFile("alice", a->id, "ticks");
  ASSERT_FALSE(read_paused);
  EXPECT_EQ(read_paused.error().code(), ErrorCode::kConflict);

  const int64_t resumed_ns = SystemClock::Instance().NowUnixMs() * 1'000'000;
  auto r = manager_->lifecycle().Resume("alice", a->id);
  ASSERT_TRUE(r) << r.error().ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto ticks = manager_->files().ReadFile("alice", a->id, "ticks");  // re-dialled sandboxd
  ASSERT_TRUE(ticks) << ticks.error().ToString();
  const std::vector<int64_t> t = Ticks(*ticks);
  ASSERT_GE(t.size(), 10u);
  // The loop stood still for the 1.2 s paused. The adoption's handshake thaws the sandbox for
  // a moment (NsBackend::Adopt: a frozen sandboxd cannot answer), in which a loaded host has
  // seen one tick land: at most two, never the loop running on.
  const auto in_pause = std::count_if(
      t.begin(), t.end(), [&](int64_t x) { return x > paused_ns + 50'000'000 && x < resumed_ns; });
  EXPECT_LE(in_pause, 2) << "the loop ran while paused";
  EXPECT_GE(LongestGapMs(t), 550) << "the loop ran while paused";
  // And it goes on after the resume: ticks within the last 300 ms.
  EXPECT_GE(t.back(), SystemClock::Instance().NowUnixMs() * 1'000'000 - 400'000'000LL);

  ASSERT_TRUE(manager_->lifecycle().Pause("alice", a->id));
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", a->id));
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(MountsUnder(dir_ + "/sandboxes/" + a->id), 0);
  EXPECT_EQ(CgroupDirsOf(cgroup_name_, a->id), 0);
  EXPECT_FALSE(fs::exists(dir_ + "/sandboxes/" + a->id));
}

}  // namespace
}  // namespace asb::core
