#include "templates/test_tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace asb::templates::testing {

namespace {

[[noreturn]] void Die(struct archive* a, const char* what) {
  std::fprintf(stderr, "WriteTar %s: %s\n", what, a ? archive_error_string(a) : "");
  std::abort();
}

}  // namespace

void WriteTar(const std::string& path, const std::vector<TarEntry>& entries, TarFilter filter) {
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (filter == TarFilter::kGzip) archive_write_add_filter_gzip(a);
  if (filter == TarFilter::kZstd && archive_write_add_filter_zstd(a) != ARCHIVE_OK) {
    Die(a, "zstd");
  }
  if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) Die(a, "open");
  const bool root = ::geteuid() == 0;
  for (const auto& t : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, t.name.c_str());
    archive_entry_set_uid(e, (t.uid == 0 && !root) ? ::geteuid() : t.uid);
    archive_entry_set_gid(e, (t.gid == 0 && !root) ? ::getegid() : t.gid);
    archive_entry_set_perm(e, t.mode);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (t.type) {
      case TarEntry::kFile:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
        break;
      case TarEntry::kDir:
        archive_entry_set_filetype(e, AE_IFDIR);
        break;
      case TarEntry::kSymlink:
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, t.data.c_str());
        break;
      case TarEntry::kHardlink:
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_hardlink(e, t.data.c_str());
        break;
      case TarEntry::kCharDevice:
        archive_entry_set_filetype(e, AE_IFCHR);
        archive_entry_set_rdev(e, makedev(1, 3));
        break;
      case TarEntry::kFifo:
        archive_entry_set_filetype(e, AE_IFIFO);
        break;
    }
    if (archive_write_header(a, e) != ARCHIVE_OK) Die(a, "header");
    if (t.type == TarEntry::kFile && !t.data.empty() &&
        archive_write_data(a, t.data.data(), t.data.size()) < 0) {
      Die(a, "data");
    }
    archive_entry_free(e);
  }
  if (archive_write_close(a) != ARCHIVE_OK) Die(a, "close");
  archive_write_free(a);
}

}  // namespace asb::templates::testing
