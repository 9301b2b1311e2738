#include "isolation/ns/files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/unique_fd.h"

namespace asb::isolation::ns {

Result<std::string> ReadSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return FailErrno("open " + path);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno("read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteControlFile(const std::string& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return FailErrno("open " + path);
  ssize_t n;
  do {
    n = ::write(fd.get(), data.data(), data.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return FailErrno("write '" + data + "' to " + path);
  if (static_cast<size_t>(n) != data.size()) {
    return Fail(Error::Internal("short write to " + path));
  }
  return {};
}

Status WriteFileAtomic(const std::string& path, const std::string& data, bool durable) {
  const std::string tmp = path + ".tmp";
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!fd) return FailErrno("create " + tmp);
    if (!WriteAll(fd.get(), data.data(), data.size())) return FailErrno("write " + tmp);
    if (durable && ::fsync(fd.get()) != 0) return FailErrno("fsync " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Fail(Error::FromErrno(err, "rename " + tmp));
  }
  if (!durable) return {};
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd || ::fsync(dfd.get()) != 0) return FailErrno("fsync " + dir);
  return {};
}

namespace {

// Removes the entries of the directory open as `dfd` (on device `dev`), then nothing else.
int RemoveContents(int dfd, dev_t dev) {
  int first_err = 0;
  DIR* dir = ::fdopendir(::dup(dfd));
  if (dir == nullptr) return errno;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT && first_err == 0) first_err = errno;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (st.st_dev != dev) {  // a mount point: never descend into another filesystem
        if (first_err == 0) first_err = EBUSY;
        continue;
      }
      int sub = ::openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (first_err == 0) first_err = errno;
        continue;
      }
      int err = RemoveContents(sub, dev);
      ::close(sub);
      if (err != 0 && first_err == 0) first_err = err;
      if (::unlinkat(dfd, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT && first_err == 0) {
        first_err = errno;
      }
    } else if (::unlinkat(dfd, e->d_name, 0) != 0 && errno != ENOENT && first_err == 0) {
      first_err = errno;
    }
  }
  ::closedir(dir);
  return first_err;
}

}  // namespace

Status RemoveTree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return FailErrno("lstat " + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + path);
    return {};
  }
  UniqueFd dfd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dfd) return FailErrno("open " + path);
  int err = RemoveContents(dfd.get(), st.st_dev);
  if (err != 0) return Fail(Error::FromErrno(err, "remove contents of " + path));
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return FailErrno("rmdir " + path);
  return {};
}

Result<std::vector<std::string>> ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return FailErrno("opendir " + path);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

Result<uint64_t> ParseU64(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.remove_suffix(1);
  if (text == "max") return UINT64_MAX;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return Fail(Error::Internal("not a number: '" + std::string(text) + "'"));
  }
  return v;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace asb::isolation::ns
