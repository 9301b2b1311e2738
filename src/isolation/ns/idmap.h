// Idmapped workspace mounts (ADR 0009; mount_setattr(2) MOUNT_ATTR_IDMAP, kernel >= 5.12, ext4
// and xfs support them).
//
// Workspace images store canonical ids: the sandbox user is uid/gid 1000 on disk, root is 0,
// exactly as the sandbox sees them. Each sandbox mounts its image through an idmapped mount that
// maps on-disk id N to host id uid_base + N (its own range, user.h), so the same image can be
// mounted by any sandbox (a fork, a rollback to another sandbox's snapshot) without a chown of
// the tree. Host processes outside the range (host root included) cannot create files through
// such a mount (EOVERFLOW): only the sandbox writes to its workspace.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::isolation::ns {

/// A user namespace whose only purpose is to describe the map "0 <host_base> 65536" (uid and
/// gid) for MOUNT_ATTR_IDMAP: a child is cloned into a new user namespace, its maps written by
/// us (root), the namespace opened, the child ended. About 1 ms. Errors: FromErrno.
Result<UniqueFd> MakeIdmapUserns(uint32_t host_base);

/// A detached clone (open_tree(2) OPEN_TREE_CLONE) of the mount at `dir`, idmapped through
/// `userns_fd`. Attach it with AttachTree. Errors: FromErrno of open_tree/mount_setattr.
Result<UniqueFd> IdmappedTree(const std::string& dir, int userns_fd);

/// Attaches the detached mount `tree_fd` on `dir` (move_mount(2)). Errors: FromErrno.
Status AttachTree(int tree_fd, const std::string& dir);

/// Replaces the mount at `dir` by an idmapped clone of itself (the superblock is unchanged;
/// the clone keeps its flags: nosuid, nodev). Errors: FromErrno; on failure `dir` keeps the
/// plain mount.
Status IdmapMountInPlace(const std::string& dir, int userns_fd);

/// In the mount namespace of process `pid` (a running sandbox's PID 1): replaces the mount at
/// `target` (absolute, in that namespace) with the detached mount `tree_fd`. Runs in a forked
/// child (setns(2) CLONE_NEWNS refuses a multithreaded caller). The old mount is detached
/// lazily (MNT_DETACH); if attaching the new one fails, a clone of the old one taken first is put
/// back, so `target` is never left empty. Errors: kBackend naming the failing step and errno.
Status ReplaceMountInNamespace(int pid, int tree_fd, const std::string& target);

}  // namespace asb::isolation::ns
