// The optional XFS storage pool for workspace images (ADR 0009, `--workspace-pool=xfs`).
//
// Copy-on-write clones of workspace images (FICLONE, ioctl_ficlone(2)) need a file system that
// shares extents; this host's data dir is ext4, which does not. The pool is a sparse file in the
// data dir formatted as XFS with reflink=1 (mkfs.xfs(8), xfsprogs) and mounted on a loop device
// (nosuid, nodev, autoclear); the ns backend's state dir (and so every workspace image and every
// snapshot image) lives inside it. A fork of a 1 GiB workspace is then one reflink (~5 ms here).
// The sparse file costs only what is written; its size bounds what all images together hold.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace asb::isolation::ns {

/// Makes sure an XFS file system is mounted on `mount_dir`: if it already is (a server restart),
/// nothing happens; otherwise `file` is created on first use (sparse, `bytes` long, mkfs.xfs
/// -m reflink=1, temp + rename) and mounted. Errors: kUnavailable (mkfs.xfs missing),
/// kInvalidArgument (`mount_dir` holds another file system), kBackend (mkfs or mount failed).
Status EnsureXfsPool(const std::string& file, const std::string& mount_dir, uint64_t bytes);

}  // namespace asb::isolation::ns
