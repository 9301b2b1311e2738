#include "templates/rooted_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <vector>

namespace asb::templates {

namespace {

int OpenInRoot(int root, const std::string& rel, uint64_t flags) {
  struct open_how how = {};
  how.flags = flags | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  const std::string path = rel.empty() ? "." : rel;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how);
  } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
  return static_cast<int>(fd);
}

std::vector<std::string> Components(std::string_view rel) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string_view::npos) j = rel.size();
    std::string_view c = rel.substr(i, j - i);
    if (!c.empty() && c != ".") out.emplace_back(c);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::pair<std::string, std::string> SplitParent(std::string_view rel) {
  while (rel.size() > 1 && rel.back() == '/') rel.remove_suffix(1);
  size_t slash = rel.rfind('/');
  if (slash == std::string_view::npos) return {"", std::string(rel)};
  return {std::string(rel.substr(0, slash)), std::string(rel.substr(slash + 1))};
}

bool IsUnsafeRelative(std::string_view rel) {
  if (rel.empty() || rel[0] == '/') return true;
  size_t i = 0;
  while (i <= rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string_view::npos) j = rel.size();
    if (rel.substr(i, j - i) == "..") return true;
    i = j + 1;
  }
  return false;
}

Result<RootedDir> RootedDir::Open(const std::string& path) {
  RootedDir d;
  d.root_.Reset(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!d.root_) return FailErrno("open " + path);
  return d;
}

Result<UniqueFd> RootedDir::OpenDir(std::string_view rel, bool create, mode_t mode, uid_t uid,
                                    gid_t gid) const {
  std::string sofar;
  UniqueFd cur(OpenInRoot(root_.get(), "", O_PATH | O_DIRECTORY));
  if (!cur) return FailErrno("open root");
  for (const auto& c : Components(rel)) {
    sofar += (sofar.empty() ? "" : "/") + c;
    UniqueFd next(OpenInRoot(root_.get(), sofar, O_PATH | O_DIRECTORY));
    if (!next && errno == ENOENT && create) {
      // The parent resolved inside the root; make the component there (not following it).
      if (::mkdirat(cur.get(), c.c_str(), mode) != 0 && errno != EEXIST) {
        return FailErrno("mkdir /" + sofar);
      }
      if ((uid != static_cast<uid_t>(-1) || gid != static_cast<gid_t>(-1)) &&
          ::fchownat(cur.get(), c.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
        return FailErrno("chown /" + sofar);
      }
      next.Reset(OpenInRoot(root_.get(), sofar, O_PATH | O_DIRECTORY));
    }
    if (!next) return FailErrno("open directory /" + sofar);
    cur = std::move(next);
  }
  return cur;
}

Result<UniqueFd> RootedDir::OpenRead(std::string_view rel) const {
  UniqueFd fd(OpenInRoot(root_.get(), std::string(rel), O_RDONLY));
  if (!fd) return FailErrno("open /" + std::string(rel));
  return fd;
}

Result<std::string> RootedDir::ReadFile(std::string_view rel, size_t max_bytes) const {
  ASB_ASSIGN_OR_RETURN(UniqueFd fd, OpenRead(rel));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return FailErrno("stat /" + std::string(rel));
  if (!S_ISREG(st.st_mode)) {
    return Fail(Error::InvalidArgument("/" + std::string(rel) + " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return Fail(Error::TooLarge("/" + std::string(rel) + " is larger than " +
                                std::to_string(max_bytes) + " bytes"));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read /" + std::string(rel));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) return Fail(Error::TooLarge("/" + std::string(rel) + " grew"));
  }
  return out;
}

Status RemoveChildrenAt(int dirfd, const std::function<bool(const std::string&)>& keep) {
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FailErrno("open directory");
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return FailErrno("fdopendir");
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && !keep(n)) names.push_back(std::move(n));
  }
  Status result;
  for (const auto& n : names) {
    if (auto st = RemoveAt(::dirfd(dir), n); !st && result) result = st;
  }
  ::closedir(dir);
  return result;
}

Status RemoveAt(int dirfd, const std::string& name) {
  struct stat st;
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return FailErrno("stat " + name);
  }
  if (S_ISDIR(st.st_mode)) {
    UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) return FailErrno("open " + name);
    ASB_TRY_CTX(RemoveChildrenAt(sub.get(), [](const std::string&) { return false; }), name);
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) return FailErrno("rmdir " + name);
    return {};
  }
  if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
    return FailErrno("unlink " + name);
  }
  return {};
}

}  // namespace asb::templates
