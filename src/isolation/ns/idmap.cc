#include "isolation/ns/idmap.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "isolation/ns/files.h"

namespace asb::isolation::ns {
namespace {

int OpenTree(int dfd, const char* path, unsigned flags) {
  return static_cast<int>(::syscall(SYS_open_tree, dfd, path, flags));
}

int MoveMount(int from_dfd, const char* from, int to_dfd, const char* to, unsigned flags) {
  return static_cast<int>(::syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags));
}

void WaitChild(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<UniqueFd> MakeIdmapUserns(uint32_t host_base) {
  // The helper holds no descriptor and is ended by SIGKILL. It once waited for EOF on a pipe,
  // but a helper forked by a concurrent create on another thread inherits that pipe's write end
  // and, waiting on its own pipe, keeps ours open: two such helpers wait on each other forever.
  const pid_t parent = ::getpid();
  // fork-like clone (no CLONE_VM): the child only waits to be killed.
  pid_t pid = static_cast<pid_t>(
      ::syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid < 0) return FailErrno("clone(CLONE_NEWUSER) for an idmap");
  if (pid == 0) {
    // Async-signal-safe calls only. Drop every inherited descriptor (other creates' pipes and
    // sockets, whose peers wait for their EOF), and die with the server if it dies first.
    ::syscall(SYS_close_range, 0u, ~0u, 0u);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);
    for (;;) ::pause();
  }
  auto finish = [&] {
    ::kill(pid, SIGKILL);
    int status = 0;
    WaitChild(pid, &status);
  };
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string map = "0 " + std::to_string(host_base) + " 65536";
  for (const char* f : {"/uid_map", "/gid_map"}) {
    if (Status st = WriteControlFile(proc + f, map); !st) {
      finish();
      return Fail(std::move(st).error());
    }
  }
  UniqueFd ns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  int err = errno;
  finish();
  if (!ns) return Fail(Error::FromErrno(ErrorCode::kBackend, err, "open " + proc + "/ns/user"));
  return ns;
}

Result<UniqueFd> IdmappedTree(const std::string& dir, int userns_fd) {
  UniqueFd tree(OpenTree(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree) return FailErrno("open_tree " + dir);
  struct mount_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    return FailErrno("mount_setattr(MOUNT_ATTR_IDMAP) " + dir);
  }
  return tree;
}

Status AttachTree(int tree_fd, const std::string& dir) {
  if (MoveMount(tree_fd, "", AT_FDCWD, dir.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return FailErrno("move_mount onto " + dir);
  }
  return {};
}

Status IdmapMountInPlace(const std::string& dir, int userns_fd) {
  ASB_ASSIGN_OR_RETURN(UniqueFd tree, IdmappedTree(dir, userns_fd));
  // The detached tree holds the superblock (and so the loop device) while dir is unmounted.
  if (::umount2(dir.c_str(), UMOUNT_NOFOLLOW) != 0) return FailErrno("umount " + dir);
  if (Status st = AttachTree(tree.get(), dir); !st) {
    return Fail(std::move(st).error());  // dir is now empty; the caller's undo unmounts nothing
  }
  return {};
}

Status ReplaceMountInNamespace(int pid, int tree_fd, const std::string& target) {
  UniqueFd ns(::open(("/proc/" + std::to_string(pid) + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return FailErrno("open mount namespace of pid " + std::to_string(pid));
  // The child's report is read after it is reaped, never by waiting for EOF: a helper forked
  // meanwhile by a concurrent create may hold the write end too (see MakeIdmapUserns).
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return FailErrno("pipe");
  UniqueFd rd(p[0]), wr(p[1]);
  const char* tgt = target.c_str();
  pid_t child = ::fork();
  if (child < 0) return FailErrno("fork");
  if (child == 0) {
    // Async-signal-safe calls only from here on.
    int report[2] = {0, 0};
    auto fail = [&](int step) {
      report[0] = step;
      report[1] = errno;
      (void)!::write(p[1], report, sizeof report);
      ::_exit(1);
    };
    if (::setns(ns.get(), CLONE_NEWNS) != 0) fail(1);
    int old = OpenTree(AT_FDCWD, tgt, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (old < 0) fail(2);
    if (::umount2(tgt, MNT_DETACH | UMOUNT_NOFOLLOW) != 0) fail(3);
    if (MoveMount(tree_fd, "", AT_FDCWD, tgt, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
      int e = errno;
      (void)MoveMount(old, "", AT_FDCWD, tgt, MOVE_MOUNT_F_EMPTY_PATH);
      errno = e;
      fail(4);
    }
    ::_exit(0);
  }
  wr.Reset();
  int status = 0;
  WaitChild(child, &status);
  int report[2] = {0, 0};
  ssize_t n;
  while ((n = ::read(rd.get(), report, sizeof report)) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof report)) {
    static const char* kSteps[] = {"", "setns", "open_tree", "umount", "move_mount"};
    const char* step = report[0] >= 1 && report[0] <= 4 ? kSteps[report[0]] : "?";
    return Fail(Error::FromErrno(
        ErrorCode::kBackend, report[1],
        std::string(step) + " " + target + " in the mount namespace of " + std::to_string(pid)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail(Error::Backend("mount replacement helper failed for pid " + std::to_string(pid)));
  }
  return {};
}

}  // namespace asb::isolation::ns
