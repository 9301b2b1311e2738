// Unpacking a tar archive (plain, gzip, zstd, xz, bzip2: libarchive detects the filter) into a
// rootfs under construction: an image layer (OCI image-spec layer.md, with whiteouts) or the
// archive of a Dockerfile ADD.
//
// Safety (the archive is untrusted): entry names that are absolute or contain ".." are refused;
// hard links must name an entry inside the tree by a relative path without ".."; relative
// symlink targets that climb above the root are refused (absolute targets are kept: they are
// resolved inside the sandbox's own root); character and block devices are refused. Every
// write goes through RootedDir, so symlinks already in the tree cannot lead outside it.
// Extended attributes and ACLs are not restored (file capabilities are dropped on purpose).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "templates/rooted_dir.h"

namespace asb::templates {

struct LayerOptions {
  /// Apply OCI whiteouts: ".wh.<name>" removes <name> from lower layers, ".wh..wh..opq" empties
  /// its directory of what lower layers put there (image-spec layer.md, "Whiteouts").
  bool whiteouts = false;
  /// Directory below the root the entries are relative to ("" = the root).
  std::string base;
  /// Refuse the archive once its entries' sizes add up to more than this (bytes).
  uint64_t max_bytes = uint64_t{64} << 30;
};

struct LayerStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t whiteouts = 0;
};

/// Unpacks the archive read from `fd` into `root`. Errors: kInvalidArgument naming the entry
/// for a refused or malformed entry (what was written before stays: callers unpack into a
/// staging directory they discard on failure), kTooLarge past max_bytes, FromErrno.
Result<LayerStats> ApplyArchive(int fd, const RootedDir& root, const LayerOptions& opts);

}  // namespace asb::templates
