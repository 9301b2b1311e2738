// Path resolution and file-system identity for file operations (messages.h FileScope).
//
// Every path is resolved with openat2(2) from an O_PATH fd of the workspace with
// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so neither ".." nor a symlink (absolute or
// relative) can lead outside it; the kernel refuses such a walk with EXDEV, reported as
// invalid_request "path outside /workspace". Absolute paths must start with the workspace path
// and are made relative to it. With beneath_workspace=false paths resolve from "/" (still
// without magic links). Operations that act on a last component (stat without following,
// remove, rename, mkdir) resolve the parent that way and then use the *at() call on the name,
// which never follows a final symlink.
//
// FsIdentity switches setfsuid/setfsgid to the scope's user for its lifetime: created files
// belong to that user and permission checks are its own (capabilities(7): a non-zero fsuid
// drops CAP_DAC_OVERRIDE, CAP_FOWNER, ... from the effective set until it returns to 0).
#pragma once

#include <sys/stat.h>

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"
#include "protocol/messages.h"

namespace asb::sandboxd {

/// What file operations need from the daemon.
struct FsContext {
  int workspace_fd = -1;                 // O_PATH fd of the workspace directory
  std::string workspace = "/workspace";  // its absolute path
};

class FsIdentity {
 public:
  explicit FsIdentity(const protocol::FileScope& scope);
  ~FsIdentity();
  FsIdentity(const FsIdentity&) = delete;
  FsIdentity& operator=(const FsIdentity&) = delete;
  /// False for an unknown user name (the constructor then changed nothing).
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

/// A path resolved lexically: where to start and what to walk.
struct FsPath {
  int base_fd = -1;  // not owned: the workspace fd, or root_fd below
  UniqueFd root_fd;  // owned "/" O_PATH fd when the scope is not beneath the workspace
  bool beneath = true;
  std::string rel;         // relative to base_fd, "." for the base itself; no "." or "" parts
  std::string display;     // absolute path inside the sandbox, for FileStat.path and messages
  std::string name;        // last component ("" when rel is ".")
  std::string parent_rel;  // rel of the parent ("." if none)
};

/// Normalizes `path` for `scope`. Errors: kInvalidArgument for an empty path, a NUL byte, an
/// absolute path outside the workspace, or an unknown scope user.
Result<FsPath> ResolvePath(const FsContext& ctx, std::string_view path,
                           const protocol::FileScope& scope);

/// openat2(base_fd, rel, flags|O_CLOEXEC, mode) with the scope's RESOLVE_ flags. Errors: from
/// errno with `display` in the message; EXDEV becomes kInvalidArgument "path outside ...".
Result<UniqueFd> OpenResolved(const FsContext& ctx, const FsPath& p, const std::string& rel,
                              int flags, mode_t mode = 0);
/// Opens the parent directory of `p` (O_PATH | O_DIRECTORY). Errors: kInvalidArgument when `p`
/// is the base itself or ends in "..".
Result<UniqueFd> OpenParent(const FsContext& ctx, const FsPath& p);

/// Builds a FileStat from `st` (and the link target for symlinks, read with readlinkat).
protocol::FileStat MakeFileStat(const struct stat& st, std::string display, std::string name,
                                int dirfd, const char* at_name);

/// stat of `name` in `dirfd` ("" = dirfd itself), without following a final symlink.
Result<protocol::FileStat> StatAt(int dirfd, const std::string& name, const std::string& display);

/// The file metadata of entry `name` in `dirfd` ("" = dirfd itself): its "user.e2b.<key>"
/// extended attributes, by key (E2B's envd >= 0.6.2 keeps a file's metadata the same way). A
/// symlink, a file system without user xattrs, or an entry the caller may not read has none.
std::map<std::string, std::string> ReadMetadata(int dirfd, const std::string& name);
/// Sets each of `metadata` as "user.e2b.<key>" on the open file `fd`. Errors: kUnavailable (the
/// file system keeps no user xattrs), kTooLarge (more than it holds), others FromErrno.
Status WriteMetadata(int fd, const std::map<std::string, std::string>& metadata,
                     const std::string& display);

/// "path outside <workspace>" as a kInvalidArgument error.
Error OutsideError(const FsContext& ctx);

}  // namespace asb::sandboxd
