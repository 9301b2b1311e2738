// Local tar for `agent-sandbox cp`, with libarchive, like `docker cp`: the
// archive keeps symlinks as symlinks (never followed), modes, empty directories and hard links
// within the tree; sockets and FIFOs are skipped (the server refuses them).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::cli {

/// A POSIX pax tar of `path` (a file, symlink or directory tree) whose members are named
/// `name`, `name/a`, `name/a/b`, ... Errors: FromErrno for a path that cannot be read (missing,
/// permission), kInternal for other libarchive failures; the message names the path.
Result<std::string> TarOfPath(const std::string& path, const std::string& name);

/// How ExtractTar renames the archive's members.
struct ExtractNames {
  /// Set: every member is put below this directory name ("x" + "/" + member), which is made
  /// first (mode `root_mode`, applied after the members are written).
  std::optional<std::string> under;
  unsigned root_mode = 0755;
  /// Set: the archive's one top-level member (a file or symlink) is renamed to this.
  std::optional<std::string> rename_single;
};

/// Extracts `tar` into the existing directory `dir` with modes and mtimes, refusing absolute
/// paths, ".." and writes through symlinks. Errors: FromErrno/kInvalidArgument naming the
/// member; kNotFound when `dir` is missing.
Status ExtractTar(std::string_view tar, const std::string& dir, const ExtractNames& names);

}  // namespace asb::cli
