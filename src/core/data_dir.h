// The modes of what the server keeps in its data dir (ADR 0014, round 3): the database
// (agent-sandbox.db, -wal, -shm: env values are sealed, but audit command lines, key names and
// hashes are not), the keys (e2b-token.key, secrets.key) and every other file at its top are
// the server's alone, 0600. The data dir itself stays 0711 (others may pass through it, never
// list it): sandboxes open their template's rootfs below it as an unprivileged host uid.
// templates/ stays readable for the same reason; sandboxes/ and snapshots/ are made 0700 by
// their owners (isolation/ns, snapshot_service).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace asb::core {

/// One file whose mode was tightened.
struct TightenedMode {
  std::string path;
  unsigned old_mode = 0;
  unsigned new_mode = 0;
};

/// Makes every regular file at the top of `data_dir` 0600 (owner bits kept, group and other
/// bits cleared) and `data_dir` itself no looser than 0711; symlinks are never followed, and no
/// file is opened (which would drop this process's SQLite locks on it). Returns
/// what it changed, for the caller to log. Errors: kNotFound (no such dir), kInternal (a chmod
/// failed).
Result<std::vector<TightenedMode>> TightenDataDirModes(const std::string& data_dir);

}  // namespace asb::core
