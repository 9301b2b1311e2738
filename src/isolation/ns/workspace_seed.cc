#include "isolation/ns/workspace_seed.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "common/ids.h"
#include "common/unique_fd.h"
#include "isolation/ns/files.h"
#include "isolation/ns/workspace.h"

namespace asb::isolation::ns {

namespace {

// Whether the directory `fd` has an entry other than "." and "..".
bool HasEntries(int fd) {
  int dup = ::dup(fd);
  if (dup < 0) return false;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return false;
  }
  bool any = false;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      any = true;
      break;
    }
  }
  ::closedir(d);
  return any;
}

uint32_t g_chown_to = 0;  // nftw's callback takes no context; Make holds mu_ while it runs

int ChownEntry(const char* path, const struct stat*, int, struct FTW*) {
  return ::lchown(path, g_chown_to, g_chown_to) == 0 ? 0 : errno;
}

}  // namespace

Result<std::string> WorkspaceSeeds::ImageFor(const std::string& rootfs, uint64_t bytes) {
  // The rootfs's /workspace itself, never through a symlink (an imported image is untrusted).
  UniqueFd root(::open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return std::string();
  UniqueFd ws(::openat(root.get(), "workspace", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!ws || !HasEntries(ws.get())) return std::string();
  struct stat st;
  if (::fstat(ws.get(), &st) != 0) return FailErrno("stat " + rootfs + "/workspace");
  const std::string prefix = "seed-" + HexU64(Fnv1a64(rootfs)) + "-";
  const std::string build = prefix + HexU64(st.st_dev) + "-" + HexU64(st.st_ino) + "-";
  const std::string name = build + std::to_string(bytes) + ".img";
  const std::string path = dir_ + "/" + name;
  if (::access(path.c_str(), F_OK) == 0) return path;
  std::lock_guard<std::mutex> lock(mu_);
  if (::access(path.c_str(), F_OK) == 0) return path;  // made while we waited
  return Make(rootfs, name, prefix, build, bytes);
}

Result<std::string> WorkspaceSeeds::BlankFor(uint64_t bytes) {
  // The version names what MakeWorkspaceImage makes: a change of its mkfs options bumps it.
  const std::string prefix = "blank-v1-";
  const std::string name = prefix + std::to_string(owner_) + "-" + std::to_string(bytes) + ".img";
  const std::string path = dir_ + "/" + name;
  if (::access(path.c_str(), F_OK) == 0) return path;
  std::lock_guard<std::mutex> lock(mu_);
  if (::access(path.c_str(), F_OK) == 0) return path;  // made while we waited
  const std::string making = dir_ + "/making-" + RandomHex(6) + ".img";
  ASB_TRY(MakeWorkspaceImage(making, bytes, owner_));
  {
    UniqueFd fd(::open(making.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) (void)::fsync(fd.get());
  }
  // A bounded cache: past kMaxBlankImages sizes, the others go (a clone in progress keeps
  // reading its open file).
  std::vector<std::string> blanks;
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::string n = e->d_name; n.rfind("blank-", 0) == 0) blanks.push_back(n);
    }
    ::closedir(d);
  }
  if (static_cast<int>(blanks.size()) >= kMaxBlankImages) {
    for (const std::string& n : blanks) ::unlink((dir_ + "/" + n).c_str());
  }
  if (::rename(making.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(making.c_str());
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, "rename " + making));
  }
  return path;
}

Result<std::string> WorkspaceSeeds::Make(const std::string& rootfs, const std::string& name,
                                         const std::string& prefix, const std::string& build,
                                         uint64_t bytes) {
  const std::string tag = RandomHex(6);
  const std::string image = dir_ + "/making-" + tag + ".img";
  const std::string mnt = dir_ + "/m-" + tag;
  if (::mkdir(mnt.c_str(), 0700) != 0) return FailErrno("mkdir " + mnt);
  bool mounted = false;
  auto cleanup = [&] {
    if (mounted) {
      (void)UnmountWorkspace(mnt);
      (void)DetachLoopDevices(image);
    }
    ::rmdir(mnt.c_str());
    ::unlink(image.c_str());
  };
  auto fail = [&](Error e) -> Result<std::string> {
    cleanup();
    return Fail(std::move(e));
  };
  if (Status s = MakeWorkspaceImage(image, bytes, owner_); !s) return fail(s.error());
  if (auto dev = MountWorkspace(image, mnt); !dev) return fail(dev.error());
  mounted = true;
  // cp -a: symlinks stay symlinks (never followed), modes, times and hard links kept. The
  // owner is then the sandbox user's, everywhere but lost+found.
  std::string out;
  auto status = RunCapture({"/bin/cp", "-a", "--", rootfs + "/workspace/.", mnt + "/"}, &out);
  if (!status) return fail(status.error());
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    if (out.find("No space left") != std::string::npos) {
      return fail(Error::InvalidArgument("the template's /workspace does not fit a workspace of " +
                                         std::to_string(bytes >> 20) +
                                         " MiB: ask for a larger workspace_mb"));
    }
    return fail(Error::Backend("copying the template's /workspace failed: " + out.substr(0, 500)));
  }
  g_chown_to = owner_;
  if (::nftw(mnt.c_str(), ChownEntry, 32, FTW_PHYS | FTW_MOUNT) != 0) {
    return fail(Error::FromErrno(ErrorCode::kBackend, errno, "chown the workspace seed"));
  }
  const std::string lost = mnt + "/lost+found";
  (void)::lchown(lost.c_str(), 0, 0);
  if (Status s = UnmountWorkspace(mnt); !s) return fail(s.error());
  mounted = false;
  (void)DetachLoopDevices(image);
  ::rmdir(mnt.c_str());
  {
    UniqueFd fd(::open(image.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) (void)::fsync(fd.get());
  }
  // Seeds of earlier builds of this template (same rootfs path, another /workspace) go.
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0 && n.rfind(build, 0) != 0) ::unlink((dir_ + "/" + n).c_str());
    }
    ::closedir(d);
  }
  const std::string path = dir_ + "/" + name;
  if (::rename(image.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(image.c_str());
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, "rename " + image));
  }
  return path;
}

}  // namespace asb::isolation::ns
