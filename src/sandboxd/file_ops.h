// The synchronous file operations: file.stat, file.mkdir, file.remove, file.move, file.list
// (docs/design/sandbox-protocol.md section 7). Each resolves its paths with fs_path.h and
// runs under the scope user's fs identity. They are plain functions of an FsContext, so the
// unit tests call them without a daemon; sandboxd runs them inline on its event loop (they
// touch only the workspace's own file system).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "protocol/messages.h"
#include "sandboxd/fs_path.h"

namespace asb::sandboxd {

/// Errors: kNotFound, kInvalidArgument (outside the workspace), kPermissionDenied.
Result<protocol::FileStat> StatFile(const FsContext& ctx, const protocol::FileStatRequest& req);

/// Creates a directory (and missing parents with `parents`). An existing directory is fine with
/// `parents`, kConflict without. Errors also: kInvalidArgument for a mode over 07777.
Result<protocol::FileStat> MakeDirectory(const FsContext& ctx,
                                         const protocol::FileMkdirRequest& req);

/// Creates the missing directories of `rel` under p's base (mode 0755 for each), as the
/// caller's current fs identity. Used by mkdir -p and file.write's make_parents.
Status MakeParents(const FsContext& ctx, const FsPath& p, const std::string& rel, mode_t mode);

/// Removes a file, symlink or empty directory; with `recursive` a whole tree (unlinkat loops,
/// never following symlinks). Errors: kNotFound, kConflict (a non-empty dir without recursive).
Status RemovePath(const FsContext& ctx, const protocol::FileRemoveRequest& req);

/// renameat2, RENAME_NOREPLACE unless overwrite. Returns the stat of the destination.
/// Errors: kConflict when the destination exists, kNotFound, kInvalidArgument.
Result<protocol::FileStat> MovePath(const FsContext& ctx, const protocol::FileMoveRequest& req);

/// Lists a directory (sorted by path; dotfiles included; symlinks not followed), calling
/// `emit` with chunks of at most `chunk` entries. Returns the total count. Errors:
/// kLimitExceeded over max_entries, kTooLarge over max_bytes (protocol::ListingBytes summed;
/// at most protocol::kMaxListingBytes whatever the request says), kInvalidArgument for a
/// non-directory.
Result<uint64_t> ListDirectory(const FsContext& ctx, const protocol::FileListRequest& req,
                               const std::function<void(std::vector<protocol::FileStat>&&)>& emit,
                               size_t chunk = 1000);

}  // namespace asb::sandboxd
