// Resolving a Dockerfile USER or --chown ("name", "uid", "name:group", "uid:gid") against the
// rootfs's own /etc/passwd and /etc/group (passwd(5), group(5)), read through RootedDir.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "templates/rooted_dir.h"

namespace asb::templates {

struct ResolvedUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home = "/";  // from passwd; "/" when unknown
};

/// Numeric ids need no entry (gid defaults to the passwd entry's group, else to the uid's own
/// number as docker does for unknown numeric users: 0 for root). Errors: kInvalidArgument
/// "unknown user 'x'" / "unknown group 'y'", or an id above 65535 (outside the id map).
Result<ResolvedUser> ResolveUser(const RootedDir& root, std::string_view spec);

}  // namespace asb::templates
