#include "isolation/ns/ns_test_support.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/ids.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/user.h"

namespace asb::isolation::ns::testing {
namespace fs = std::filesystem;

std::string NsBackendTest::RootfsPath() {
  if (const char* env = ::getenv("ASB_TEST_ROOTFS")) return env;
  const char* data = ::getenv("AGENT_SANDBOX_DATA_DIR");  // scripts/test.sh sets it
  const std::string tmpl =
      std::string(data != nullptr ? data : "/var/lib/agent-sandbox") + "/templates/base/rootfs";
  if (fs::exists(tmpl + "/bin/sh")) return tmpl;
  return "/tmp/asbtest/rootfs";
}

std::string NsBackendTest::SandboxdPath() {
  if (const char* env = ::getenv("ASB_SANDBOXD")) return env;
  if (const char* env = ::getenv("AGENT_SANDBOX_SANDBOXD")) return env;  // scripts/test.sh
  // Tests live in <build>/tests, programs in <build>/bin.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path() / "bin" / "sandboxd").string();
}

void NsBackendTest::SetUp() {
  if (::getuid() != 0) GTEST_SKIP() << "needs root (namespaces, cgroups, loop devices)";
  rootfs_ = RootfsPath();
  if (!fs::exists(rootfs_ + "/bin/sh")) {
    GTEST_SKIP() << "no rootfs at " << rootfs_ << " (set ASB_TEST_ROOTFS)";
  }
  if (!fs::exists(rootfs_ + "/workspace")) {
    GTEST_SKIP() << "rootfs " << rootfs_ << " has no /workspace mount point";
  }
  if (::access(SandboxdPath().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no sandboxd at " << SandboxdPath() << " (set ASB_SANDBOXD)";
  }
  state_dir_ = "/tmp/asb-nstest-" + RandomHex(4);
  cgroup_name_ = "asb-nstest-" + RandomHex(4);
  options_.state_dir = state_dir_;
  options_.sandboxd_path = SandboxdPath();
  options_.cgroup_name = cgroup_name_;
  options_.workspace_pool_size = 1;
  options_.default_workspace_bytes = 64ull << 20;
  options_.start_timeout_ms = 10'000;
  auto b = MakeNsBackend(options_);
  ASSERT_TRUE(b) << b.error().ToString();
  backend_ = std::move(*b);
}

void NsBackendTest::TearDown() {
  if (backend_) {
    if (auto ids = backend_->ListOwned()) {
      for (const auto& id : *ids) (void)backend_->Destroy(id);
    }
  }
  backend_.reset();  // joins the pool thread
  if (!state_dir_.empty()) {
    std::error_code ec;
    fs::remove_all(state_dir_, ec);
  }
  if (!cgroup_name_.empty()) {
    if (auto layout = DetectCgroupLayout()) {
      for (const auto& m : {layout->v2_mount, layout->v1_memory, layout->v1_pids, layout->v1_cpu,
                            layout->v1_cpuacct, layout->v1_freezer}) {
        if (!m.empty()) ::rmdir((m + "/" + cgroup_name_).c_str());
      }
    }
  }
}

SandboxSpec NsBackendTest::Spec() {
  SandboxSpec s;
  s.id = NewId("sb_");
  s.rootfs = rootfs_;
  s.cpus = 1.0;
  s.memory_bytes = 256ull << 20;
  s.pids_limit = 128;
  s.workspace_bytes = 64ull << 20;
  s.tmp_bytes = 16ull << 20;
  return s;
}

std::shared_ptr<Sandbox> NsBackendTest::MustCreate(const SandboxSpec& spec) {
  auto sb = backend_->Create(spec);
  EXPECT_TRUE(sb) << sb.error().ToString();
  return sb ? *sb : nullptr;
}

protocol::CollectedExec NsBackendTest::Sh(Sandbox& sb, const std::string& command,
                                          uint64_t timeout_ms) {
  protocol::ExecRequest req;
  req.command = command;
  req.timeout_ms = timeout_ms;
  auto r = protocol::ExecCollect(*sb.connection(), req);
  EXPECT_TRUE(r) << command << ": " << r.error().ToString();
  return r ? *r : protocol::CollectedExec{};
}

std::unique_ptr<Backend> NsBackendTest::NewBackend() {
  auto b = MakeNsBackend(options_);
  EXPECT_TRUE(b) << b.error().ToString();
  return b ? std::move(*b) : nullptr;
}

HostSnapshot NsBackendTest::Snapshot() const {
  HostSnapshot s;
  std::ifstream mi("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mi, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, mnt;
    f >> id >> parent >> dev >> root >> mnt;
    if (mnt.rfind(state_dir_, 0) == 0 && mnt.find("/.pool/") == std::string::npos) {
      s.mounts.insert(mnt + " " + dev);
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/block", ec)) {
    std::ifstream bf(e.path() / "loop" / "backing_file");
    std::string backing;
    if (std::getline(bf, backing) && backing.rfind(state_dir_, 0) == 0 &&
        backing.find("/.pool/") == std::string::npos) {
      s.loops.insert(e.path().filename().string() + " " + backing);
    }
  }
  if (auto layout = DetectCgroupLayout()) {
    for (const auto& m : {layout->v2_mount, layout->v1_memory, layout->v1_pids, layout->v1_cpu,
                          layout->v1_cpuacct, layout->v1_freezer}) {
      if (m.empty()) continue;
      for (const auto& e : fs::directory_iterator(m + "/" + cgroup_name_, ec)) {
        if (e.is_directory()) s.cgroups.insert(e.path().string());
      }
    }
  }
  for (auto it = fs::recursive_directory_iterator(state_dir_, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string p = it->path().string();
    // The workspace pool refills in the background (and holds its own mounts and loop
    // devices until the backend goes); its images are not a sandbox's leftovers.
    if (p.find("/.pool/") != std::string::npos) continue;
    // Nor is the blank image a first create (or the pool's refill) makes to clone from
    // (workspace_seed.h), or is making: a cache the backend keeps for the next one.
    if (p.find("/.seeds/blank-") != std::string::npos) continue;
    if (p.find("/.seeds/making-") != std::string::npos) continue;
    s.files.insert(p);
  }
  for (const auto& e : fs::directory_iterator(kUidRegistryDir, ec)) {
    std::ifstream f(e.path());
    std::string owner;
    if (std::getline(f, owner) && owner.rfind(state_dir_ + "/", 0) == 0) {
      s.uid_ranges.insert(e.path().filename().string() + " " + owner);
    }
  }
  return s;
}

std::string Describe(const HostSnapshot& s) {
  std::ostringstream out;
  auto list = [&](const char* what, const std::set<std::string>& items) {
    out << what << ":";
    for (const auto& i : items) out << " [" << i << "]";
    out << "\n";
  };
  list("mounts", s.mounts);
  list("loops", s.loops);
  list("cgroups", s.cgroups);
  list("files", s.files);
  list("uid ranges", s.uid_ranges);
  return out.str();
}

}  // namespace asb::isolation::ns::testing
