// Copy-on-write copies of a workspace image (ADR 0009; a reflink of a 1 GiB file on XFS takes about
// 3 ms here).
//
// A consistent copy of a mounted ext4 workspace image is: quiesce the file system (FIFREEZE
// then FITHAW, ioctl_fsfreeze(2); this flushes the journal and every dirty block to the image),
// then clone the image file. Where the host file system shares extents (XFS with reflink=1,
// btrfs) the clone is FICLONE (ioctl_ficlone(2)): O(1) in the data size. Elsewhere (ext4, as
// this machine's data dir) it is a sparse copy: only the data extents found by
// SEEK_DATA/SEEK_HOLE (lseek(2)) are copied, with copy_file_range(2).
//
// Used by the ns backend's CopyWorkspaceImage (freeze, CloneImage, thaw), StageWorkspace and
// Create from a snapshot image (docs/adr/0009).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::isolation::ns {

enum class CloneMethod { kReflink, kSparseCopy };

/// "reflink" or "sparse-copy".
std::string_view CloneMethodName(CloneMethod m);

/// Flushes the file system mounted at `mount_dir` to its device: FIFREEZE + FITHAW; when the
/// freeze is refused (EOPNOTSUPP, EBUSY: already frozen, EPERM) it falls back to syncfs(2).
/// Errors: FromErrno of open/syncfs.
Status QuiesceWorkspace(const std::string& mount_dir);

/// Copies the file `src` to the new file `dst` (must not exist; mode 0600), keeping holes:
/// FICLONE when the file system supports it, else a sparse copy. With `durable` the copy is
/// fsynced (snapshots, staged rollbacks); a new sandbox's workspace needs not be, since a machine
/// crash ends the sandbox anyway. Returns the method used. `force_copy` skips FICLONE (tests,
/// benchmarks). Errors: FromErrno of the failing step; `dst` is removed on failure.
Result<CloneMethod> CloneImage(const std::string& src, const std::string& dst,
                               bool force_copy = false, bool durable = true);

}  // namespace asb::isolation::ns
