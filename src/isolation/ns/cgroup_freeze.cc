// Freezing and thawing a sandbox's cgroups (cgroup_freeze.h).
#include "isolation/ns/cgroup_freeze.h"

#include <chrono>
#include <string>
#include <thread>

#include "isolation/ns/files.h"

namespace asb::isolation::ns {

namespace {

std::string V2Freeze(const CgroupPaths& p) { return p.v2.empty() ? "" : p.v2 + "/cgroup.freeze"; }
std::string V1Freeze(const CgroupPaths& p) {
  return p.freezer.empty() ? "" : p.freezer + "/freezer.state";
}

// "frozen 1" in cgroup.events: every task of the subtree has stopped.
bool V2Frozen(const CgroupPaths& p) {
  auto events = ReadSmallFile(p.v2 + "/cgroup.events");
  return events && events->find("frozen 1") != std::string::npos;
}

bool V1State(const CgroupPaths& p, std::string_view want) {
  auto state = ReadSmallFile(V1Freeze(p));
  return state && state->rfind(want, 0) == 0;
}

}  // namespace

bool CanFreeze(const CgroupLayout& layout) {
  return !layout.v2_mount.empty() || !layout.v1_freezer.empty();
}

Status FreezeCgroups(const CgroupPaths& paths, int64_t timeout_ms) {
  const std::string v2 = V2Freeze(paths), v1 = V1Freeze(paths);
  const bool use_v2 = !v2.empty() && PathExists(v2);
  if (!use_v2 && (v1.empty() || !PathExists(v1))) {
    if (!AnyCgroupExists(paths)) return Fail(Error::NotFound("the sandbox's cgroups are gone"));
    return Fail(Error::Unavailable("no cgroup freezer for this sandbox"));
  }
  ASB_TRY(WriteControlFile(use_v2 ? v2 : v1, use_v2 ? "1" : "FROZEN"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (auto pause = std::chrono::microseconds(200);;
       pause = std::min(pause * 2, decltype(pause)(20'000))) {
    if (use_v2 ? V2Frozen(paths) : V1State(paths, "FROZEN")) return {};
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
  }
  // Half frozen is no state to leave a sandbox in: its sandboxd may be stopped while a command
  // runs on. Thaw it again and say why.
  (void)ThawCgroups(paths);
  return Fail(Error::Timeout("the sandbox's processes did not all stop within " +
                             std::to_string(timeout_ms) +
                             " ms (one may be in an uninterruptible "
                             "wait); it was left running"));
}

Status ThawCgroups(const CgroupPaths& paths) {
  Status result;
  if (const std::string v2 = V2Freeze(paths); !v2.empty() && PathExists(v2)) {
    if (Status st = WriteControlFile(v2, "0"); !st) result = std::move(st);
  }
  if (const std::string v1 = V1Freeze(paths); !v1.empty() && PathExists(v1)) {
    if (Status st = WriteControlFile(v1, "THAWED"); !st && result) result = std::move(st);
  }
  return result;
}

bool CgroupsFrozen(const CgroupPaths& paths) {
  if (const std::string v2 = V2Freeze(paths); !v2.empty()) {
    if (auto want = ReadSmallFile(v2); want && want->rfind('1', 0) == 0) return true;
  }
  if (!V1Freeze(paths).empty()) {
    if (V1State(paths, "FROZEN") || V1State(paths, "FREEZING")) return true;
  }
  return false;
}

}  // namespace asb::isolation::ns
