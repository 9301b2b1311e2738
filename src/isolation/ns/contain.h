// The containment sequence, the one column of steps every contained process of this backend
// goes through: a sandbox's PID 1 (sandboxd) and a template build's RUN step (templates/
// build_sandbox.h) alike. Clone into new namespaces, born in the cgroups; let the parent set
// the child up from outside (id maps, cgroups, OOM score) while it waits; then contain it from
// inside and exec. nsjail's shape (subproc.cc/contain.cc): a socketpair handshake, and a
// fixed-size failure record sent back by any step that fails before exec.
//
// The steps, in order (ContainInChild in contain.cc; README.md "Create, in order"):
//   default signal dispositions and an empty mask (the server's handlers must not run here),
//   [die with the parent], wait for the parent's release -> cgroup namespace -> host binds
//   (mount.h phase 1) -> root of the new user namespace -> hostname, [lo up] -> /proc /dev
//   [/sys /tmp], pivot_root, host tree detached, [/ read-only] (phase 2) -> cwd, [uid/gid] ->
//   only the planned fds -> rlimits -> no_new_privs -> [seccomp] -> exec.
// Bracketed steps are chosen by the plan; the order never changes.
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
  /// A network namespace of its own with only loopback up (sandboxes); false: the host's
  /// (template builds, ADR 0012: RUN steps fetch packages).
  bool own_network = true;
  /// PR_SET_PDEATHSIG SIGKILL: the child dies with the thread that cloned it (a build step
  /// dies with its builder; a sandbox outlives the server, so false there).
  bool die_with_parent = false;
  /// setsid(): a session of its own, so that a signal to the server's process group (a
  /// terminal's Ctrl-C) does not reach it. For a helper that handles SIGINT (QEMU); sandboxd,
  /// as PID 1 of its namespace, ignores signals it has no handler for.
  bool new_session = false;
  MountPlan mounts;
  std::string workdir = "/";  // absolute, inside the new root; entered after pivot_root
  /// Credentials inside the user namespace after pivot_root (setgroups(0), setresgid,
  /// setresuid); false: stays root of the namespace (sandboxd drops per command itself).
  bool set_ids = false;
  uid_t uid = 0;
  gid_t gid = 0;
  RlimitPlan rlimits;
  /// Installs the seccomp filter, after no_new_privs; returns 0 or an errno. Must not
  /// allocate. Empty: none here (sandboxd installs its filter in every command it starts).
  std::function<int()> install_seccomp;
  // Host fds the child inherits; all O_CLOEXEC in the parent; -1 = none.
  int stdin_fd = -1;   // -> 0
  int stdout_fd = -1;  // -> 1
  int stderr_fd = -1;  // -> 2
  int listen_fd = -1;  // bound + listening unix socket -> fd 3 (sandboxd)
  int config_fd = -1;  // read end of the config pipe    -> fd 4 (sandboxd)
  /// The program, O_RDONLY, executed with execveat (sandboxd: not inside the template). -1:
  /// execve of `exec_paths` in order (a build step's argv[0] looked up in its PATH).
  int exec_fd = -1;
  std::vector<std::string> exec_paths;
  /// `tasks` of the work cgroups (cgroup.h), O_WRONLY -> fds 7.. in sandboxd; -1: none.
  int work_cgroup_fds[3] = {-1, -1, -1};
  /// argv/envp of the program, NULL-terminated views into *_storage (fill with SetArgs).
  std::vector<std::string> argv_storage, envp_storage;
  std::vector<char*> argv, envp;
  void SetArgs(std::vector<std::string> args, std::vector<std::string> env);
};

/// fd numbers sandboxd finds its inputs on.
inline constexpr int kSandboxdListenFd = 3;
inline constexpr int kSandboxdConfigFd = 4;
inline constexpr int kSandboxdWorkCgroupFd0 = 7;  // 7, 8, 9

/// The child, as seen by the parent. Destroying it does nothing: a sandbox is meant to
/// outlive the server; see WaitChildExit for a child that is waited for.
struct ChildProcess {
  pid_t pid = -1;
  UniqueFd pidfd;  // from CLONE_PIDFD: signals go to exactly this process
};

/// Clones the child with new user, pid, mount, ipc, uts (and, with plan.own_network, net)
/// namespaces into its cgroups, runs `prepare_from_parent(pid)` while it waits, then releases
/// it and waits up to `timeout_ms` for its exec. On any failure the child is killed and reaped.
/// Errors: kBackend "<step> <path>: <strerror>" from the child's failure record (errno kept;
/// a failed exec is the step "exec" or "execveat" with argv[0] as path), or the error of
/// `prepare_from_parent`, kTimeout, or FromErrno of clone3.
/// The child is born in `cgroups` (see CloneIntoCgroups), so it never runs outside them.
Result<ChildProcess> StartContainedChild(const ChildPlan& plan, CloneIntoCgroups& cgroups,
                                         const std::function<Status(pid_t)>& prepare_from_parent,
                                         int64_t timeout_ms);

/// Waits for a started child to exit and returns its status as sh reports it: the exit code,
/// or 128 + the signal number that killed it. Errors: FromErrno of waitid.
Result<int> WaitChildExit(const ChildProcess& child);

}  // namespace asb::isolation::ns
