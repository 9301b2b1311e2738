#include "isolation/microvm/qemu_jail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "isolation/ns/mount.h"

namespace asb::isolation::microvm {

namespace {

Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return FailErrno("mkdir " + path);
  return {};
}

// An empty regular file to bind a host file onto.
Status MakeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return FailErrno("create " + path);
  ::close(fd);
  return {};
}

// The host's /lib, /lib64, /bin and /sbin as the jail needs them to load QEMU: the same
// symlinks into /usr on a merged-/usr host (Debian 12), else read-only binds.
Status MirrorTopLevel(const std::string& root, std::vector<ns::MountPlan::HostBind>* binds) {
  for (const char* name : {"lib", "lib64", "bin", "sbin"}) {
    const std::string host = std::string("/") + name;
    const std::string in_jail = root + host;
    struct stat st;
    if (::lstat(host.c_str(), &st) != 0) continue;  // e.g. no /lib64 on some hosts
    if (S_ISLNK(st.st_mode)) {
      char target[256];
      ssize_t n = ::readlink(host.c_str(), target, sizeof target - 1);
      if (n <= 0) return FailErrno("readlink " + host);
      target[n] = '\0';
      if (::symlink(target, in_jail.c_str()) != 0 && errno != EEXIST) {
        return FailErrno("symlink " + in_jail);
      }
    } else if (S_ISDIR(st.st_mode)) {
      ASB_TRY(MakeDir(in_jail));
      binds->push_back({host, in_jail, true});
    }
  }
  return {};
}

}  // namespace

Result<ns::ChildPlan> PrepareQemuJail(const JailSpec& spec, std::vector<std::string> argv,
                                      int null_fd, int log_fd) {
  const std::string& root = spec.root;
  std::vector<ns::MountPlan::HostBind> binds;
  ASB_TRY(MakeDir(root));
  for (const char* d : {"/usr", "/etc", "/proc", "/dev", kJailVmDir, kJailGuestDir}) {
    ASB_TRY(MakeDir(root + d));
  }
  binds.push_back({"/usr", root + "/usr", true});
  ASB_TRY(MirrorTopLevel(root, &binds));
  // The dynamic loader's cache (without it ld.so still searches the multiarch directories,
  // but slower); nothing else of the host's /etc.
  if (::access("/etc/ld.so.cache", R_OK) == 0) {
    ASB_TRY(MakeFile(root + "/etc/ld.so.cache"));
    binds.push_back({"/etc/ld.so.cache", root + "/etc/ld.so.cache", true});
  }
  binds.push_back({spec.vm_dir, root + kJailVmDir, false});
  for (const auto& [host, name] : spec.guest_files) {
    const std::string target = root + kJailGuestDir + "/" + name;
    ASB_TRY(MakeFile(target));
    binds.push_back({host, target, true});
  }
  std::string qemu_in_jail = spec.qemu_path;
  if (spec.qemu_path.rfind("/usr/", 0) != 0) {
    qemu_in_jail = "/qemu";
    ASB_TRY(MakeFile(root + qemu_in_jail));
    binds.push_back({spec.qemu_path, root + qemu_in_jail, true});
  }
  std::vector<std::pair<std::string, std::string>> dev_nodes;
  // The host's /dev/kvm is root:kvm 0660 and /dev/net/tun root 0600, which the jail's uid may
  // not open; a node of our own (misc devices 10:232 and 10:200, devices.txt) owned by that uid
  // is. It sits in the jail's root and is bound onto /dev/<name> (a source relative to the
  // root resolves inside it).
  auto add_node = [&](const char* file, int minor, const char* name) -> Status {
    const std::string node = root + "/" + file;
    if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(10, minor)) != 0 && errno != EEXIST) {
      return FailErrno("mknod " + node);
    }
    const uint32_t id = JailHostId(spec.host_id_base);
    if (::chown(node.c_str(), id, id) != 0) return FailErrno("chown " + node);
    dev_nodes.emplace_back(file, name);
    return {};
  };
  if (spec.kvm) ASB_TRY(add_node(".kvm", 232, "kvm"));
  if (spec.tun) ASB_TRY(add_node(".tun", 200, "net/tun"));

  ns::ChildPlan plan;
  plan.hostname = spec.hostname;
  plan.own_network = true;  // a networked VM's tap device is made in it (microvm_backend.cc)
  plan.new_session = true;
  plan.mounts = ns::MakeJailMountPlan(root, std::move(binds), dev_nodes);
  plan.workdir = kJailVmDir;
  plan.set_ids = true;
  plan.uid = kQemuIdInJail;
  plan.gid = kQemuIdInJail;
  plan.stdin_fd = null_fd;
  plan.stdout_fd = log_fd;
  plan.stderr_fd = log_fd;
  plan.exec_paths = {qemu_in_jail};
  argv[0] = qemu_in_jail;
  plan.SetArgs(std::move(argv), {"PATH=/usr/bin:/bin"});
  return plan;
}

}  // namespace asb::isolation::microvm
