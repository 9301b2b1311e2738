// User namespace of a sandbox: its host uid/gid range ("slot") and the id maps.
//
// Slot k maps uids/gids 0..65535 inside to base + k*65536 .. +65535 outside, so root inside
// is an unprivileged, otherwise unused host uid and no two sandboxes share an id. Slots are
// persisted as files <dir>/<k> holding the sandbox id, created atomically with link(2)
// (which fails with EEXIST when the slot is taken), so they survive a restart of the server
// and are released only by Destroy.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/result.h"

namespace asb::isolation::ns {

inline constexpr uint32_t kIdsPerSlot = 65536;

class UidSlots {
 public:
  /// `dir` must exist (0700). Slots are 0..max_slots-1.
  UidSlots(std::string dir, uint32_t max_slots) : dir_(std::move(dir)), max_slots_(max_slots) {}

  /// Takes a free slot for `id`. Errors: kLimitExceeded when all slots are taken, FromErrno.
  Result<uint32_t> Acquire(const std::string& id);
  /// Frees every slot held by `id` (normally one). Missing is success.
  Status ReleaseAll(const std::string& id);
  /// Slot -> id for every taken slot.
  Result<std::map<uint32_t, std::string>> List() const;
  /// The slot held by `id`, or kNotFound.
  Result<uint32_t> Find(const std::string& id) const;

 private:
  std::string dir_;
  uint32_t max_slots_;
  std::mutex mu_;
  uint32_t next_ = 0;  // where the next search starts (a hint; files are the truth)
};

/// Writes /proc/<pid>/uid_map and gid_map as "0 <host_base> 65536". Run by the (root) parent
/// while the child waits, so no setgroups "deny" is needed (user_namespaces(7)).
Status WriteIdMapsFromParent(int pid, uint32_t host_base);

/// In the child, right after the maps are written: become uid/gid 0 of the new namespace and
/// drop supplementary groups. Returns 0 or an errno; `*step` names the failing call.
int BecomeRootInChild(const char** step);

}  // namespace asb::isolation::ns
