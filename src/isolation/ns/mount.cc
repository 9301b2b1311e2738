#include "isolation/ns/mount.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace asb::isolation::ns {

void AddScratchFile(MountPlan* p, std::string content, const std::string& target, bool optional) {
  const std::string path = "tmp/f" + std::to_string(p->scratch_files.size());
  p->scratch_files.push_back({std::move(content), path, target, optional});
}

namespace {

// What every contained root gets: a fresh /proc with Docker's masked and read-only paths and a
// minimal /dev with a private devpts and a size-limited /dev/shm.
void AddProcAndDev(MountPlan* p, uint64_t shm_bytes) {
  p->proc = "proc";
  p->dev = "dev";
  p->dev_pts = "dev/pts";
  p->dev_shm = "dev/shm";
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
    p->dev_node_src.push_back(std::string("/dev/") + node);
    p->dev_node_dst.push_back(std::string("dev/") + node);
  }
  const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "fd"},
                                                       {"/proc/self/fd/0", "stdin"},
                                                       {"/proc/self/fd/1", "stdout"},
                                                       {"/proc/self/fd/2", "stderr"},
                                                       {"pts/ptmx", "ptmx"}};
  for (const auto& [target, name] : links) {
    p->dev_link_target.emplace_back(target);
    p->dev_link_path.push_back(std::string("dev/") + name);
  }
  // Docker's default masked and read-only paths (moby oci/defaults.go).
  for (const char* f : {"proc/kcore", "proc/keys", "proc/latency_stats", "proc/timer_list",
                        "proc/timer_stats", "proc/sched_debug"}) {
    p->masked_files.emplace_back(f);
  }
  // Host facts: the kernel's build configuration, every
  // block device of the host (other sandboxes' loop devices among them).
  for (const char* f : {"proc/config.gz", "proc/partitions"}) p->masked_files.emplace_back(f);
  for (const char* d : {"proc/acpi", "proc/asound", "proc/scsi"}) p->masked_dirs.emplace_back(d);
  for (const char* d : {"proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger"}) {
    p->readonly_paths.emplace_back(d);
  }
  p->shm_options = "mode=1777,size=" + std::to_string(shm_bytes);
  p->dev_options = "mode=755,size=65536";
  p->devpts_options = "newinstance,ptmxmode=0666,mode=0620,gid=5";
}

}  // namespace

MountPlan MakeMountPlan(const std::string& rootfs, const std::string& ws_source,
                        const std::string& hostname_text, uint64_t tmp_bytes) {
  MountPlan p;
  p.root = rootfs;
  p.ws_source = ws_source;
  p.workspace = rootfs + "/workspace";
  p.etc_hostname = rootfs + "/etc/hostname";
  p.etc_resolv = rootfs + "/etc/resolv.conf";
  AddProcAndDev(&p, tmp_bytes);
  p.sys = "sys";
  p.tmp = "tmp";
  AddScratchFile(&p, kSandboxCmdline, "proc/cmdline", /*optional=*/true);
  if (!hostname_text.empty()) AddScratchFile(&p, hostname_text, "etc/hostname", true);
  for (const char* d : {"sys/firmware", "sys/devices/virtual/powercap"}) {
    p.masked_dirs.emplace_back(d);
  }
  p.tmp_options = "mode=1777,size=" + std::to_string(tmp_bytes);
  return p;
}

MountPlan MakeBuildMountPlan(const std::string& rootfs, uint64_t shm_bytes) {
  MountPlan p;
  p.root = rootfs;
  p.read_only_root = false;
  AddProcAndDev(&p, shm_bytes);
  return p;
}

MountPlan MakeJailMountPlan(
    const std::string& root, std::vector<MountPlan::HostBind> binds,
    const std::vector<std::pair<std::string, std::string>>& extra_dev_nodes) {
  MountPlan p;
  p.root = root;
  p.host_binds = std::move(binds);
  AddProcAndDev(&p, 1 << 20);
  for (const auto& [source, name] : extra_dev_nodes) {
    p.dev_node_src.push_back(source);
    p.dev_node_dst.push_back("dev/" + name);
  }
  return p;
}

namespace {

// Makes the mount at `path` read-only, keeping the flags it has: in a user namespace the
// flags of mounts inherited from the host are locked and may only be added to (mount(2)).
int RemountReadOnly(const char* path, unsigned long extra) {
  struct statfs sfs;
  if (::statfs(path, &sfs) != 0) return errno;
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY | extra;
  if (sfs.f_flags & ST_NOSUID) flags |= MS_NOSUID;
  if (sfs.f_flags & ST_NODEV) flags |= MS_NODEV;
  if (sfs.f_flags & ST_NOEXEC) flags |= MS_NOEXEC;
  if (sfs.f_flags & ST_NOATIME) flags |= MS_NOATIME;
  if (sfs.f_flags & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (sfs.f_flags & ST_RELATIME) flags |= MS_RELATIME;
  if (::mount(nullptr, path, nullptr, flags, nullptr) != 0) return errno;
  return 0;
}

namespace {

// The sandbox's own share of inotify (inotify(7), "/proc interfaces"; user_namespaces(7):
// since Linux 5.11 the limits are counted per user namespace and charged to every ancestor).
// Every sandbox's user namespace is created by the server, so without these the sandboxes
// together count against the server's user in the host namespace (root: 128 instances by
// default), and code in one sandbox could take them all from the host and from the other
// sandboxes. 16 instances: sandboxd's 8 directory watches (protocol::kWatchMaxOps) and as many
// for the sandbox's own programs; 65536 watches: 8 of 8192 directories. Written from inside
// the new user namespace (its root holds CAP_SYS_RESOURCE there), before /proc/sys goes
// read-only. Kernels without the files (before 5.11 the limits were per real uid) skip this.
constexpr struct {
  const char* file;
  const char* value;
} kUserNsLimits[] = {{"sys/user/max_inotify_instances", "16\n"},
                     {"sys/user/max_inotify_watches", "65536\n"}};

int LimitUserNamespaceInChild(const MountPlan& p, ChildFailure* f) {
  char path[256];
  for (const auto& l : kUserNsLimits) {
    int n = snprintf(path, sizeof path, "%s/%s", p.proc.c_str(), l.file);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof path)
      return Failed(f, "limit", ENAMETOOLONG, l.file);
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return Failed(f, "limit", errno, path);
    }
    ssize_t len = static_cast<ssize_t>(strlen(l.value));
    ssize_t w = ::write(fd, l.value, static_cast<size_t>(len));
    int err = errno;
    ::close(fd);
    if (w != len) return Failed(f, "limit", w < 0 ? err : EIO, path);
  }
  return 0;
}

}  // namespace

int MountProcInChild(const MountPlan& p, ChildFailure* f) {
  if (::mount("proc", p.proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Failed(f, "mount proc", errno, p.proc.c_str());
  }
  if (int rc = LimitUserNamespaceInChild(p, f); rc != 0) return rc;
  for (const auto& file : p.masked_files) {
    if (::mount("/dev/null", file.c_str(), nullptr, MS_BIND, nullptr) != 0 && errno != ENOENT) {
      return Failed(f, "mask", errno, file.c_str());
    }
  }
  return 0;
}

int MaskDirsAndReadOnlyPathsInChild(const MountPlan& p, ChildFailure* f) {
  for (const auto& dir : p.masked_dirs) {
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "mode=555,size=4096") != 0 &&
        errno != ENOENT) {
      return Failed(f, "mask", errno, dir.c_str());
    }
  }
  for (const auto& path : p.readonly_paths) {
    if (::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      if (errno == ENOENT) continue;
      return Failed(f, "bind read-only path", errno, path.c_str());
    }
    if (int e = RemountReadOnly(path.c_str(), MS_NOSUID | MS_NODEV | MS_NOEXEC)) {
      return Failed(f, "remount read-only", e, path.c_str());
    }
  }
  return 0;
}

// The scratch files: a small tmpfs on the new root's tmp (the real /tmp is mounted over the
// spot afterwards), each file written and bound read-only onto its target, then the tmpfs
// detached (the binds keep its files). The binds' source is that tmpfs: mountinfo shows
// "/f0 /proc/cmdline ... - tmpfs", no host path.
int BindScratchFilesInChild(const MountPlan& p, ChildFailure* f) {
  if (p.scratch_files.empty()) return 0;
  if (::mount("tmpfs", p.tmp.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=755,size=65536") != 0) {
    return Failed(f, "mount scratch tmpfs", errno, p.tmp.c_str());
  }
  for (const auto& s : p.scratch_files) {
    int fd = ::open(s.path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return Failed(f, "create scratch file", errno, s.path.c_str());
    size_t done = 0;
    while (done < s.content.size()) {
      ssize_t n = ::write(fd, s.content.data() + done, s.content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : EIO;
        ::close(fd);
        return Failed(f, "write scratch file", e, s.path.c_str());
      }
      done += static_cast<size_t>(n);
    }
    ::close(fd);
    if (::mount(s.path.c_str(), s.target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      if (errno == ENOENT && s.optional) continue;
      return Failed(f, "bind scratch file", errno, s.target.c_str());
    }
    if (int e = RemountReadOnly(s.target.c_str(), MS_NOSUID | MS_NODEV | MS_NOEXEC)) {
      return Failed(f, "remount read-only", e, s.target.c_str());
    }
  }
  if (::umount2(p.tmp.c_str(), MNT_DETACH) != 0) {
    return Failed(f, "detach scratch tmpfs", errno, p.tmp.c_str());
  }
  return 0;
}

int MountDevInChild(const MountPlan& p, ChildFailure* f) {
  if (::mount("tmpfs", p.dev.c_str(), "tmpfs", MS_NOSUID | MS_NOEXEC, p.dev_options.c_str()) != 0) {
    return Failed(f, "mount /dev tmpfs", errno, p.dev.c_str());
  }
  for (size_t i = 0; i < p.dev_node_dst.size(); ++i) {
    const char* dst = p.dev_node_dst[i].c_str();
    // A node in a directory of /dev ("dev/net/tun"): that directory first (one level).
    if (const char* slash = ::strrchr(dst, '/'); slash != nullptr && slash - dst > 4) {
      char parent[256];
      const size_t n = static_cast<size_t>(slash - dst);
      if (n >= sizeof parent) return Failed(f, "device directory", ENAMETOOLONG, dst);
      ::memcpy(parent, dst, n);
      parent[n] = '\0';
      if (::mkdir(parent, 0755) != 0 && errno != EEXIST) {
        return Failed(f, "mkdir device directory", errno, dst);
      }
    }
    int fd = ::open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return Failed(f, "create device bind target", errno, dst);
    ::close(fd);
    if (::mount(p.dev_node_src[i].c_str(), dst, nullptr, MS_BIND, nullptr) != 0) {
      return Failed(f, "bind device node", errno, dst);
    }
  }
  if (::mkdir(p.dev_pts.c_str(), 0755) != 0) return Failed(f, "mkdir", errno, p.dev_pts.c_str());
  if (::mount("devpts", p.dev_pts.c_str(), "devpts", MS_NOSUID | MS_NOEXEC,
              p.devpts_options.c_str()) != 0) {
    return Failed(f, "mount devpts", errno, p.dev_pts.c_str());
  }
  if (::mkdir(p.dev_shm.c_str(), 01777) != 0) return Failed(f, "mkdir", errno, p.dev_shm.c_str());
  if (::mount("tmpfs", p.dev_shm.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, p.shm_options.c_str()) !=
      0) {
    return Failed(f, "mount /dev/shm", errno, p.dev_shm.c_str());
  }
  for (size_t i = 0; i < p.dev_link_path.size(); ++i) {
    if (::symlink(p.dev_link_target[i].c_str(), p.dev_link_path[i].c_str()) != 0) {
      return Failed(f, "symlink", errno, p.dev_link_path[i].c_str());
    }
  }
  return 0;
}

}  // namespace

// The order is the argument: nothing from the host propagates in; the root is the template
// only, plus the workspace and read-only host files (sandboxd as the sandbox's sudo); every
// kernel interface
// is fresh (proc, sysfs, devpts belong to the new namespaces); writable places are
// size-bounded tmpfs or the quota'd workspace; then the host's tree is detached entirely and
// / is made read-only.
int BindHostPathsInChild(const MountPlan& p, ChildFailure* f) {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Failed(f, "make / private", errno);
  }
  if (p.root_tree_fd >= 0) {
    // move_mount(2): attach the idmapped clone prepared by the parent (following a symlinked
    // rootfs path, as the plain bind does).
    if (::syscall(SYS_move_mount, p.root_tree_fd, "", AT_FDCWD, p.root.c_str(),
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS) != 0) {
      return Failed(f, "attach idmapped rootfs", errno, p.root.c_str());
    }
  } else if (::mount(p.root.c_str(), p.root.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Failed(f, "bind rootfs", errno, p.root.c_str());
  }
  if (!p.ws_source.empty() &&
      ::mount(p.ws_source.c_str(), p.workspace.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    return Failed(f, "bind /workspace", errno, p.workspace.c_str());
  }
  for (const auto& b : p.host_binds) {
    if (::mount(b.source.c_str(), b.target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      return Failed(f, "bind host path", errno, b.target.c_str());
    }
    if (!b.read_only) continue;
    if (int e = RemountReadOnly(b.target.c_str(), MS_NOSUID | MS_NODEV)) {
      return Failed(f, "remount read-only", e, b.target.c_str());
    }
  }
  if (::chdir(p.root.c_str()) != 0) return Failed(f, "chdir new root", errno, p.root.c_str());
  return 0;
}

int BuildRootAndPivotInChild(const MountPlan& p, ChildFailure* f) {
  if (int e = MountProcInChild(p, f)) return e;
  if (int e = MountDevInChild(p, f)) return e;
  if (!p.sys.empty() && ::mount("sysfs", p.sys.c_str(), "sysfs",
                                MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Failed(f, "mount sysfs", errno, p.sys.c_str());
  }
  if (int e = MaskDirsAndReadOnlyPathsInChild(p, f)) return e;
  if (int e = BindScratchFilesInChild(p, f)) return e;
  if (!p.tmp.empty() &&
      ::mount("tmpfs", p.tmp.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, p.tmp_options.c_str()) != 0) {
    return Failed(f, "mount /tmp", errno, p.tmp.c_str());
  }
  // pivot_root(".", ".") stacks the old root on top of the new one; detaching "." then drops
  // the whole host tree from this namespace (pivot_root(2), NOTES).
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return Failed(f, "pivot_root", errno);
  if (::umount2(".", MNT_DETACH) != 0) return Failed(f, "detach old root", errno);
  if (::chdir("/") != 0) return Failed(f, "chdir /", errno);
  if (!p.read_only_root) return 0;
  if (int e = RemountReadOnly("/", MS_NOSUID | MS_NODEV)) {
    return Failed(f, "remount / read-only", e);
  }
  return 0;
}

}  // namespace asb::isolation::ns
