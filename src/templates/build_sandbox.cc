#include "templates/build_sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"
#include "isolation/ns/child_step.h"
#include "isolation/ns/files.h"
#include "isolation/ns/user.h"
#include "templates/rooted_dir.h"

namespace asb::templates {

namespace {

using isolation::ns::ChildFailure;
using isolation::ns::Failed;

// Everything the child reads, computed before clone (the child does not allocate).
struct Plan {
  std::string rootfs;
  std::vector<std::string> dev_src, dev_dst;
  std::vector<std::string> link_target, link_path;
  std::string workdir;
  std::vector<std::string> candidates;  // absolute program paths to try, in PATH order
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  uid_t uid;
  gid_t gid;
  int out_fd, err_fd, null_fd;
};

struct FailureRecord {
  char step[48];
  char path[200];
  int32_t err;
};

[[noreturn]] void Report(int fd, const ChildFailure& f) {
  FailureRecord rec;
  std::memset(&rec, 0, sizeof rec);
  for (size_t i = 0; f.step && f.step[i] && i + 1 < sizeof rec.step; ++i) rec.step[i] = f.step[i];
  for (size_t i = 0; f.path && f.path[i] && i + 1 < sizeof rec.path; ++i) rec.path[i] = f.path[i];
  rec.err = f.err;
  (void)!::write(fd, &rec, sizeof rec);
  ::_exit(127);
}

// Mounts, relative to the cwd (the rootfs), before pivot_root: the host's device nodes are
// still reachable. The parent made sure proc/ and dev/ are real directories (not symlinks).
int MountKernelFsInChild(const Plan& p, ChildFailure* f) {
  if (::mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Failed(f, "mount proc", errno);
  }
  if (::mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536") != 0) {
    return Failed(f, "mount /dev tmpfs", errno);
  }
  for (size_t i = 0; i < p.dev_dst.size(); ++i) {
    int fd = ::open(p.dev_dst[i].c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return Failed(f, "create device bind target", errno, p.dev_dst[i].c_str());
    ::close(fd);
    if (::mount(p.dev_src[i].c_str(), p.dev_dst[i].c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Failed(f, "bind device node", errno, p.dev_dst[i].c_str());
    }
  }
  if (::mkdir("dev/pts", 0755) != 0) return Failed(f, "mkdir", errno, "dev/pts");
  if (::mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") != 0) {
    return Failed(f, "mount devpts", errno);
  }
  if (::mkdir("dev/shm", 01777) != 0) return Failed(f, "mkdir", errno, "dev/shm");
  if (::mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=67108864") != 0) {
    return Failed(f, "mount /dev/shm", errno);
  }
  for (size_t i = 0; i < p.link_path.size(); ++i) {
    if (::symlink(p.link_target[i].c_str(), p.link_path[i].c_str()) != 0) {
      return Failed(f, "symlink", errno, p.link_path[i].c_str());
    }
  }
  return 0;
}

[[noreturn]] void RunInChild(const Plan& p, int report, int parent_end) {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) (void)::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::close(parent_end);
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  char go = 0;
  if (::read(report, &go, 1) != 1 || go != 'g') ::_exit(126);

  ChildFailure f;
  const char* step = nullptr;
  // 1. Root of the new user namespace (identity-mapped by the parent).
  if (int e = isolation::ns::BecomeRootInChild(&step)) Report(report, {step, nullptr, e});
  // 2. Nothing propagates to or from the host; the rootfs bound onto itself becomes "/".
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    Report(report, {"make / private", nullptr, errno});
  }
  if (::mount(p.rootfs.c_str(), p.rootfs.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    Report(report, {"bind rootfs", p.rootfs.c_str(), errno});
  }
  if (::chdir(p.rootfs.c_str()) != 0) Report(report, {"chdir rootfs", p.rootfs.c_str(), errno});
  if (::sethostname("build", 5) != 0) Report(report, {"sethostname", nullptr, errno});
  // 3. /proc and /dev, then pivot_root and detach the host's tree.
  if (MountKernelFsInChild(p, &f) != 0) Report(report, f);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) Report(report, {"pivot_root", nullptr, errno});
  if (::umount2(".", MNT_DETACH) != 0) Report(report, {"detach old root", nullptr, errno});
  if (::chdir("/") != 0 || ::chdir(p.workdir.c_str()) != 0) {
    Report(report, {"chdir", p.workdir.c_str(), errno});
  }
  // 4. The Dockerfile's USER.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) Report(report, {"setgroups", nullptr, errno});
  if (::syscall(SYS_setresgid, p.gid, p.gid, p.gid) != 0) {
    Report(report, {"setresgid", nullptr, errno});
  }
  if (::syscall(SYS_setresuid, p.uid, p.uid, p.uid) != 0) {
    Report(report, {"setresuid", nullptr, errno});
  }
  // 5. stdin /dev/null, output to the builder, nothing else open except the report socket
  //    (moved out of the way first, then to 3, close-on-exec).
  int moved = ::fcntl(report, F_DUPFD_CLOEXEC, 64);
  if (moved < 0) Report(report, {"dup report fd", nullptr, errno});
  report = moved;
  if (::dup2(p.null_fd, 0) < 0 || ::dup2(p.out_fd, 1) < 0 || ::dup2(p.err_fd, 2) < 0 ||
      ::dup3(report, 3, O_CLOEXEC) < 0) {
    Report(report, {"dup2", nullptr, errno});
  }
  report = 3;
  if (::syscall(SYS_close_range, 4u, ~0u, 0u) != 0) Report(report, {"close_range", nullptr, errno});
  int err = ENOENT;
  for (const auto& c : p.candidates) {
    ::execve(c.c_str(), p.argv.data(), p.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
    if (err != ENOENT) break;
  }
  Report(report, {"exec", p.argv[0], err});
}

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

Result<Plan> MakePlan(const BuildCommand& c, int null_fd) {
  if (c.argv.empty() || c.argv[0].empty()) return Fail(Error::InvalidArgument("empty command"));
  if (c.workdir.empty() || c.workdir[0] != '/') {
    return Fail(Error::InvalidArgument("workdir must be absolute"));
  }
  ASB_ASSIGN_OR_RETURN(RootedDir root, RootedDir::Open(c.rootfs));
  ASB_TRY(EnsureRealDir(root, "proc"));
  ASB_TRY(EnsureRealDir(root, "dev"));
  // Docker creates a missing WORKDIR (owned by root).
  ASB_TRY(root.OpenDir(c.workdir, /*create=*/true, 0755, 0, 0));
  Plan p;
  p.rootfs = c.rootfs;
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    p.dev_src.push_back(std::string("/dev/") + node);
    p.dev_dst.push_back(std::string("dev/") + node);
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "fd"},
                                                       {"/proc/self/fd/0", "stdin"},
                                                       {"/proc/self/fd/1", "stdout"},
                                                       {"/proc/self/fd/2", "stderr"},
                                                       {"pts/ptmx", "ptmx"}};
  for (const auto& [target, name] : links) {
    p.link_target.emplace_back(target);
    p.link_path.push_back(std::string("dev/") + name);
  }
  p.workdir = c.workdir;
  if (c.argv[0].find('/') != std::string::npos) {
    p.candidates.push_back(c.argv[0]);
  } else {
    std::string path = EnvValue(c.env, "PATH");
    if (path.empty()) path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    size_t i = 0;
    while (i <= path.size()) {
      size_t j = path.find(':', i);
      if (j == std::string::npos) j = path.size();
      std::string d = path.substr(i, j - i);
      if (!d.empty()) p.candidates.push_back(d + "/" + c.argv[0]);
      i = j + 1;
    }
  }
  p.argv_storage = c.argv;
  p.env_storage = c.env;
  for (auto& a : p.argv_storage) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (auto& e : p.env_storage) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.uid = c.uid;
  p.gid = c.gid;
  p.out_fd = c.stdout_fd;
  p.err_fd = c.stderr_fd;
  p.null_fd = null_fd;
  return p;
}

int WaitStatus(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, __WALL) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<int> RunBuildCommand(const BuildCommand& cmd) {
  UniqueFd null_fd(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null_fd) return FailErrno("open /dev/null");
  ASB_ASSIGN_OR_RETURN(Plan plan, MakePlan(cmd, null_fd.get()));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return FailErrno("socketpair");
  }
  UniqueFd parent_end(sv[0]);
  UniqueFd child_end(sv[1]);
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  args.exit_signal = SIGCHLD;
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  long rc = ::syscall(SYS_clone3, &args, sizeof args);
  if (rc == 0) RunInChild(plan, child_end.get(), parent_end.get());
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (rc < 0) return Fail(Error::FromErrno(ErrorCode::kBackend, clone_errno, "clone3"));
  const pid_t pid = static_cast<pid_t>(rc);
  child_end.Reset();
  auto kill_and_fail = [&](Error e) -> Result<int> {
    ::kill(pid, SIGKILL);
    (void)WaitStatus(pid);
    return Fail(std::move(e));
  };
  // Identity map: ids on disk are the ids inside (see the header).
  const std::string map = "0 0 " + std::to_string(isolation::ns::kIdsPerSlot);
  const std::string proc = "/proc/" + std::to_string(pid);
  if (auto st = isolation::ns::WriteControlFile(proc + "/uid_map", map); !st) {
    return kill_and_fail(st.error().WithContext("uid_map"));
  }
  if (auto st = isolation::ns::WriteControlFile(proc + "/gid_map", map); !st) {
    return kill_and_fail(st.error().WithContext("gid_map"));
  }
  if (::write(parent_end.get(), "g", 1) != 1) {
    return kill_and_fail(Error::FromErrno(ErrorCode::kBackend, errno, "release child"));
  }
  // A failure record, or EOF once exec succeeded (the socket is close-on-exec).
  FailureRecord rec;
  ssize_t got;
  do {
    got = ::read(parent_end.get(), &rec, sizeof rec);
  } while (got < 0 && errno == EINTR);
  const int status = WaitStatus(pid);
  if (got == static_cast<ssize_t>(sizeof rec)) {
    rec.step[sizeof rec.step - 1] = '\0';
    rec.path[sizeof rec.path - 1] = '\0';
    std::string what = rec.step;
    if (rec.path[0] != '\0') what += std::string(" ") + rec.path;
    if (what.rfind("exec", 0) == 0 && rec.err == ENOENT) {
      return Fail(Error::FromErrno(ErrorCode::kNotFound, rec.err, what));
    }
    return Fail(Error::FromErrno(ErrorCode::kBackend, rec.err, what));
  }
  if (status < 0) return FailErrno("waitpid");
  return status;
}

}  // namespace asb::templates
