#include "templates/context_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "templates/layer.h"

namespace asb::templates {

namespace {

std::string Rel(std::string_view abs) {
  while (!abs.empty() && abs.front() == '/') abs.remove_prefix(1);
  while (!abs.empty() && abs.back() == '/') abs.remove_suffix(1);
  return std::string(abs);
}

std::string BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// Replaces whatever is at dirfd/leaf (unless a directory is wanted and one is there).
Status Clear(int dirfd, const std::string& leaf, bool want_dir) {
  struct stat st;
  if (::fstatat(dirfd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
  if (want_dir && S_ISDIR(st.st_mode)) return {};
  return RemoveAt(dirfd, leaf);
}

Status WriteFile(int src_fd, const struct stat& src, int dirfd, const std::string& leaf,
                 const ResolvedUser& owner, CopyStats* stats) {
  ASB_TRY(Clear(dirfd, leaf, false));
  UniqueFd out(
      ::openat(dirfd, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) return FailErrno("create " + leaf);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(src_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read " + leaf);
    if (n == 0) break;
    if (!WriteAll(out.get(), buf, static_cast<size_t>(n))) return FailErrno("write " + leaf);
    stats->bytes += static_cast<uint64_t>(n);
  }
  if (::fchown(out.get(), owner.uid, owner.gid) != 0) return FailErrno("chown " + leaf);
  if (::fchmod(out.get(), src.st_mode & 07777) != 0) return FailErrno("chmod " + leaf);
  ++stats->files;
  return {};
}

// Opens (making it if needed) directory dirfd/leaf for writing entries into, never following
// a symlink there.
Result<UniqueFd> SubDir(int dirfd, const std::string& leaf, mode_t mode, const ResolvedUser& o) {
  ASB_TRY(Clear(dirfd, leaf, true));
  if (::mkdirat(dirfd, leaf.c_str(), mode & 07777) == 0) {
    if (::fchownat(dirfd, leaf.c_str(), o.uid, o.gid, AT_SYMLINK_NOFOLLOW) != 0) {
      return FailErrno("chown " + leaf);
    }
  } else if (errno != EEXIST) {
    return FailErrno("mkdir " + leaf);
  }
  UniqueFd d(::openat(dirfd, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return FailErrno("open " + leaf);
  return d;
}

Status CopyDirContents(int src_dir, int dst_dir, const ResolvedUser& owner, CopyStats* stats,
                       int depth) {
  if (depth > 256) return Fail(Error::InvalidArgument("context directory nesting too deep"));
  int fd = ::openat(src_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FailErrno("open context directory");
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return FailErrno("fdopendir");
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  Status result;
  for (const auto& n : names) {
    struct stat st;
    if (::fstatat(::dirfd(dir), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      result = FailErrno("stat " + n);
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(
          ::openat(::dirfd(dir), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) {
        result = FailErrno("open " + n);
        break;
      }
      auto dst = SubDir(dst_dir, n, st.st_mode, owner);
      if (!dst) {
        result = Fail(dst.error());
        break;
      }
      result = CopyDirContents(sub.get(), dst->get(), owner, stats, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      UniqueFd in(::openat(::dirfd(dir), n.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      if (!in) {
        result = FailErrno("open " + n);
        break;
      }
      result = WriteFile(in.get(), st, dst_dir, n, owner, stats);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4096];
      ssize_t len = ::readlinkat(::dirfd(dir), n.c_str(), target, sizeof target - 1);
      if (len < 0) {
        result = FailErrno("readlink " + n);
        break;
      }
      target[len] = '\0';
      result = Clear(dst_dir, n, false);
      if (result && ::symlinkat(target, dst_dir, n.c_str()) != 0)
        result = FailErrno("symlink " + n);
      if (result &&
          ::fchownat(dst_dir, n.c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) != 0) {
        result = FailErrno("chown " + n);
      }
      ++stats->files;
    } else {
      result = Fail(Error::InvalidArgument("'" + n +
                                           "': only files, directories and symlinks "
                                           "can be copied"));
    }
    if (!result) break;
  }
  ::closedir(dir);
  return result;
}

}  // namespace

bool LooksLikeArchive(int fd) {
  unsigned char m[512];
  ssize_t n = ::pread(fd, m, sizeof m, 0);
  if (n < 6) return false;
  if (m[0] == 0x1f && m[1] == 0x8b) return true;               // gzip
  if (m[0] == 'B' && m[1] == 'Z' && m[2] == 'h') return true;  // bzip2
  if (std::memcmp(m,
                  "\xFD"
                  "7zXZ\0",
                  6) == 0)
    return true;                                                                  // xz
  if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) return true;  // zstd
  return n >= 262 && std::memcmp(m + 257, "ustar", 5) == 0;                       // tar
}

Result<CopyStats> CopyFromContext(const RootedDir& context, const RootedDir& root,
                                  const CopyRequest& req) {
  CopyStats stats;
  const std::string src_rel = Rel(req.source);
  auto src = context.OpenRead(src_rel.empty() ? "." : src_rel);
  if (!src) {
    if (src.error().sys_errno() == ENOENT) {
      return Fail(Error::NotFound("source '" + req.source + "' not found in the build context"));
    }
    return Fail(src.error());
  }
  struct stat st;
  if (::fstat(src->get(), &st) != 0) return FailErrno("stat " + req.source);
  const std::string dest_rel = Rel(req.dest);
  if (S_ISDIR(st.st_mode)) {
    ASB_ASSIGN_OR_RETURN(UniqueFd dst,
                         root.OpenDir(dest_rel, true, 0755, req.owner.uid, req.owner.gid));
    UniqueFd w(::openat(dst.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!w) return FailErrno("open " + req.dest);
    ASB_TRY(CopyDirContents(src->get(), w.get(), req.owner, &stats, 0));
    return stats;
  }
  if (!S_ISREG(st.st_mode)) {
    return Fail(Error::InvalidArgument("source '" + req.source + "' is not a file or directory"));
  }
  if (req.unpack_archives && LooksLikeArchive(src->get())) {
    ASB_TRY(root.OpenDir(dest_rel, true, 0755, 0, 0));
    LayerOptions opts;
    opts.base = dest_rel;
    ASB_ASSIGN_OR_RETURN(LayerStats ls, ApplyArchive(src->get(), root, opts));
    stats.files = ls.entries;
    stats.bytes = ls.bytes;
    return stats;
  }
  // A destination that is an existing directory receives the file under its own name.
  bool into_dir = req.dest_is_dir || dest_rel.empty();
  if (!into_dir) {
    if (auto d = root.OpenDir(dest_rel, false)) into_dir = true;
  }
  const std::string target =
      into_dir ? (dest_rel.empty() ? "" : dest_rel + "/") + BaseName(src_rel) : dest_rel;
  auto [parent, leaf] = SplitParent(target);
  ASB_ASSIGN_OR_RETURN(UniqueFd dir, root.OpenDir(parent, true, 0755, 0, 0));
  UniqueFd w(::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!w) return FailErrno("open /" + parent);
  ASB_TRY(WriteFile(src->get(), st, w.get(), leaf, req.owner, &stats));
  return stats;
}

}  // namespace asb::templates
