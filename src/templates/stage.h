// Filling and finishing a staged rootfs whose content is not trusted (Dockerfile RUN steps and
// imported images put arbitrary symlinks in it).
#pragma once

#include <string>

#include "common/result.h"

namespace asb::templates {

/// Copies installed rootfs `src` to `dst` (which must not exist) with `cp -a --reflink=auto`:
/// owners, modes, symlinks as symlinks (never followed), hard links, xattrs. Errors: kInternal
/// with cp's exit status; FromErrno of the spawn.
Status CopyRootfs(const std::string& src, const std::string& dst);

/// core::FinishRootfs (sandbox user, mount points, hostname, resolv.conf, caches removed) run
/// in a child process chroot'ed into `rootfs`, so that symlinks in the tree ("etc/hostname ->
/// /etc/shadow", "var/log -> /") resolve inside it and never reach the host's files. Errors:
/// FinishRootfs's error (code and message), or kInternal when the child died.
Status FinishUntrustedRootfs(const std::string& rootfs);

}  // namespace asb::templates
