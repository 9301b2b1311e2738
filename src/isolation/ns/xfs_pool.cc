#include "isolation/ns/xfs_pool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "isolation/ns/workspace.h"

namespace asb::isolation::ns {
namespace {

constexpr long kXfsSuperMagic = 0x58465342;  // statfs(2)

std::string FindMkfsXfs() {
  for (const char* p : {"/usr/sbin/mkfs.xfs", "/sbin/mkfs.xfs", "/usr/bin/mkfs.xfs"}) {
    if (::access(p, X_OK) == 0) return p;
  }
  return {};
}

Status MakePoolFile(const std::string& file, uint64_t bytes) {
  const std::string mkfs = FindMkfsXfs();
  if (mkfs.empty()) return Fail(Error::Unavailable("mkfs.xfs not found (install xfsprogs)"));
  const std::string tmp = file + ".making";
  ::unlink(tmp.c_str());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "create " + tmp));
    if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
      int err = errno;
      ::unlink(tmp.c_str());
      return Fail(Error::FromErrno(ErrorCode::kBackend, err, "truncate " + tmp));
    }
  }
  std::string out;
  auto status = RunCapture({mkfs, "-q", "-f", "-m", "reflink=1", tmp}, &out);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    ::unlink(tmp.c_str());
    if (!status) return Fail(status.error());
    return Fail(Error::Backend("mkfs.xfs " + tmp + " failed: " + out));
  }
  UniqueFd fd(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0 || ::rename(tmp.c_str(), file.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Fail(Error::FromErrno(ErrorCode::kBackend, err, "install " + file));
  }
  return {};
}

}  // namespace

Status EnsureXfsPool(const std::string& file, const std::string& mount_dir, uint64_t bytes) {
  if (::mkdir(mount_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Fail(Error::FromErrno(ErrorCode::kBackend, errno, "mkdir " + mount_dir));
  }
  if (IsMountPoint(mount_dir)) {
    struct statfs sfs;
    if (::statfs(mount_dir.c_str(), &sfs) != 0) return FailErrno("statfs " + mount_dir);
    if (static_cast<long>(sfs.f_type) != kXfsSuperMagic) {
      return Fail(Error::InvalidArgument(mount_dir + " is a mount point, but not of XFS"));
    }
    return {};
  }
  if (::access(file.c_str(), F_OK) != 0) ASB_TRY(MakePoolFile(file, bytes));
  ASB_TRY_CTX(MountImage(file, mount_dir, "xfs"), "workspace pool");
  return {};
}

}  // namespace asb::isolation::ns
