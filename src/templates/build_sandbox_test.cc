// The build sandbox over a copy of the base template (root; skips without them).
#include "templates/build_sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/unique_fd.h"
#include "isolation/ns/cgroup.h"

namespace asb::templates {
namespace {

namespace fs = std::filesystem;

std::string BaseRootfs() {
  const char* d = std::getenv("AGENT_SANDBOX_DATA_DIR");
  return std::string(d ? d : "/var/lib/agent-sandbox") + "/templates/base/rootfs";
}

class BuildSandboxTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || !fs::exists(BaseRootfs() + "/bin/sh")) return;
    char tmpl[] = "/var/tmp/asb-build-sandbox-test.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    // A small rootfs: the programs the tests use and their libraries, copied from the base
    // template (a copy of all of base costs ~300 MB and many seconds).
    const std::string cmd =
        "set -e; R=$(realpath " + BaseRootfs() + "); D=" + dir_ +
        "/rootfs; mkdir $D; cd $R; "
        "bins='dash sh id touch chown cat ls grep sleep rm ln mkdir test true head tr mount'; "
        "files=''; for b in $bins; do files=\"$files usr/bin/$b\"; "
        "for l in $(ldd usr/bin/$b 2>/dev/null | grep -o '/[^ ]*'); do "
        "files=\"$files $(chroot $R realpath $l | sed 's|^/||') "
        "$(chroot $R realpath $(dirname $l) | sed 's|^/||')/$(basename $l)\"; done; done; "
        "cp -a --parents bin lib lib64 sbin usr/lib64 etc/passwd etc/group "
        "$(echo $files | tr ' ' '\\n' | sort -u) $D/; "
        "mkdir -p $D/tmp $D/proc $D/dev $D/home && chmod 1777 $D/tmp";
    if (std::system(cmd.c_str()) != 0) {
      fs::remove_all(dir_);  // the tests skip; nothing is left behind
      dir_.clear();
    }
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (dir_.empty())
      GTEST_SKIP() << "no base template at " << BaseRootfs() << " (or copying its programs failed)";
    out_path_ = dir_ + "/out";
    out_.Reset(::open(out_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  }

  Result<int> Run(const std::string& script, uid_t uid = 0, std::string workdir = "/",
                  std::vector<std::string> env = {}) {
    return Run(script, core::DefaultResources(core::Limits::Defaults()), uid, workdir, env);
  }
  Result<int> Run(const std::string& script, const core::SandboxResources& resources, uid_t uid = 0,
                  std::string workdir = "/", std::vector<std::string> env = {}) {
    BuildCommand c;
    c.resources = resources;
    c.rootfs = dir_ + "/rootfs";
    c.argv = {"/bin/sh", "-c", script};
    c.env = std::move(env);
    c.env.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    c.workdir = std::move(workdir);
    c.uid = uid;
    c.gid = uid;
    c.stdout_fd = out_.get();
    c.stderr_fd = out_.get();
    return RunBuildCommand(c);
  }
  std::string Output() {
    std::ifstream in(out_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string Root() { return dir_ + "/rootfs"; }

  static std::string dir_;
  std::string out_path_;
  UniqueFd out_;
};
std::string BuildSandboxTest::dir_;

TEST_F(BuildSandboxTest, RootWritesTheRootfsAsHostRoot) {
  auto st = Run("id -u; echo $$; echo made > /etc/made-by-run; ls /dev/null /proc/self >/dev/null");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(*st, 0) << Output();
  EXPECT_EQ(Output(), "0\n1\n");  // root inside, PID 1 of its own pid namespace
  struct stat s;
  ASSERT_EQ(::stat((Root() + "/etc/made-by-run").c_str(), &s), 0);
  EXPECT_EQ(s.st_uid, 0u);
}

TEST_F(BuildSandboxTest, UserWorkdirAndEnvironment) {
  auto st = Run("id -u; id -g; pwd; echo \"$GREETING\"; touch mine", 1000, "/home/made",
                {"GREETING=hello world"});
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(*st, 1) << Output();  // touch in a root-owned WORKDIR fails as uid 1000
  EXPECT_NE(Output().find("1000\n1000\n/home/made\nhello world\n"), std::string::npos) << Output();
  ASSERT_TRUE(Run("chown 1000:1000 /home/made"));
  out_.Reset(::open(out_path_.c_str(), O_RDWR | O_TRUNC | O_CLOEXEC));
  auto again = Run("touch mine", 1000, "/home/made");
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0) << Output();
  struct stat s;
  ASSERT_EQ(::stat((Root() + "/home/made/mine").c_str(), &s), 0);
  EXPECT_EQ(s.st_uid, 1000u);  // the sandbox user's id on disk, as in an mmdebstrap template
  EXPECT_EQ(s.st_gid, 1000u);
}

TEST_F(BuildSandboxTest, ExitStatusAndLeftoverProcesses) {
  auto three = Run("exit 3");
  ASSERT_TRUE(three);
  EXPECT_EQ(*three, 3);
  // A background process dies with the step (its pid namespace ends): no 100 s wait.
  auto start = std::chrono::steady_clock::now();
  auto bg = Run("sleep 100 & exit 0");
  ASSERT_TRUE(bg);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(BuildSandboxTest, MissingProgramIsNotFound) {
  BuildCommand c;
  c.rootfs = Root();
  c.argv = {"no-such-program-here"};
  c.env = {"PATH=/usr/bin:/bin"};
  auto st = RunBuildCommand(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(st.error().message().find("no-such-program-here"), std::string::npos);
}

TEST_F(BuildSandboxTest, HostTreeIsNotVisibleAndPlantedLinksStayInside) {
  // The test's own directory (outside the rootfs) must not be reachable.
  std::ofstream(dir_ + "/host-secret") << "TOPSECRET";
  auto st = Run("cat " + dir_ + "/host-secret; ls /var/tmp | grep -c asb-build-sandbox-test");
  ASSERT_TRUE(st);
  EXPECT_EQ(Output().find("TOPSECRET"), std::string::npos) << Output();
  EXPECT_NE(Output().find("\n0\n"), std::string::npos) << Output();
  // A RUN that replaces /proc and /dev by symlinks to host paths: the next step repairs them
  // inside the rootfs and never mounts over a host path.
  ASSERT_TRUE(
      Run("rm -rf /proc /dev 2>/dev/null; ln -s " + dir_ + " /proc; ln -s /etc /dev; true"));
  auto next = Run("test -d /proc/self && test -c /dev/null && echo ok");
  ASSERT_TRUE(next) << next.error().message();
  EXPECT_NE(Output().find("ok"), std::string::npos) << Output();
  EXPECT_TRUE(fs::is_directory(Root() + "/proc"));
  EXPECT_FALSE(fs::is_symlink(Root() + "/proc"));
}

// The containment of every sandbox command (ADR 0017): no_new_privs, the seccomp filter
// (mode 2), a cgroup namespace and rlimits.
TEST_F(BuildSandboxTest, StepRunsUnderNoNewPrivsSeccompAndRlimits) {
  auto st =
      Run("grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; cat /proc/self/cgroup; "
          "grep -E '^Max (open files|processes|core file size) ' /proc/self/limits | tr -s ' '");
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(*st, 0) << Output();
  const std::string out = Output();
  EXPECT_NE(out.find("NoNewPrivs:\t1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Seccomp:\t2\n"), std::string::npos) << out;
  // The cgroup namespace is rooted at the step's own cgroups: every line ends in ":/".
  EXPECT_EQ(out.find(":/build-"), std::string::npos) << out;
  EXPECT_EQ(out.find(":/agent-sandbox-build"), std::string::npos) << out;
  const core::Limits lim = core::Limits::Defaults();
  EXPECT_NE(out.find("Max processes " + std::to_string(lim.default_pids_limit) + " " +
                     std::to_string(lim.default_pids_limit)),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Max open files 4096 4096"), std::string::npos) << out;
  EXPECT_NE(out.find("Max core file size 1 1"), std::string::npos) << out;
  // The filter of sandbox commands: no new namespaces, no mounts (EPERM, "Operation not
  // permitted"), though root of its user namespace could otherwise make both.
  auto mount = Run("mount -t tmpfs x /tmp && echo MOUNTED; true");
  ASSERT_TRUE(mount);
  EXPECT_EQ(Output().find("MOUNTED"), std::string::npos) << Output();
  EXPECT_NE(Output().find("mount: "), std::string::npos) << Output();  // it ran, and failed
}

// A fork bomb fills the step's pids cgroup and stops there; the step ends and its cgroups go.
TEST_F(BuildSandboxTest, ForkBombIsStoppedByThePidsLimit) {
  core::SandboxResources r = core::DefaultResources(core::Limits::Defaults());
  r.pids_limit = 16;
  const auto start = std::chrono::steady_clock::now();
  auto st = Run("i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done; echo ALL-STARTED", r);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_NE(*st, 0) << Output();
  EXPECT_EQ(Output().find("ALL-STARTED"), std::string::npos) << Output();
  EXPECT_NE(Output().find("fork"), std::string::npos) << Output();  // dash: "Cannot fork"
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  auto layout = isolation::ns::DetectCgroupLayout();
  ASSERT_TRUE(layout);
  const std::string mine = "build-" + std::to_string(::getpid()) + "-";
  for (const auto& id : isolation::ns::ListCgroupIds(*layout, kBuildCgroupName)) {
    EXPECT_NE(id.rfind(mine, 0), 0u) << "cgroup left: " << id;
  }
}

// The memory limit (no swap) applies: a step that holds more is killed by the OOM killer.
TEST_F(BuildSandboxTest, MemoryLimitKillsAStepThatHoldsMore) {
  core::SandboxResources r = core::DefaultResources(core::Limits::Defaults());
  r.memory_mb = 64;
  auto st = Run("x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo SURVIVED ${#x}", r);
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(Output().find("SURVIVED"), std::string::npos) << Output();
  EXPECT_NE(*st, 0);
  auto small = Run("x=$(head -c 1000000 /dev/zero | tr '\\0' a); echo SURVIVED ${#x}", r);
  ASSERT_TRUE(small);
  EXPECT_NE(Output().find("SURVIVED 1000000"), std::string::npos) << Output();
}

}  // namespace
}  // namespace asb::templates
