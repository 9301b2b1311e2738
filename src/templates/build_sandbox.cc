#include "templates/build_sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "common/unique_fd.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/contain.h"
#include "isolation/ns/files.h"
#include "isolation/ns/user.h"
#include "isolation/seccomp/seccomp_policy.h"
#include "templates/rooted_dir.h"

namespace asb::templates {

namespace {

namespace ns = isolation::ns;

// Longest wait from clone to the exec of the command (mounts and pivot_root take ~ms).
constexpr int64_t kStartTimeoutMs = 30'000;

// Replaces a symlink or file at `rel` by a directory (mode 0755) and checks it is one.
Status EnsureRealDir(const RootedDir& root, const std::string& rel) {
  auto [parent, leaf] = SplitParent(rel);
  ASB_ASSIGN_OR_RETURN(UniqueFd dir, root.OpenDir(parent, true, 0755, 0, 0));
  struct stat st;
  if (::fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    ASB_TRY(RemoveAt(dir.get(), leaf));
  }
  if (::mkdirat(dir.get(), leaf.c_str(), 0755) != 0 && errno != EEXIST) {
    return FailErrno("mkdir /" + rel);
  }
  return {};
}

std::string EnvValue(const std::vector<std::string>& env, const std::string& name) {
  std::string out;
  for (const auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      out = e.substr(name.size() + 1);
    }
  }
  return out;
}

// argv[0] as the paths to try, in PATH order (as execvp, without a shell).
std::vector<std::string> ProgramPaths(const BuildCommand& c) {
  if (c.argv[0].find('/') != std::string::npos) return {c.argv[0]};
  std::string path = EnvValue(c.env, "PATH");
  if (path.empty()) path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find(':', i);
    if (j == std::string::npos) j = path.size();
    std::string d = path.substr(i, j - i);
    if (!d.empty()) out.push_back(d + "/" + c.argv[0]);
    i = j + 1;
  }
  return out;
}

// The step's plan for the containment sequence. The parent makes sure proc/ and dev/ are
// real directories of the rootfs (a previous step may have replaced them by symlinks to host
// paths), so nothing is ever mounted over a host path.
Result<ns::ChildPlan> MakePlan(const BuildCommand& c, int null_fd) {
  if (c.argv.empty() || c.argv[0].empty()) return Fail(Error::InvalidArgument("empty command"));
  if (c.workdir.empty() || c.workdir[0] != '/') {
    return Fail(Error::InvalidArgument("workdir must be absolute"));
  }
  ASB_ASSIGN_OR_RETURN(RootedDir root, RootedDir::Open(c.rootfs));
  ASB_TRY(EnsureRealDir(root, "proc"));
  ASB_TRY(EnsureRealDir(root, "dev"));
  // Docker creates a missing WORKDIR (owned by root).
  ASB_TRY(root.OpenDir(c.workdir, /*create=*/true, 0755, 0, 0));
  ns::ChildPlan p;
  p.hostname = "build";
  p.own_network = false;  // the host's (see the header)
  p.die_with_parent = true;
  p.mounts = ns::MakeBuildMountPlan(c.rootfs, static_cast<uint64_t>(c.resources.tmp_size_mb) << 20);
  p.workdir = c.workdir;
  p.set_ids = true;
  p.uid = c.uid;
  p.gid = c.gid;
  p.rlimits = {isolation::SandboxSpec{}.nofile_limit, static_cast<rlim_t>(c.resources.pids_limit)};
  p.stdin_fd = null_fd;
  p.stdout_fd = c.stdout_fd;
  p.stderr_fd = c.stderr_fd;
  p.exec_paths = ProgramPaths(c);
  p.SetArgs(c.argv, c.env);
  return p;
}

// The pid that names a build cgroup "build-<pid>-<n>", or -1.
pid_t BuilderPid(const std::string& id) {
  if (id.rfind("build-", 0) != 0) return -1;
  auto dash = id.find('-', 6);
  if (dash == std::string::npos) return -1;
  auto n = ns::ParseU64(id.substr(6, dash - 6));
  return n && *n > 0 && *n < (1u << 30) ? static_cast<pid_t>(*n) : -1;
}

// Cgroups of builders that died without removing theirs (their steps died with them:
// PR_SET_PDEATHSIG). A live builder's are never touched; a non-empty one stays (rmdir fails).
void RemoveDeadBuildersCgroups(const ns::CgroupLayout& layout) {
  for (const auto& id : ns::ListCgroupIds(layout, kBuildCgroupName)) {
    const pid_t pid = BuilderPid(id);
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    (void)ns::RemoveCgroups(ns::CgroupPathsFor(layout, kBuildCgroupName, id));
  }
}

// Owns a step's cgroups: whatever is left in them is killed, then they are removed.
class StepCgroups {
 public:
  explicit StepCgroups(ns::CgroupPaths paths) : paths_(std::move(paths)) {}
  ~StepCgroups() {
    (void)ns::KillCgroupProcesses(paths_);
    (void)ns::WaitCgroupsEmpty(paths_, 10'000);
    (void)ns::RemoveCgroups(paths_);
  }
  StepCgroups(const StepCgroups&) = delete;
  StepCgroups& operator=(const StepCgroups&) = delete;
  const ns::CgroupPaths& paths() const { return paths_; }

 private:
  ns::CgroupPaths paths_;
};

}  // namespace

Result<int> RunBuildCommand(const BuildCommand& cmd) {
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return FailErrno("open /dev/null");
  ASB_ASSIGN_OR_RETURN(ns::ChildPlan plan, MakePlan(cmd, null_fd.get()));
  // The filter of every sandbox command (isolation/seccomp/seccomp_policy.h), installed last.
  ASB_ASSIGN_OR_RETURN(const isolation::SeccompProgram seccomp,
                       isolation::SeccompProgram::Compile());
  plan.install_seccomp = [&seccomp] { return seccomp.InstallInChild(); };

  ASB_ASSIGN_OR_RETURN(ns::CgroupLayout layout, ns::DetectCgroupLayout());
  RemoveDeadBuildersCgroups(layout);
  static std::atomic<uint64_t> next_step{0};
  const std::string id =
      "build-" + std::to_string(::getpid()) + "-" + std::to_string(next_step.fetch_add(1));
  StepCgroups cgroups(ns::CgroupPathsFor(layout, kBuildCgroupName, id));
  const core::SandboxResources& r = cmd.resources;
  ASB_TRY_CTX(ns::CreateCgroupsFromParent(layout, kBuildCgroupName, cgroups.paths(),
                                          {static_cast<uint64_t>(r.memory_mb) << 20,
                                           static_cast<uint32_t>(r.pids_limit), r.cpus}),
              "build cgroups");
  // Born in the command's cgroups (the sandbox's limits; no sandboxd headroom: none runs here).
  ASB_ASSIGN_OR_RETURN(
      ns::CloneIntoCgroups into,
      ns::CloneIntoCgroups::Prepare(layout, ns::CommandCgroupPaths(cgroups.paths())));
  // Identity map: ids on disk are the ids inside (see the header).
  auto identity_map = [](pid_t pid) -> Status {
    const std::string map = "0 0 " + std::to_string(ns::kIdsPerSlot);
    const std::string proc = "/proc/" + std::to_string(pid);
    ASB_TRY_CTX(ns::WriteControlFile(proc + "/uid_map", map), "uid_map");
    ASB_TRY_CTX(ns::WriteControlFile(proc + "/gid_map", map), "gid_map");
    return {};
  };
  auto child = ns::StartContainedChild(plan, into, identity_map, kStartTimeoutMs);
  if (!child) {
    Error e = std::move(child).error();
    if (e.sys_errno() == ENOENT && e.detail().rfind("exec ", 0) == 0) {
      // The build's own program was not found inside the build sandbox: its path is the
      // builder's words ("exec no-such-program: No such file or directory"), not host text.
      return Fail(Error(ErrorCode::kNotFound, e.detail(), ENOENT));
    }
    return Fail(std::move(e));
  }
  return ns::WaitChildExit(*child);
}

}  // namespace asb::templates
