#include "cli/local_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "common/unique_fd.h"

namespace asb::cli {
namespace {

struct ArchiveFree {
  void operator()(struct archive* a) const { archive_free(a); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveFree>;

struct EntryFree {
  void operator()(struct archive_entry* e) const { archive_entry_free(e); }
};
using EntryPtr = std::unique_ptr<struct archive_entry, EntryFree>;

struct ResolverFree {
  void operator()(struct archive_entry_linkresolver* r) const {
    archive_entry_linkresolver_free(r);
  }
};

// libarchive's error as ours: errno-based when it has one.
Error ArchiveError(struct archive* a, const std::string& what) {
  const char* s = archive_error_string(a);
  int err = archive_errno(a);
  if (err > 0) return Error::FromErrno(err, what);
  return Error::Internal(what + ": " + (s ? s : "libarchive error"));
}

la_ssize_t WriteCallback(struct archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

bool HasDotDot(const std::string& name) {
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    if (name.compare(start, slash - start, "..") == 0 && slash - start == 2) return true;
    start = slash + 1;
  }
  return false;
}

// Writes the current entry's data (sparse blocks with holes as zeros) from `disk` to `out`.
Status CopyData(struct archive* disk, struct archive* out, const std::string& name) {
  static const char zeros[64 * 1024] = {};
  la_int64_t progress = 0;
  for (;;) {
    const void* buf;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(disk, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return {};
    if (r < ARCHIVE_WARN) return Fail(ArchiveError(disk, "read " + name));
    while (offset > progress) {
      size_t n = static_cast<size_t>(std::min<la_int64_t>(offset - progress, sizeof(zeros)));
      if (archive_write_data(out, zeros, n) < 0) return Fail(ArchiveError(out, "tar " + name));
      progress += static_cast<la_int64_t>(n);
    }
    if (size > 0 && archive_write_data(out, buf, size) < 0) {
      return Fail(ArchiveError(out, "tar " + name));
    }
    progress = offset + static_cast<la_int64_t>(size);
  }
}

}  // namespace

Result<std::string> TarOfPath(const std::string& path, const std::string& name) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return FailErrno(path);
  if (S_ISDIR(st.st_mode) && ::access(path.c_str(), R_OK | X_OK) != 0) return FailErrno(path);
  if (S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) != 0) return FailErrno(path);

  std::string data;
  ArchivePtr out(archive_write_new());
  archive_write_set_format_pax_restricted(out.get());
  archive_write_set_bytes_in_last_block(out.get(), 1);
  if (archive_write_open2(out.get(), &data, nullptr, WriteCallback, nullptr, nullptr) !=
      ARCHIVE_OK) {
    return Fail(ArchiveError(out.get(), "tar"));
  }
  ArchivePtr disk(archive_read_disk_new());
  archive_read_disk_set_symlink_physical(disk.get());  // never follow symlinks
  if (archive_read_disk_open(disk.get(), path.c_str()) != ARCHIVE_OK) {
    return Fail(ArchiveError(disk.get(), path));
  }
  std::unique_ptr<struct archive_entry_linkresolver, ResolverFree> links(
      archive_entry_linkresolver_new());
  archive_entry_linkresolver_set_strategy(links.get(), archive_format(out.get()));
  for (;;) {
    EntryPtr entry(archive_entry_new());
    int r = archive_read_next_header2(disk.get(), entry.get());
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return Fail(ArchiveError(disk.get(), path));
    std::string member = archive_entry_pathname(entry.get());
    archive_read_disk_descend(disk.get());
    const auto type = archive_entry_filetype(entry.get());
    if (type == AE_IFSOCK || type == AE_IFIFO || type == AE_IFCHR || type == AE_IFBLK) continue;
    // The disk reader names members by the path it was opened with: put `name` in its place.
    std::string rest = member.substr(std::min(member.size(), path.size()));
    archive_entry_set_pathname(entry.get(), (name + rest).c_str());
    archive_entry_set_uname(entry.get(), nullptr);
    archive_entry_set_gname(entry.get(), nullptr);
    struct archive_entry* e = entry.release();
    struct archive_entry* spare = nullptr;
    archive_entry_linkify(links.get(), &e, &spare);
    EntryPtr spare_owner(spare);
    if (e == nullptr) continue;
    entry.reset(e);
    if (archive_write_header(out.get(), entry.get()) < ARCHIVE_WARN) {
      return Fail(ArchiveError(out.get(), "tar " + member));
    }
    if (type == AE_IFREG && archive_entry_hardlink(entry.get()) == nullptr) {
      ASB_TRY(CopyData(disk.get(), out.get(), member));
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) return Fail(ArchiveError(out.get(), "tar"));
  return data;
}

Status ExtractTar(std::string_view tar, const std::string& dir, const ExtractNames& names) {
  UniqueFd here(::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!here) return FailErrno("open .");
  if (::chdir(dir.c_str()) != 0) return FailErrno(dir);
  // Back to where we were on every path (members are extracted relative to `dir`).
  struct Back {
    int fd;
    ~Back() { (void)!::fchdir(fd); }
  } back{here.get()};

  if (names.under) {
    if (::mkdir(names.under->c_str(), 0700) != 0 && errno != EEXIST) {
      return FailErrno(dir + "/" + *names.under);
    }
    struct stat st {};
    if (::lstat(names.under->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Fail(Error::Conflict(dir + "/" + *names.under + ": exists and is not a directory"));
    }
  }
  ArchivePtr in(archive_read_new());
  archive_read_support_format_all(in.get());
  archive_read_support_filter_all(in.get());
  if (archive_read_open_memory(in.get(), tar.data(), tar.size()) != ARCHIVE_OK) {
    return Fail(Error::InvalidArgument(std::string("not a tar archive: ") +
                                       archive_error_string(in.get())));
  }
  ArchivePtr disk(archive_write_disk_new());
  archive_write_disk_set_options(
      disk.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                      ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
                      ARCHIVE_EXTRACT_UNLINK);
  const std::string prefix = names.under ? *names.under + "/" : "";
  bool renamed = false;
  for (;;) {
    struct archive_entry* entry;
    int r = archive_read_next_header(in.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) return Fail(ArchiveError(in.get(), "read archive"));
    std::string member = archive_entry_pathname(entry) ? archive_entry_pathname(entry) : "";
    const char* link = archive_entry_hardlink(entry);
    if (member.empty() || member[0] == '/' || HasDotDot(member) ||
        (link && (link[0] == '/' || HasDotDot(link)))) {
      return Fail(Error::InvalidArgument("tar member '" + member + "': unsafe path"));
    }
    const auto type = archive_entry_filetype(entry);
    if (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) continue;
    if (names.rename_single && !renamed) {
      member = *names.rename_single;
      renamed = true;
    }
    archive_entry_set_pathname(entry, (prefix + member).c_str());
    if (link) archive_entry_set_hardlink(entry, (prefix + link).c_str());
    if (archive_write_header(disk.get(), entry) < ARCHIVE_WARN) {
      return Fail(ArchiveError(disk.get(), dir + "/" + prefix + member));
    }
    if (archive_entry_size(entry) > 0) {
      const void* buf;
      size_t size;
      la_int64_t offset;
      for (;;) {
        r = archive_read_data_block(in.get(), &buf, &size, &offset);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) return Fail(ArchiveError(in.get(), "read " + member));
        if (archive_write_data_block(disk.get(), buf, size, offset) < 0) {
          return Fail(ArchiveError(disk.get(), dir + "/" + prefix + member));
        }
      }
    }
    if (archive_write_finish_entry(disk.get()) < ARCHIVE_WARN) {
      return Fail(ArchiveError(disk.get(), dir + "/" + prefix + member));
    }
  }
  if (archive_write_close(disk.get()) != ARCHIVE_OK) {
    return Fail(ArchiveError(disk.get(), dir));
  }
  if (names.under && ::chmod(names.under->c_str(), names.root_mode & 07777) != 0) {
    return FailErrno(dir + "/" + *names.under);
  }
  return {};
}

}  // namespace asb::cli
