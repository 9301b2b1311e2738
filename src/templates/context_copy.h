// COPY and ADD: files from the build context (a host directory) into the staged rootfs.
// Sources are resolved inside the context and destinations inside the rootfs (RootedDir), so
// neither a symlink in the context nor one planted in the rootfs by a RUN step leads outside.
// Semantics follow the Dockerfile reference: a directory source copies its contents; a
// destination ending in '/' (or an existing directory) receives the source under its own name;
// ADD unpacks a local tar archive (any compression libarchive detects) into the destination
// directory; without --chown everything is owned by 0:0; modes are kept. No .dockerignore.
#pragma once

#include <string>

#include "common/result.h"
#include "templates/rooted_dir.h"
#include "templates/user_db.h"

namespace asb::templates {

struct CopyRequest {
  std::string source;            // relative to the context ("." and "/" are the context itself)
  std::string dest;              // absolute inside the rootfs
  bool dest_is_dir = false;      // written with a trailing '/'
  bool unpack_archives = false;  // ADD
  ResolvedUser owner;            // 0:0 unless --chown
};

struct CopyStats {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

/// Errors: kNotFound "COPY source 'x' not found in the context", kInvalidArgument for an
/// unsupported file type (device, socket) or a malformed archive, FromErrno.
Result<CopyStats> CopyFromContext(const RootedDir& context, const RootedDir& root,
                                  const CopyRequest& req);

/// True when the file starts like a tar archive or a compressed stream (gzip, bzip2, xz,
/// zstd): the files ADD unpacks.
bool LooksLikeArchive(int fd);

}  // namespace asb::templates
