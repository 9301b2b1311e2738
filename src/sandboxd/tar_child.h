// The libarchive side of tar.export / tar.import, run in a forked child of sandboxd (so the
// event loop never blocks on a big tree) with the scope user's identity. The child streams the
// archive through a pipe and reports its outcome as one TarOutcome on a status pipe.
//
// Export writes a POSIX pax archive of the tree below the directory fd: modes, symlinks
// (never followed), hard links within the tree, empty directories and sparse files; member
// names are relative ("a/b", no leading "./"); sockets and FIFOs are skipped.
// Import extracts with ARCHIVE_EXTRACT_SECURE_SYMLINKS | SECURE_NODOTDOT |
// SECURE_NOABSOLUTEPATHS and additionally refuses, naming the member: absolute paths, ".."
// components (also in hard-link targets), device nodes, FIFOs and sockets (invalid_request);
// more than max_entries members (limit_exceeded); more than max_bytes of file data
// (payload_too_large).
#pragma once

#include <cstdint>

namespace asb::sandboxd {

struct TarOutcome {
  int32_t ok = 0;    // 1 = success
  int32_t code = 0;  // asb::ErrorCode when !ok
  int32_t sys_errno = 0;
  uint64_t entries = 0;
  uint64_t bytes = 0;
  char message[400] = {};
};

struct TarChildPlan {
  bool as_root = false;  // else uid/gid 1000
  int dir_fd = -1;       // export: the directory (or, with file_name, its parent); import: target
  const char* file_name = nullptr;  // export of a single file: its name in dir_fd
  int data_fd = -1;                 // export: write end of the data pipe; import: read end
  int status_fd = -1;               // write end of the status pipe
  // import only
  uint64_t max_bytes = 0;
  uint64_t max_entries = 0;
  bool clear_first = false;
};

[[noreturn]] void RunTarExportChild(const TarChildPlan& plan);
[[noreturn]] void RunTarImportChild(const TarChildPlan& plan);

}  // namespace asb::sandboxd
