// cgroups of a sandbox, on cgroup v1 and v2, chosen at run time from /proc/self/mountinfo.
//
// Two layouts are supported (ADR 0006):
//  - v2: a cgroup2 mount whose root offers memory, pids and cpu. One directory
//    <v2>/<name>/<id> carries every limit (memory.max, memory.swap.max=0, pids.max, cpu.max)
//    and cgroup.kill / cgroup.freeze.
//  - v1 (hybrid hosts): memory, pids and cpu (plus cpuacct and freezer when mounted) each get
//    <mount>/<name>/<id>; limits are memory.limit_in_bytes (+ memory.memsw.limit_in_bytes
//    equal to it, i.e. no swap), pids.max, cpu.cfs_quota_us/cpu.cfs_period_us. When a cgroup2
//    mount also exists (even without controllers), <v2>/<name>/<id> is made as well so that
//    cgroup.kill can end every process of the sandbox in one write.
// Commands run one level deeper, in <dir>/work (v1 memory, pids and cpu): that child carries
// the sandbox's limits while <dir>, where sandboxd lives, has the same plus kDaemonPidsHeadroom
// / kDaemonMemoryHeadroom and no CPU quota (sandboxd competes with the whole work group as one
// task, so spinning commands cannot starve it, and a throttled work group does not throttle it). A
// fork bomb or memory bomb thus fills the work cgroup and never leaves sandboxd without a pid or a
// page to start the next command with (ADR 0014). sandboxd moves each command there itself, through
// cgroup.procs fds the backend opened for it (a v1 cgroup.procs write checks the opener's
// credentials, cgroup-v1.c). On v2-mode hosts there is no work child yet (no-internal-process rule:
// sandboxd would need a leaf of its own); the limits apply to the sandbox's one cgroup as before.
// Only directories below <name> are ever created or removed. Paths are a pure function of
// (layout, name, id), so Destroy works without any saved state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "isolation/backend.h"

namespace asb::isolation::ns {

struct CgroupLayout {
  bool v2_mode = false;  // true: limits live in the v2 hierarchy
  std::string v2_mount;  // cgroup2 mount point, empty if none
  std::string v1_memory, v1_pids, v1_cpu, v1_cpuacct, v1_freezer;  // empty if absent
};

/// Reads /proc/self/mountinfo and picks v2 when its root offers memory, pids and cpu, else
/// v1 when those three controllers are mounted. Errors: kUnavailable naming what is missing.
Result<CgroupLayout> DetectCgroupLayout();

/// The directories of one sandbox. Empty strings for hierarchies the host lacks.
struct CgroupPaths {
  bool v2_mode = false;
  std::string memory, pids, cpu, cpuacct, freezer;  // v1 directories (v1 mode)
  std::string v2;                                   // v2 directory (both modes, if mounted)
  std::string work_memory, work_pids, work_cpu;     // v1: <dir>/work (commands); else empty
  /// Every directory, deduplicated, in creation order.
  std::vector<std::string> All() const;
};

/// The directories of sandbox `id` under our cgroup `name`.
CgroupPaths CgroupPathsFor(const CgroupLayout& layout, const std::string& name,
                           const std::string& id);

/// Where a command of `paths` runs: the v1 work children in place of memory, pids and cpu
/// (their limits are the sandbox's, without sandboxd's headroom); v2 unchanged. For a process
/// born straight into its limits (a template build step, which has no sandboxd).
CgroupPaths CommandCgroupPaths(const CgroupPaths& paths);

/// What sandboxd's own cgroup allows beyond the commands' limits (see the top of this file).
inline constexpr uint32_t kDaemonPidsHeadroom = 32;
inline constexpr uint64_t kDaemonMemoryHeadroom = 32ull << 20;

struct CgroupLimits {
  uint64_t memory_bytes = 0;
  uint32_t pids = 0;
  double cpus = 1.0;
};

/// Creates the directories (and our parent <name> dirs) and writes the limits: `limits` on the
/// work children, plus the headroom on the sandbox's directories (v1). Errors:
/// FromErrno of the failing mkdir/write, context names the file. Leaves what it made on
/// failure; RemoveCgroups cleans up.
Status CreateCgroupsFromParent(const CgroupLayout& layout, const std::string& name,
                               const CgroupPaths& paths, const CgroupLimits& limits);

/// Changes the memory limit and CPU quota of a sandbox's existing directories to `limits`
/// (its pids stay), with the same headroom CreateCgroupsFromParent gives sandboxd. v1 keeps
/// memsw equal to the memory limit in every step. Errors: kInvalidArgument when the memory in
/// use does not fit the new limit (the kernel's EBUSY; the old limits then stay), FromErrno.
Status UpdateCgroupLimits(const CgroupLayout& layout, const CgroupPaths& paths,
                          const CgroupLimits& limits);

/// How a child is born into the sandbox's cgroups without a cgroup.procs write per hierarchy
/// (each costs an RCU grace period, ~10 ms here, for the global threadgroup lock):
///  - v1: the cloning thread moves itself into each v1 directory by writing "0" to "tasks"
///    (a single thread moving itself skips that lock, cgroup-v1.rst / cgroup_procs_write_start),
///    clones (the child inherits the thread's cgroups), then moves itself back.
///  - v2: clone3(CLONE_INTO_CGROUP) with an fd of the v2 directory (clone(2)).
class CloneIntoCgroups {
 public:
  CloneIntoCgroups() = default;
  CloneIntoCgroups(CloneIntoCgroups&&) = default;
  CloneIntoCgroups& operator=(CloneIntoCgroups&&) = default;
  /// Opens the v2 directory and records where the calling thread is now. Errors: FromErrno.
  static Result<CloneIntoCgroups> Prepare(const CgroupLayout& layout, const CgroupPaths& paths);
  /// Moves the calling thread into the v1 directories. On error the thread is back where it
  /// was. Must be followed by Leave() on the same thread.
  Status Enter();
  /// Moves the calling thread back (to the hierarchy root if its old cgroup is gone). Never
  /// leaves the thread inside a sandbox: a sandbox's kill must not reach the server.
  void Leave();
  /// fd of the v2 directory for clone_args.cgroup, or -1.
  int cgroup2_fd() const { return v2_fd_.get(); }

 private:
  std::vector<std::string> enter_;  // <sandbox dir>/tasks, per v1 hierarchy
  std::vector<std::string> leave_;  // <old cgroup>/tasks, same order
  std::vector<std::string> roots_;  // <hierarchy root>/tasks, same order (fallback)
  UniqueFd v2_fd_;
};

/// Moves process `pid` into every directory (cgroup.procs).
Status AddProcessFromParent(const CgroupPaths& paths, int pid);

/// The processes (not threads) in any of the directories, ascending, each once; missing
/// directories hold none.
std::vector<int> CgroupProcesses(const CgroupPaths& paths);

/// Kills every process in the sandbox's cgroups: cgroup.kill where the v2 directory has it,
/// else freeze, SIGKILL each member of cgroup.procs, thaw. Missing directories are fine.
Status KillCgroupProcesses(const CgroupPaths& paths);

/// Waits until every directory has no process left (up to `timeout_ms`). Errors: kTimeout.
Status WaitCgroupsEmpty(const CgroupPaths& paths, int64_t timeout_ms);

/// Removes the directories (children first), retrying briefly on EBUSY. Missing is fine.
Status RemoveCgroups(const CgroupPaths& paths);

/// True if any of the directories exists.
bool AnyCgroupExists(const CgroupPaths& paths);

/// Reads memory usage/peak, pids, cpu time, the OOM kill count (v1: memory.oom_control
/// "oom_kill" of the sandbox's and the work cgroup; v2: memory.events "oom_kill") and the forks
/// the pids limit refused (pids.events "max", summed the same way). Errors: kNotFound when the
/// cgroups are gone.
Result<SandboxUsage> ReadCgroupUsage(const CgroupPaths& paths);

/// The files that hold a sandbox's LimitHitCounts (those ReadCgroupUsage sums), opened once and
/// re-read in place: an exec reads them before and after its command, and opening ~10 control
/// files by path for a whole ReadCgroupUsage took ~0.1 ms of each exec's round trip.
class LimitCounterFiles {
 public:
  /// Opens those that exist. Errors: kNotFound when the sandbox's cgroups are gone.
  static Result<LimitCounterFiles> Open(const CgroupPaths& paths);
  /// Their values now (a control file re-read from offset 0 is generated afresh). Errors:
  /// kNotFound once the cgroups are removed (the kernel answers ENODEV).
  Result<LimitHitCounts> Read() const;

 private:
  struct File {
    UniqueFd fd;
    bool oom = false;  // an OOM-kill count (else a pids-limit one)
  };
  std::vector<File> files_;
};

/// Removes our <mount>/<name> directories where they are empty (no sandbox left). Best
/// effort: a non-empty or busy one stays.
void RemoveEmptyCgroupParents(const CgroupLayout& layout, const std::string& name);

/// Ids that have a directory under our `name` in any hierarchy of `layout`.
std::vector<std::string> ListCgroupIds(const CgroupLayout& layout, const std::string& name);

}  // namespace asb::isolation::ns
