// Host-side file operations confined to a root directory (a template rootfs being built).
//
// A rootfs under construction may hold symlinks planted by a RUN step or an imported layer
// ("etc -> /", "x -> ../../../host"). Every path given here is resolved with
// openat2(RESOLVE_IN_ROOT) (openat2(2)): symlinks and ".." are interpreted as if the root were
// "/", so no operation can touch a file outside the tree, whatever the tree holds. The final
// component is never followed (O_NOFOLLOW / AT_SYMLINK_NOFOLLOW), as tar and docker do.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::templates {

/// Splits "a/b/c" into {"a/b", "c"}; "c" into {"", "c"}. Trailing '/' are ignored.
std::pair<std::string, std::string> SplitParent(std::string_view rel);

/// True if `rel` (relative, '/'-separated) has a ".." component, is absolute, or is empty.
bool IsUnsafeRelative(std::string_view rel);

class RootedDir {
 public:
  /// Opens `path` (a directory on the host, trusted) as the root. Errors: FromErrno.
  static Result<RootedDir> Open(const std::string& path);

  int fd() const { return root_.get(); }

  /// Opens directory `rel` below the root (O_PATH), resolving symlinks inside the root.
  /// With `create`, makes missing components with `mode`, owned by uid/gid (-1: leave).
  /// "" or "/" is the root. Errors: FromErrno (ENOTDIR when a component is a file).
  Result<UniqueFd> OpenDir(std::string_view rel, bool create, mode_t mode = 0755, uid_t uid = -1,
                           gid_t gid = -1) const;

  /// Opens `rel` for reading (following symlinks inside the root). Errors: FromErrno.
  Result<UniqueFd> OpenRead(std::string_view rel) const;

  /// Reads a whole regular file of at most `max_bytes`. Errors: FromErrno, kTooLarge.
  Result<std::string> ReadFile(std::string_view rel, size_t max_bytes) const;

 private:
  UniqueFd root_;
};

/// Removes `name` in directory `dirfd` and, for a directory, everything below it, never
/// following symlinks. Missing is success. Errors: FromErrno of the first failure.
Status RemoveAt(int dirfd, const std::string& name);

/// Removes every entry of directory `dirfd` for which `keep(name)` is false.
Status RemoveChildrenAt(int dirfd, const std::function<bool(const std::string&)>& keep);

}  // namespace asb::templates
