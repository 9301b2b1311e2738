// The containment sequence: clone the sandbox's PID 1 into new namespaces, let the parent set
// it up from outside (id maps, cgroups, OOM score) while it waits, then contain it from inside
// and exec sandboxd. nsjail's shape (subproc.cc/contain.cc): a socketpair handshake, and a
// fixed-size failure record sent back by any step that fails before exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/mount.h"
#include "isolation/ns/rlimits.h"

namespace asb::isolation::ns {

/// Everything the child needs, prepared before clone (the child only reads it).
struct ChildPlan {
  std::string hostname;
  MountPlan mounts;
  RlimitPlan rlimits;
  // Host fds the child inherits; all O_CLOEXEC in the parent.
  int sandboxd_fd = -1;  // the sandboxd binary, O_RDONLY (executed with execveat)
  int listen_fd = -1;    // bound + listening unix socket -> fd 3 in sandboxd
  int config_fd = -1;    // read end of the config pipe    -> fd 4 in sandboxd
  int log_fd = -1;       // sandboxd.log                   -> stdout and stderr
  int null_fd = -1;      // /dev/null                      -> stdin
  /// cgroup.procs of the work cgroups (cgroup.h), O_WRONLY -> fds 7.. in sandboxd; -1: none.
  int work_cgroup_fds[3] = {-1, -1, -1};
  /// argv/envp of sandboxd, NULL-terminated views into *_storage (fill with SetArgs).
  std::vector<std::string> argv_storage, envp_storage;
  std::vector<char*> argv, envp;
  void SetArgs(std::vector<std::string> args, std::vector<std::string> env);
};

/// fd numbers sandboxd finds its inputs on.
inline constexpr int kSandboxdListenFd = 3;
inline constexpr int kSandboxdConfigFd = 4;
inline constexpr int kSandboxdWorkCgroupFd0 = 7;  // 7, 8, 9

/// The child, as seen by the parent. Destroying it does nothing: the process is meant to
/// outlive the server; see ChildGuard for the failure path.
struct ChildProcess {
  pid_t pid = -1;
  UniqueFd pidfd;  // from CLONE_PIDFD: signals go to exactly this process
};

/// Clones the child with new user, pid, mount, ipc, uts and net namespaces into its cgroups, runs
/// `prepare_from_parent(pid)` while it waits, then releases it and waits up to `timeout_ms`
/// for the exec of sandboxd. On any failure the child is killed and reaped. Errors: kBackend
/// "<step> <path>: <strerror>" from the child's failure record (errno kept), or the error of
/// `prepare_from_parent`, or FromErrno of clone3.
/// The child is born in `cgroups` (see CloneIntoCgroups), so it never runs outside them.
Result<ChildProcess> StartContainedChild(const ChildPlan& plan, CloneIntoCgroups& cgroups,
                                         const std::function<Status(pid_t)>& prepare_from_parent,
                                         int64_t timeout_ms);

}  // namespace asb::isolation::ns
