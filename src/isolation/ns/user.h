// User namespace of a sandbox: its host uid/gid range ("slot") and the id maps.
//
// Slot k maps uids/gids 0..65535 inside to base + k*65536 .. +65535 outside, so root inside
// is an unprivileged, otherwise unused host uid and no two sandboxes share an id.
//
// Ranges are recorded machine-wide, one file per taken range in a registry directory
// (/run/agent-sandbox/uid-ranges): named by the range's first host uid, holding the owning
// sandbox's state directory ("<state_dir>/<id>"). Acquire takes an flock on the registry and
// refuses any range that overlaps one already recorded, so two servers (or test runs) with
// different state dirs or bases can never hand out the same host uids. The records survive
// restarts of the server and are released only by Destroy; a record whose state directory no
// longer exists (a reboot cleared it, a test deleted it) is stale and may be taken over.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/result.h"

namespace asb::isolation::ns {

inline constexpr uint32_t kIdsPerSlot = 65536;

/// The machine-wide registry of host uid ranges.
inline constexpr char kUidRegistryDir[] = "/run/agent-sandbox/uid-ranges";

/// The registry directory to use: kUidRegistryDir, created if missing, or, where /run is not
/// writable, <state_dir>/.uids (then ranges are unique only among this state dir's sandboxes).
std::string ChooseUidRegistry(const std::string& state_dir);

class UidSlots {
 public:
  /// `registry` is the machine-wide directory (created if missing); `state_dir` identifies
  /// this backend's records; slots are 0..max_slots-1 from `base`.
  UidSlots(std::string registry, std::string state_dir, uint32_t base, uint32_t max_slots)
      : registry_(std::move(registry)),
        state_dir_(std::move(state_dir)),
        base_(base),
        max_slots_(max_slots) {}

  /// Takes a free slot for `id`. Errors: kLimitExceeded when every range overlaps a taken
  /// one, FromErrno.
  Result<uint32_t> Acquire(const std::string& id);
  /// Frees every slot held by `id` of this state dir. Missing is success.
  Status ReleaseAll(const std::string& id);
  /// Slot -> id for every slot taken by this state dir.
  Result<std::map<uint32_t, std::string>> List() const;
  /// The slot held by `id`, or kNotFound.
  Result<uint32_t> Find(const std::string& id) const;

 private:
  /// All records: first uid -> owner ("<state_dir>/<id>").
  Result<std::map<uint64_t, std::string>> ReadAll() const;

  std::string registry_;
  std::string state_dir_;
  uint32_t base_;
  uint32_t max_slots_;
  std::mutex mu_;
};

/// Writes /proc/<pid>/uid_map and gid_map as "0 <host_base> 65536". Run by the (root) parent
/// while the child waits, so no setgroups "deny" is needed (user_namespaces(7)).
Status WriteIdMapsFromParent(int pid, uint32_t host_base);

/// In the child, right after the maps are written: become uid/gid 0 of the new namespace and
/// drop supplementary groups. Returns 0 or an errno; `*step` names the failing call.
int BecomeRootInChild(const char** step);

}  // namespace asb::isolation::ns
