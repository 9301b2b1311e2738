#include "sandboxd/file_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

namespace asb::sandboxd {

using protocol::FileStat;

namespace {

// Names in directory `fd` (without "." and ".."). `fd` is not consumed. With `max_bytes`, fails
// with `too_large` once the names plus kListingEntryCost each exceed it (a listing's budget:
// each entry's path is longer than its name, so such a directory could not be listed anyway,
// and its names alone must not take sandboxd's memory).
Result<std::vector<std::string>> ReadNames(int fd, const std::string& display,
                                           std::optional<uint64_t> max_bytes = std::nullopt,
                                           const std::string& too_large = {}) {
  int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dupfd < 0) return FailErrno(display);
  DIR* dir = fdopendir(dupfd);
  if (!dir) {
    int err = errno;
    close(dupfd);
    return Fail(Error::FromErrno(err, display));
  }
  std::vector<std::string> names;
  uint64_t bytes = 0;
  errno = 0;
  while (dirent* d = readdir(dir)) {
    std::string_view n = d->d_name;
    if (n == "." || n == "..") continue;
    bytes += protocol::kListingEntryCost + n.size();
    if (max_bytes && bytes > *max_bytes) {
      closedir(dir);
      return Fail(Error::TooLarge(too_large));
    }
    names.emplace_back(n);
  }
  int err = errno;
  closedir(dir);
  if (err) return Fail(Error::FromErrno(err, display));
  return names;
}

Status RemoveTreeAt(int parent, const std::string& name, const std::string& display) {
  if (unlinkat(parent, name.c_str(), 0) == 0) return {};
  if (errno != EISDIR && errno != EPERM) return FailErrno(display);
  // A directory (Linux answers EISDIR; POSIX allows EPERM): empty it, then remove it.
  UniqueFd dir(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return FailErrno(display);
  ASB_ASSIGN_OR_RETURN(auto names, ReadNames(dir.get(), display));
  for (const auto& n : names) ASB_TRY(RemoveTreeAt(dir.get(), n, display + "/" + n));
  if (unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0) return FailErrno(display);
  return {};
}

// A listing under way: its limits and what it holds so far.
struct Listing {
  bool recursive = false;
  bool metadata = false;  // read each entry's file metadata
  uint32_t max_entries = 0;
  uint64_t max_bytes = 0;
  uint64_t bytes = 0;  // sum of ListingBytes over `out`
  std::vector<FileStat> out;
};

Status ListInto(int dirfd, const std::string& display, Listing* l) {
  std::vector<FileStat>* out = &l->out;
  const uint32_t max_entries = l->max_entries;
  const std::string too_large = protocol::ListingTooLargeMessage(l->max_bytes);
  ASB_ASSIGN_OR_RETURN(auto names, ReadNames(dirfd, display, l->max_bytes - l->bytes, too_large));
  for (const auto& n : names) {
    if (out->size() >= max_entries) {
      return Fail(Error::LimitExceeded("listing has more than " + std::to_string(max_entries) +
                                       " entries"));
    }
    std::string path = display == "/" ? "/" + n : display + "/" + n;
    struct stat st;
    if (fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed while we listed
      return FailErrno(path);
    }
    FileStat e = MakeFileStat(st, path, n, dirfd, n.c_str());
    if (l->metadata) e.metadata = ReadMetadata(dirfd, n);
    uint64_t cost = protocol::ListingBytes(e);
    if (cost > l->max_bytes - l->bytes) return Fail(Error::TooLarge(too_large));
    l->bytes += cost;
    out->push_back(std::move(e));
    if (l->recursive && S_ISDIR(st.st_mode)) {
      UniqueFd sub(openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) {
        if (errno == EACCES || errno == ENOENT) continue;  // unreadable: listed, not descended
        return FailErrno(path);
      }
      ASB_TRY(ListInto(sub.get(), path, l));
    }
  }
  return {};
}

}  // namespace

Result<FileStat> StatFile(const FsContext& ctx, const protocol::FileStatRequest& req) {
  FsIdentity id(req.scope);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req.path, req.scope));
  if (req.follow_symlinks || p.name.empty() || p.name == "..") {
    ASB_ASSIGN_OR_RETURN(UniqueFd fd, OpenResolved(ctx, p, p.rel, O_PATH));
    ASB_ASSIGN_OR_RETURN(FileStat s, StatAt(fd.get(), "", p.display));
    if (req.metadata) s.metadata = ReadMetadata(fd.get(), "");
    return s;
  }
  ASB_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(ctx, p));
  ASB_ASSIGN_OR_RETURN(FileStat s, StatAt(parent.get(), p.name, p.display));
  if (req.metadata) s.metadata = ReadMetadata(parent.get(), p.name);
  return s;
}

Status MakeParents(const FsContext& ctx, const FsPath& p, const std::string& rel, mode_t mode) {
  if (rel == ".") return {};
  std::string prefix;
  size_t i = 0;
  while (i <= rel.size()) {
    size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    std::string parent = prefix.empty() ? "." : prefix;
    std::string comp = rel.substr(i, j - i);
    prefix = prefix.empty() ? comp : prefix + "/" + comp;
    auto existing = OpenResolved(ctx, p, prefix, O_PATH | O_DIRECTORY);
    if (!existing) {
      if (existing.error().sys_errno() != ENOENT) return Fail(existing.error());
      ASB_ASSIGN_OR_RETURN(UniqueFd pfd, OpenResolved(ctx, p, parent, O_PATH | O_DIRECTORY));
      if (mkdirat(pfd.get(), comp.c_str(), mode) != 0 && errno != EEXIST) {
        return FailErrno("mkdir " + p.display);
      }
    }
    i = j + 1;
  }
  return {};
}

Result<FileStat> MakeDirectory(const FsContext& ctx, const protocol::FileMkdirRequest& req) {
  if (req.mode > 07777) return Fail(Error::InvalidArgument("mode must be at most 07777"));
  FsIdentity id(req.scope);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req.path, req.scope));
  if (req.parents) {
    ASB_TRY(MakeParents(ctx, p, p.parent_rel, 0755));
  }
  ASB_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(ctx, p));
  if (mkdirat(parent.get(), p.name.c_str(), req.mode) != 0) {
    int err = errno;
    struct stat st;
    bool is_dir = fstatat(parent.get(), p.name.c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
    if (!(err == EEXIST && req.parents && is_dir)) return Fail(Error::FromErrno(err, p.display));
  } else {
    // mkdir(2) masks the mode with the umask and may ignore special bits; make it exact.
    UniqueFd d(
        openat(parent.get(), p.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (d) fchmod(d.get(), req.mode);
  }
  return StatAt(parent.get(), p.name, p.display);
}

Status RemovePath(const FsContext& ctx, const protocol::FileRemoveRequest& req) {
  FsIdentity id(req.scope);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req.path, req.scope));
  ASB_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(ctx, p));
  if (req.recursive) return RemoveTreeAt(parent.get(), p.name, p.display);
  if (unlinkat(parent.get(), p.name.c_str(), 0) == 0) return {};
  if (errno != EISDIR) return FailErrno(p.display);
  if (unlinkat(parent.get(), p.name.c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOTEMPTY || errno == EEXIST) {
      return Fail(Error(ErrorCode::kConflict, p.display + ": directory not empty", errno));
    }
    return FailErrno(p.display);
  }
  return {};
}

Result<FileStat> MovePath(const FsContext& ctx, const protocol::FileMoveRequest& req) {
  FsIdentity id(req.scope);
  ASB_ASSIGN_OR_RETURN(FsPath from, ResolvePath(ctx, req.from, req.scope));
  ASB_ASSIGN_OR_RETURN(FsPath to, ResolvePath(ctx, req.to, req.scope));
  ASB_ASSIGN_OR_RETURN(UniqueFd from_parent, OpenParent(ctx, from));
  ASB_ASSIGN_OR_RETURN(UniqueFd to_parent, OpenParent(ctx, to));
  unsigned flags = req.overwrite ? 0 : RENAME_NOREPLACE;
  if (renameat2(from_parent.get(), from.name.c_str(), to_parent.get(), to.name.c_str(), flags) !=
      0) {
    int err = errno;
    if (err == EEXIST || err == ENOTEMPTY) {
      return Fail(Error(ErrorCode::kConflict, to.display + ": already exists", err));
    }
    return Fail(Error::FromErrno(err, "move " + from.display + " to " + to.display));
  }
  return StatAt(to_parent.get(), to.name, to.display);
}

Result<uint64_t> ListDirectory(const FsContext& ctx, const protocol::FileListRequest& req,
                               const std::function<void(std::vector<FileStat>&&)>& emit,
                               size_t chunk) {
  FsIdentity id(req.scope);
  ASB_ASSIGN_OR_RETURN(FsPath p, ResolvePath(ctx, req.path, req.scope));
  ASB_ASSIGN_OR_RETURN(UniqueFd dir, OpenResolved(ctx, p, p.rel, O_RDONLY | O_DIRECTORY));
  Listing l;
  l.recursive = req.recursive;
  l.metadata = req.metadata;
  l.max_entries = req.max_entries;
  // The host may ask for less (tests do), never for more than the product's budget.
  l.max_bytes = std::min(req.max_bytes, protocol::kMaxListingBytes);
  ASB_TRY(ListInto(dir.get(), p.display, &l));
  std::vector<FileStat>& all = l.out;
  std::sort(all.begin(), all.end(),
            [](const FileStat& a, const FileStat& b) { return a.path < b.path; });
  // Chunks of at most `chunk` entries and well under the 1 MiB frame limit (a name is at most
  // 255 bytes, but paths and link targets can be 4 KiB each).
  constexpr size_t kMaxChunkBytes = 512 * 1024;
  constexpr size_t kEntryOverhead = 160;  // keys, numbers, type, JSON escaping slack
  uint64_t count = all.size();
  std::vector<FileStat> part;
  size_t bytes = 0;
  for (auto& e : all) {
    size_t size = kEntryOverhead + 2 * (e.path.size() + e.name.size() + e.link_target.size());
    if (!part.empty() && (part.size() >= chunk || bytes + size > kMaxChunkBytes)) {
      emit(std::move(part));
      part.clear();
      bytes = 0;
    }
    bytes += size;
    part.push_back(std::move(e));
  }
  if (!part.empty()) emit(std::move(part));
  return count;
}

}  // namespace asb::sandboxd
