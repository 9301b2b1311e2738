#include "templates/layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <unordered_set>

namespace asb::templates {

namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueWhiteout = ".wh..wh..opq";

struct ArchiveDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

// "./a/b/" -> "a/b"; "." and "./" -> "".
std::string Normalize(std::string_view name) {
  while (name.size() >= 2 && name.substr(0, 2) == "./") {
    name.remove_prefix(2);
    while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  }
  if (name == ".") name = "";
  while (!name.empty() && name.back() == '/') name.remove_suffix(1);
  return std::string(name);
}

std::string Join(const std::string& base, const std::string& rel) {
  if (base.empty()) return rel;
  if (rel.empty()) return base;
  return base + "/" + rel;
}

// True when relative symlink `target`, placed at `path` (relative to the root), climbs above
// the root when read lexically.
bool ClimbsAboveRoot(const std::string& path, std::string_view target) {
  if (target.empty() || target[0] == '/') return false;
  long depth = 0;
  for (char c : SplitParent(path).first) depth += (c == '/');
  if (!SplitParent(path).first.empty()) ++depth;
  size_t i = 0;
  while (i <= target.size()) {
    size_t j = target.find('/', i);
    if (j == std::string_view::npos) j = target.size();
    std::string_view c = target.substr(i, j - i);
    if (c == "..") {
      if (--depth < 0) return true;
    } else if (!c.empty() && c != ".") {
      ++depth;
    }
    i = j + 1;
  }
  return false;
}

Error Refused(const std::string& name, const std::string& why) {
  return Error::InvalidArgument("archive entry '" + name + "': " + why);
}

// Removes whatever is at dirfd/leaf unless it is a directory and `keep_dir`.
Status ClearFor(int dirfd, const std::string& leaf, bool keep_dir) {
  struct stat st;
  if (::fstatat(dirfd, leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return {};
    return FailErrno("stat " + leaf);
  }
  if (keep_dir && S_ISDIR(st.st_mode)) return {};
  return RemoveAt(dirfd, leaf);
}

Status WriteRegular(struct archive* a, int dirfd, const std::string& leaf, struct archive_entry* e,
                    const std::string& name) {
  UniqueFd out(
      ::openat(dirfd, leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) return FailErrno("create " + name);
  const void* buf;
  size_t len;
  la_int64_t off;
  for (;;) {
    int r = archive_read_data_block(a, &buf, &len, &off);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      return Fail(Refused(name, std::string("read: ") + archive_error_string(a)));
    }
    const char* p = static_cast<const char*>(buf);
    while (len > 0) {
      ssize_t n = ::pwrite(out.get(), p, len, off);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return FailErrno("write " + name);
      p += n;
      off += n;
      len -= static_cast<size_t>(n);
    }
  }
  if (archive_entry_size_is_set(e) && ::ftruncate(out.get(), archive_entry_size(e)) != 0) {
    return FailErrno("truncate " + name);
  }
  if (::fchown(out.get(), archive_entry_uid(e), archive_entry_gid(e)) != 0) {
    return FailErrno("chown " + name);
  }
  // After chown, which clears set-id bits.
  if (::fchmod(out.get(), archive_entry_perm(e) & 07777) != 0) return FailErrno("chmod " + name);
  struct timespec ts[2] = {{archive_entry_mtime(e), 0}, {archive_entry_mtime(e), 0}};
  (void)::futimens(out.get(), ts);
  return {};
}

Status MakeDirectory(int dirfd, const std::string& leaf, struct archive_entry* e,
                     const std::string& name) {
  ASB_TRY(ClearFor(dirfd, leaf, /*keep_dir=*/true));
  if (::mkdirat(dirfd, leaf.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailErrno("mkdir " + name);
  }
  UniqueFd d(::openat(dirfd, leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d) return FailErrno("open " + name);
  if (::fchown(d.get(), archive_entry_uid(e), archive_entry_gid(e)) != 0) {
    return FailErrno("chown " + name);
  }
  if (::fchmod(d.get(), archive_entry_perm(e) & 07777) != 0) return FailErrno("chmod " + name);
  return {};
}

class Applier {
 public:
  Applier(const RootedDir& root, const LayerOptions& opts) : root_(root), opts_(opts) {}

  Status Entry(struct archive* a, struct archive_entry* e) {
    const char* raw = archive_entry_pathname(e);
    if (raw == nullptr) return Fail(Error::InvalidArgument("archive entry without a name"));
    const std::string name = raw;
    const std::string rel = Normalize(name);
    if (rel.empty()) return {};  // the archive's own root directory
    if (rel[0] == '/' || IsUnsafeRelative(rel)) {
      return Fail(Refused(name, "absolute paths and '..' are not allowed"));
    }
    const std::string full = Join(opts_.base, rel);
    auto [parent, leaf] = SplitParent(full);
    if (opts_.whiteouts && leaf.rfind(kWhiteoutPrefix, 0) == 0) return Whiteout(parent, leaf);
    created_.insert(full);

    stats_.bytes += static_cast<uint64_t>(std::max<la_int64_t>(0, archive_entry_size(e)));
    if (stats_.bytes > opts_.max_bytes) {
      return Fail(
          Error::TooLarge("archive holds more than " + std::to_string(opts_.max_bytes) + " bytes"));
    }
    ++stats_.entries;
    ASB_ASSIGN_OR_RETURN(UniqueFd dir, root_.OpenDir(parent, /*create=*/true, 0755, 0, 0));
    if (const char* link = archive_entry_hardlink(e)) return HardLink(dir.get(), leaf, name, link);
    switch (archive_entry_filetype(e)) {
      case AE_IFDIR:
        return MakeDirectory(dir.get(), leaf, e, name);
      case AE_IFREG:
        ASB_TRY(ClearFor(dir.get(), leaf, false));
        return WriteRegular(a, dir.get(), leaf, e, name);
      case AE_IFLNK: {
        const char* target = archive_entry_symlink(e);
        if (target == nullptr || *target == '\0') return Fail(Refused(name, "empty link target"));
        if (ClimbsAboveRoot(full, target)) {
          return Fail(
              Refused(name, std::string("symlink to '") + target + "' leads out of the tree"));
        }
        ASB_TRY(ClearFor(dir.get(), leaf, false));
        if (::symlinkat(target, dir.get(), leaf.c_str()) != 0) return FailErrno("symlink " + name);
        if (::fchownat(dir.get(), leaf.c_str(), archive_entry_uid(e), archive_entry_gid(e),
                       AT_SYMLINK_NOFOLLOW) != 0) {
          return FailErrno("chown " + name);
        }
        return {};
      }
      case AE_IFIFO:
        ASB_TRY(ClearFor(dir.get(), leaf, false));
        if (::mknodat(dir.get(), leaf.c_str(), S_IFIFO | (archive_entry_perm(e) & 0777), 0) != 0) {
          return FailErrno("mkfifo " + name);
        }
        return {};
      case AE_IFCHR:
      case AE_IFBLK:
        return Fail(Refused(name, "device nodes are not allowed"));
      default:
        return Fail(Refused(name, "unsupported file type"));
    }
  }

  const LayerStats& stats() const { return stats_; }

 private:
  Status HardLink(int dirfd, const std::string& leaf, const std::string& name,
                  const std::string& link) {
    const std::string target = Normalize(link);
    if (target.empty() || link[0] == '/' || IsUnsafeRelative(target)) {
      return Fail(Refused(name, "hard link to '" + link + "' leads out of the tree"));
    }
    auto [tparent, tleaf] = SplitParent(Join(opts_.base, target));
    ASB_ASSIGN_OR_RETURN(UniqueFd tdir, root_.OpenDir(tparent, /*create=*/false));
    struct stat st;
    if (::fstatat(tdir.get(), tleaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Fail(Refused(name, "hard link to missing '" + link + "'"));
    }
    if (S_ISDIR(st.st_mode)) return Fail(Refused(name, "hard link to a directory"));
    struct stat cur;
    if (::fstatat(dirfd, leaf.c_str(), &cur, AT_SYMLINK_NOFOLLOW) == 0 && cur.st_dev == st.st_dev &&
        cur.st_ino == st.st_ino) {
      return {};  // the same file reached through a symlinked directory ("lib" -> "usr/lib")
    }
    ASB_TRY(ClearFor(dirfd, leaf, false));
    if (::linkat(tdir.get(), tleaf.c_str(), dirfd, leaf.c_str(), 0) != 0) {
      return FailErrno("link " + name);
    }
    return {};
  }

  Status Whiteout(const std::string& parent, const std::string& leaf) {
    ++stats_.whiteouts;
    auto dir = root_.OpenDir(parent, /*create=*/leaf == kOpaqueWhiteout, 0755, 0, 0);
    if (!dir) {
      if (dir.error().sys_errno() == ENOENT || dir.error().sys_errno() == ENOTDIR) return {};
      return Fail(dir.error());
    }
    // O_PATH fds cannot be read as directories: reopen it.
    UniqueFd d(::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d) return FailErrno("open " + parent);
    if (leaf == kOpaqueWhiteout) {
      // Keep what this layer itself put there (entries may precede the marker).
      return RemoveChildrenAt(
          d.get(), [&](const std::string& n) { return created_.count(Join(parent, n)) != 0; });
    }
    const std::string victim = leaf.substr(kWhiteoutPrefix.size());
    if (victim.empty() || victim == "." || victim == "..") {
      return Fail(Refused(Join(parent, leaf), "malformed whiteout"));
    }
    return RemoveAt(d.get(), victim);
  }

  const RootedDir& root_;
  const LayerOptions& opts_;
  std::unordered_set<std::string> created_;
  LayerStats stats_;
};

}  // namespace

Result<LayerStats> ApplyArchive(int fd, const RootedDir& root, const LayerOptions& opts) {
  std::unique_ptr<struct archive, ArchiveDeleter> a(archive_read_new());
  if (!a) return Fail(Error::Internal("archive_read_new"));
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_fd(a.get(), fd, 1 << 16) != ARCHIVE_OK) {
    return Fail(
        Error::InvalidArgument(std::string("not a tar archive: ") + archive_error_string(a.get())));
  }
  Applier applier(root, opts);
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      return Fail(Error::InvalidArgument(std::string("malformed archive: ") +
                                         archive_error_string(a.get())));
    }
    ASB_TRY(applier.Entry(a.get(), e));
  }
  return applier.stats();
}

}  // namespace asb::templates
