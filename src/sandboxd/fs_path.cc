#include "sandboxd/fs_path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace asb::sandboxd {

namespace {
constexpr char kCanonicalWorkspace[] = "/workspace";

bool HasPrefixDir(std::string_view path, std::string_view dir, std::string_view* rest) {
  if (path == dir) {
    *rest = {};
    return true;
  }
  if (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/') {
    *rest = path.substr(dir.size() + 1);
    return true;
  }
  return false;
}

std::string TypeName(mode_t m) {
  switch (m & S_IFMT) {
    case S_IFREG:
      return "file";
    case S_IFDIR:
      return "dir";
    case S_IFLNK:
      return "symlink";
    case S_IFIFO:
      return "fifo";
    case S_IFSOCK:
      return "socket";
    case S_IFCHR:
      return "char";
    case S_IFBLK:
      return "block";
    default:
      return "unknown";
  }
}
}  // namespace

FsIdentity::FsIdentity(const protocol::FileScope& scope) {
  uid_t uid;
  gid_t gid;
  if (scope.user == protocol::kUserSandbox) {
    uid = protocol::kSandboxUid;
    gid = protocol::kSandboxGid;
  } else if (scope.user == protocol::kUserRoot) {
    uid = 0;
    gid = 0;
  } else {
    return;
  }
  setfsgid(gid);
  setfsuid(uid);
  ok_ = true;
}

FsIdentity::~FsIdentity() {
  if (!ok_) return;
  setfsuid(0);
  setfsgid(0);
}

Error OutsideError(const FsContext& ctx) {
  return Error(ErrorCode::kInvalidArgument, "path outside " + ctx.workspace, EXDEV);
}

Result<FsPath> ResolvePath(const FsContext& ctx, std::string_view path,
                           const protocol::FileScope& scope) {
  if (scope.user != protocol::kUserSandbox && scope.user != protocol::kUserRoot) {
    return Fail(Error::InvalidArgument("unknown user \"" + scope.user + "\" (sandbox or root)"));
  }
  if (path.empty()) return Fail(Error::InvalidArgument("empty path"));
  if (path.find('\0') != std::string_view::npos) {
    return Fail(Error::InvalidArgument("path contains a NUL byte"));
  }
  FsPath p;
  p.beneath = scope.beneath_workspace;
  std::string_view rest = path;
  std::string display_base = ctx.workspace;
  p.base_fd = ctx.workspace_fd;
  if (path[0] == '/') {
    if (HasPrefixDir(path, ctx.workspace, &rest) ||
        HasPrefixDir(path, kCanonicalWorkspace, &rest)) {
      // beneath the workspace: relative to it
    } else if (scope.beneath_workspace) {
      return Fail(OutsideError(ctx));
    } else {
      p.root_fd.Reset(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!p.root_fd) return FailErrno("open /");
      p.base_fd = p.root_fd.get();
      display_base = "";
      rest = path.substr(1);
    }
  }
  std::vector<std::string_view> parts, shown;
  size_t i = 0;
  while (i <= rest.size()) {
    size_t j = rest.find('/', i);
    if (j == std::string_view::npos) j = rest.size();
    std::string_view c = rest.substr(i, j - i);
    if (!c.empty() && c != ".") {
      parts.push_back(c);
      if (c == "..") {
        if (!shown.empty()) shown.pop_back();
      } else {
        shown.push_back(c);
      }
    }
    i = j + 1;
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k) p.rel += '/';
    p.rel += parts[k];
    if (k + 1 < parts.size()) {
      if (k) p.parent_rel += '/';
      p.parent_rel += parts[k];
    }
  }
  if (p.rel.empty()) p.rel = ".";
  if (p.parent_rel.empty()) p.parent_rel = ".";
  if (!parts.empty()) p.name = std::string(parts.back());
  p.display = display_base;
  for (auto c : shown) {
    p.display += '/';
    p.display += c;
  }
  if (p.display.empty()) p.display = "/";
  return p;
}

Result<UniqueFd> OpenResolved(const FsContext& ctx, const FsPath& p, const std::string& rel,
                              int flags, mode_t mode) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
  how.resolve = RESOLVE_NO_MAGICLINKS | (p.beneath ? RESOLVE_BENEATH : 0);
  for (;;) {
    long fd = syscall(SYS_openat2, p.base_fd, rel.c_str(), &how, sizeof how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: a concurrent rename; retry
    if (errno == EXDEV) return Fail(OutsideError(ctx));
    return Fail(Error::FromErrno(errno, p.display));
  }
}

Result<UniqueFd> OpenParent(const FsContext& ctx, const FsPath& p) {
  if (p.name.empty()) {
    return Fail(Error::InvalidArgument(p.display + ": not allowed on the top directory"));
  }
  if (p.name == "..") return Fail(Error::InvalidArgument(p.display + ": path ends in .."));
  auto fd = OpenResolved(ctx, p, p.parent_rel, O_PATH | O_DIRECTORY);
  if (!fd && fd.error().sys_errno() == ENOENT) {
    return Fail(Error::FromErrno(ENOENT, p.display));
  }
  return fd;
}

protocol::FileStat MakeFileStat(const struct stat& st, std::string display, std::string name,
                                int dirfd, const char* at_name) {
  protocol::FileStat f;
  f.path = std::move(display);
  f.name = std::move(name);
  f.type = TypeName(st.st_mode);
  f.size = static_cast<uint64_t>(st.st_size);
  f.mode = st.st_mode & 07777;
  f.uid = st.st_uid;
  f.gid = st.st_gid;
  f.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = readlinkat(dirfd, at_name, buf, sizeof buf);
    if (n > 0) f.link_target.assign(buf, static_cast<size_t>(n));
  }
  return f;
}

Result<protocol::FileStat> StatAt(int dirfd, const std::string& name, const std::string& display) {
  struct stat st;
  int flags = AT_SYMLINK_NOFOLLOW | (name.empty() ? AT_EMPTY_PATH : 0);
  if (fstatat(dirfd, name.c_str(), &st, flags) != 0) return FailErrno(display);
  std::string shown_name = name;
  if (shown_name.empty()) {
    auto slash = display.rfind('/');
    shown_name = slash == std::string::npos ? display : display.substr(slash + 1);
  }
  return MakeFileStat(st, display, shown_name, dirfd, name.c_str());
}

namespace {
constexpr std::string_view kMetadataPrefix = "user.e2b.";
}  // namespace

std::map<std::string, std::string> ReadMetadata(int dirfd, const std::string& name) {
  std::map<std::string, std::string> out;
  UniqueFd f(name.empty() ? fcntl(dirfd, F_DUPFD_CLOEXEC, 0)
                          : openat(dirfd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!f) return out;
  struct stat st;
  if (fstat(f.get(), &st) != 0 || S_ISLNK(st.st_mode)) return out;
  // An O_PATH descriptor takes no f*xattr calls; its /proc/self/fd link reaches the inode.
  const std::string proc = "/proc/self/fd/" + std::to_string(f.get());
  char names[8192];
  const ssize_t n = listxattr(proc.c_str(), names, sizeof names);
  if (n <= 0) return out;
  for (ssize_t off = 0; off < n;) {
    const std::string attr(names + off);
    off += static_cast<ssize_t>(attr.size()) + 1;
    if (attr.rfind(kMetadataPrefix, 0) != 0 || attr.size() == kMetadataPrefix.size()) continue;
    char value[4096];
    const ssize_t v = getxattr(proc.c_str(), attr.c_str(), value, sizeof value);
    if (v < 0) continue;
    out[attr.substr(kMetadataPrefix.size())] = std::string(value, static_cast<size_t>(v));
  }
  return out;
}

Status WriteMetadata(int fd, const std::map<std::string, std::string>& metadata,
                     const std::string& display) {
  for (const auto& [key, value] : metadata) {
    const std::string attr = std::string(kMetadataPrefix) + key;
    if (fsetxattr(fd, attr.c_str(), value.data(), value.size(), 0) == 0) continue;
    const int err = errno;
    if (err == ENOTSUP) {
      return Fail(Error(ErrorCode::kUnavailable,
                        display + ": this file system keeps no file metadata", err));
    }
    if (err == E2BIG || err == ENOSPC || err == ERANGE) {
      return Fail(Error(ErrorCode::kTooLarge, display + ": more file metadata than it holds", err));
    }
    return Fail(Error::FromErrno(err, display + ": set metadata " + key));
  }
  return {};
}

}  // namespace asb::sandboxd
