#include "sandboxd/tar_child.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "common/error.h"
#include "protocol/messages.h"

namespace asb::sandboxd {

namespace {

constexpr int kDirFd = 3, kDataFd = 4, kStatusFd = 5;

[[noreturn]] void Report(const TarOutcome& o) {
  ssize_t ignored = write(kStatusFd, &o, sizeof o);
  (void)ignored;
  _exit(o.ok ? 0 : 1);
}

[[noreturn]] void Die(ErrorCode code, int err, const std::string& msg) {
  TarOutcome o;
  o.code = static_cast<int32_t>(code);
  o.sys_errno = err;
  snprintf(o.message, sizeof o.message, "%s", msg.c_str());
  Report(o);
}

[[noreturn]] void DieArchive(struct archive* a, const std::string& what) {
  int err = archive_errno(a);
  const char* s = archive_error_string(a);
  Die(err == ENOSPC || err == EDQUOT ? ErrorCode::kLimitExceeded : ErrorCode::kInternal,
      err > 0 ? err : 0, what + ": " + (s ? s : "archive error"));
}

// Common child set-up: signals, fds at 3/4/5 and nothing else, identity.
void PrepareChild(const TarChildPlan& p) {
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  int fds[3] = {p.dir_fd, p.data_fd, p.status_fd};
  for (int& fd : fds) fd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (dup2(fds[2], kStatusFd) < 0 || dup2(fds[0], kDirFd) < 0 || dup2(fds[1], kDataFd) < 0) {
    _exit(2);
  }
  syscall(SYS_close_range, 6u, ~0u, 0u);
  int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    ssize_t ignored = write(oom, "0", 1);
    (void)ignored;
    close(oom);
  }
  if (!p.as_root) {
    gid_t gid = protocol::kSandboxGid;
    if (setgroups(1, &gid) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(protocol::kSandboxUid, protocol::kSandboxUid, protocol::kSandboxUid) != 0) {
      Die(ErrorCode::kInternal, errno, "tar: drop privileges");
    }
  }
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (fchdir(kDirFd) != 0) Die(ErrorCode::kInternal, errno, "tar: fchdir");
}

bool HasDotDot(std::string_view path) {
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (path.substr(i, j - i) == "..") return true;
    i = j + 1;
  }
  return false;
}

// The file system's own lost+found at the top of the tree (the workspace is an ext4 image):
// root-owned, unreadable for the sandbox user, and not user data. Neither exported nor
// cleared.
bool IsFsLostAndFound(std::string_view top_level_name, bool is_dir, int64_t uid) {
  return top_level_name == "lost+found" && is_dir && uid == 0;
}

// Empties the current directory (clear_first), never following symlinks.
void RemoveTreeAt(int parent, const char* name);
void EmptyDir(int dirfd, bool top = false) {
  int dup = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  DIR* d = fdopendir(dup);
  if (!d) Die(ErrorCode::kInternal, errno, "tar: clear target");
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) names.emplace_back(e->d_name);
  }
  closedir(d);
  for (const auto& n : names) {
    struct stat st;
    if (top && fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        IsFsLostAndFound(n, S_ISDIR(st.st_mode), st.st_uid)) {
      continue;
    }
    RemoveTreeAt(dirfd, n.c_str());
  }
}
void RemoveTreeAt(int parent, const char* name) {
  if (unlinkat(parent, name, 0) == 0) return;
  if (errno != EISDIR && errno != EPERM) {
    Die(Error::FromErrno(errno, "").code(), errno, std::string("tar: clear ") + name);
  }
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) Die(Error::FromErrno(errno, "").code(), errno, std::string("tar: clear ") + name);
  EmptyDir(fd);
  close(fd);
  if (unlinkat(parent, name, AT_REMOVEDIR) != 0) {
    Die(Error::FromErrno(errno, "").code(), errno, std::string("tar: clear ") + name);
  }
}

}  // namespace

void RunTarExportChild(const TarChildPlan& p) {
  PrepareChild(p);
  TarOutcome o;
  struct archive* out = archive_write_new();
  archive_write_set_format_pax_restricted(out);
  archive_write_set_bytes_in_last_block(out, 1);
  if (archive_write_open_fd(out, kDataFd) != ARCHIVE_OK) DieArchive(out, "tar: open output");

  struct archive* disk = archive_read_disk_new();
  archive_read_disk_set_symlink_physical(disk);  // never follow symlinks
  // No uname/gname lookup: a static binary has no NSS, and ids are what matters.
  const char* root = p.file_name ? p.file_name : ".";
  if (archive_read_disk_open(disk, root) != ARCHIVE_OK) DieArchive(disk, "tar: open tree");
  struct archive_entry_linkresolver* links = archive_entry_linkresolver_new();
  archive_entry_linkresolver_set_strategy(links, archive_format(out));

  for (;;) {
    struct archive_entry* entry = archive_entry_new();
    int r = archive_read_next_header2(disk, entry);
    if (r == ARCHIVE_EOF) {
      archive_entry_free(entry);
      break;
    }
    if (r < ARCHIVE_WARN) DieArchive(disk, "tar: read tree");
    std::string name = archive_entry_pathname(entry);
    if (name.rfind("./", 0) == 0) name.erase(0, 2);
    if (!p.file_name && IsFsLostAndFound(name, archive_entry_filetype(entry) == AE_IFDIR,
                                         archive_entry_uid(entry))) {
      archive_entry_free(entry);  // not descended into either
      continue;
    }
    archive_read_disk_descend(disk);
    // Sockets cannot be archived (pax has no type for them) and FIFOs are refused on import:
    // both are skipped, as GNU tar skips sockets, so a workspace holding either still
    // snapshots and exports (a sandbox may leave a listening socket behind) and round-trips.
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFSOCK || type == AE_IFIFO) {
      archive_entry_free(entry);
      continue;
    }
    if (name == ".") {
      archive_entry_free(entry);
      continue;
    }
    archive_entry_set_pathname(entry, name.c_str());
    struct archive_entry* spare = nullptr;
    archive_entry_linkify(links, &entry, &spare);
    if (!entry) continue;
    bool hardlink = archive_entry_hardlink(entry) != nullptr;
    r = archive_write_header(out, entry);
    if (r < ARCHIVE_WARN) DieArchive(out, "tar: write " + name);
    ++o.entries;
    if (archive_entry_filetype(entry) == AE_IFREG && !hardlink) {
      o.bytes += static_cast<uint64_t>(archive_entry_size(entry));
      // Like bsdtar: holes between data blocks are written as zeros, which the pax writer
      // (knowing the entry's sparse map from the disk reader) stores as holes, not bytes.
      static const char zeros[64 * 1024] = {};
      const void* buf;
      size_t size;
      la_int64_t offset;
      la_int64_t progress = 0;
      for (;;) {
        r = archive_read_data_block(disk, &buf, &size, &offset);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) DieArchive(disk, "tar: read " + name);
        while (offset > progress) {
          size_t n = static_cast<size_t>(std::min<la_int64_t>(offset - progress, sizeof zeros));
          la_ssize_t w = archive_write_data(out, zeros, n);
          if (w <= 0) DieArchive(out, "tar: write " + name);
          progress += w;
        }
        const char* p = static_cast<const char*>(buf);
        while (size > 0) {
          la_ssize_t w = archive_write_data(out, p, size);
          if (w <= 0) DieArchive(out, "tar: write " + name);
          p += w;
          size -= static_cast<size_t>(w);
          progress += w;
        }
      }
    }
    archive_entry_free(entry);
    if (spare) archive_entry_free(spare);
  }
  archive_entry_linkresolver_free(links);
  archive_read_free(disk);
  if (archive_write_close(out) != ARCHIVE_OK) DieArchive(out, "tar: finish");
  archive_write_free(out);
  o.ok = 1;
  Report(o);
}

void RunTarImportChild(const TarChildPlan& p) {
  PrepareChild(p);
  if (p.clear_first) EmptyDir(kDirFd, /*top=*/true);
  TarOutcome o;
  struct archive* in = archive_read_new();
  archive_read_support_format_tar(in);  // pax, ustar, gnutar; no compression (host's job)
  if (archive_read_open_fd(in, kDataFd, 64 * 1024) != ARCHIVE_OK) DieArchive(in, "tar: open");
  struct archive* disk = archive_write_disk_new();
  int flags = ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
              ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
              ARCHIVE_EXTRACT_SPARSE;
  if (p.as_root) flags |= ARCHIVE_EXTRACT_OWNER;
  archive_write_disk_set_options(disk, flags);

  for (;;) {
    struct archive_entry* entry;
    int r = archive_read_next_header(in, &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) DieArchive(in, "tar: read archive");
    std::string name = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    const char* link = archive_entry_hardlink(entry);
    if (name.empty() || name[0] == '/' || (link && link[0] == '/')) {
      Die(ErrorCode::kInvalidArgument, 0, "tar member " + name + ": absolute path");
    }
    if (HasDotDot(name) || (link && HasDotDot(link))) {
      Die(ErrorCode::kInvalidArgument, 0, "tar member " + name + ": path contains ..");
    }
    // A hard link's own type may be unset (pax stores only the target); it is checked above.
    switch (link ? AE_IFREG : archive_entry_filetype(entry)) {
      case AE_IFREG:
      case AE_IFDIR:
      case AE_IFLNK:
        break;
      case AE_IFCHR:
      case AE_IFBLK:
        Die(ErrorCode::kInvalidArgument, 0, "tar member " + name + ": device nodes not allowed");
      default:
        Die(ErrorCode::kInvalidArgument, 0,
            "tar member " + name + ": fifos and sockets not allowed");
    }
    if (p.max_entries && o.entries + 1 > p.max_entries) {
      Die(ErrorCode::kLimitExceeded, 0,
          "tar: more than " + std::to_string(p.max_entries) + " members");
    }
    ++o.entries;
    if (archive_entry_filetype(entry) == AE_IFREG && !link) {
      o.bytes += static_cast<uint64_t>(archive_entry_size(entry));
      if (p.max_bytes && o.bytes > p.max_bytes) {
        Die(ErrorCode::kTooLarge, 0,
            "tar: more than " + std::to_string(p.max_bytes) + " bytes of file data");
      }
    }
    r = archive_write_header(disk, entry);
    if (r < ARCHIVE_WARN) {
      int err = archive_errno(disk);
      const char* s = archive_error_string(disk);
      ErrorCode code = err == ENOSPC || err == EDQUOT  ? ErrorCode::kLimitExceeded
                       : err == EACCES || err == EPERM ? ErrorCode::kPermissionDenied
                                                       : ErrorCode::kInvalidArgument;
      Die(code, err > 0 ? err : 0, "tar member " + name + ": " + (s ? s : "cannot extract"));
    }
    if (archive_entry_size(entry) > 0) {
      const void* buf;
      size_t size;
      la_int64_t offset;
      for (;;) {
        r = archive_read_data_block(in, &buf, &size, &offset);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) DieArchive(in, "tar: read " + name);
        if (archive_write_data_block(disk, buf, size, offset) < 0) {
          DieArchive(disk, "tar: write " + name);
        }
      }
    }
    if (archive_write_finish_entry(disk) < ARCHIVE_WARN) DieArchive(disk, "tar: finish " + name);
  }
  if (archive_write_close(disk) != ARCHIVE_OK) DieArchive(disk, "tar: finish");
  archive_write_free(disk);
  archive_read_free(in);
  o.ok = 1;
  Report(o);
}

}  // namespace asb::sandboxd
