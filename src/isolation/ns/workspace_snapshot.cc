#include "isolation/ns/workspace_snapshot.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "common/unique_fd.h"

namespace asb::isolation::ns {

namespace {

/// pread/pwrite of up to 1 MiB at `off`; returns the bytes copied or -1 (errno set).
ssize_t CopyByReadWrite(int in, int out, off_t off, off_t end, const std::string& /*what*/) {
  static thread_local std::vector<char> buf(1 << 20);
  size_t want = static_cast<size_t>(std::min<off_t>(end - off, static_cast<off_t>(buf.size())));
  ssize_t n = ::pread(in, buf.data(), want, off);
  if (n <= 0) return n;
  ssize_t done = 0;
  while (done < n) {
    ssize_t w = ::pwrite(out, buf.data() + done, static_cast<size_t>(n - done), off + done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += w;
  }
  return n;
}

/// Copies [off, end) of `in` to the same offsets of `out`.
Status CopyRange(int in, int out, off_t off, off_t end, const std::string& what) {
  while (off < end) {
    loff_t io = off, oo = off;
    ssize_t n = copy_file_range(in, &io, out, &oo, static_cast<size_t>(end - off), 0);
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)) {
      n = CopyByReadWrite(in, out, off, end, what);  // across file systems
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno("copy " + what);
    }
    if (n == 0) break;  // the source shrank under us
    off += n;
  }
  return {};
}

Status SparseCopy(int in, int out, off_t size, const std::string& what) {
  if (::ftruncate(out, size) != 0) return FailErrno("ftruncate " + what);
  off_t pos = 0;
  while (pos < size) {
    off_t data = ::lseek(in, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole is left
      return FailErrno("SEEK_DATA " + what);
    }
    off_t hole = ::lseek(in, data, SEEK_HOLE);
    if (hole < 0) return FailErrno("SEEK_HOLE " + what);
    ASB_TRY(CopyRange(in, out, data, hole, what));
    pos = hole;
  }
  return {};
}

}  // namespace

std::string_view CloneMethodName(CloneMethod m) {
  return m == CloneMethod::kReflink ? "reflink" : "sparse-copy";
}

Status QuiesceWorkspace(const std::string& mount_dir) {
  UniqueFd d(::open(mount_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) return FailErrno("open " + mount_dir);
  if (::ioctl(d.get(), FIFREEZE, 0) == 0) {
    if (::ioctl(d.get(), FITHAW, 0) != 0) return FailErrno("FITHAW " + mount_dir);
    return {};
  }
  if (::syncfs(d.get()) != 0) return FailErrno("syncfs " + mount_dir);
  return {};
}

Result<CloneMethod> CloneImage(const std::string& src, const std::string& dst, bool force_copy,
                               bool durable) {
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return FailErrno("open " + src);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return FailErrno("stat " + src);
  UniqueFd out(::open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!out) return FailErrno("create " + dst);
  struct Remove {
    const std::string& p;
    bool keep = false;
    ~Remove() {
      if (!keep) ::unlink(p.c_str());
    }
  } guard{dst};

  CloneMethod method = CloneMethod::kReflink;
  if (force_copy || ::ioctl(out.get(), FICLONE, in.get()) != 0) {
    if (!force_copy && errno != EOPNOTSUPP && errno != EXDEV && errno != EINVAL &&
        errno != ENOTTY) {
      return FailErrno("FICLONE " + src);
    }
    method = CloneMethod::kSparseCopy;
    ASB_TRY(SparseCopy(in.get(), out.get(), st.st_size, src + " -> " + dst));
  }
  if (durable && ::fsync(out.get()) != 0) return FailErrno("fsync " + dst);
  guard.keep = true;
  return method;
}

}  // namespace asb::isolation::ns
