// The build sandbox that runs a Dockerfile's RUN steps (ADR 0012, "Dockerfile builds"; ADR
// 0017): the ns backend's containment sequence (isolation/ns/contain.h), the one every sandbox's
// PID 1 goes through, with the staged rootfs as a *writable* root.
//
// Like a sandbox: new user, mount, pid, ipc, uts and cgroup namespaces; born in cgroups with
// the memory (no swap), pids and CPU limits of a sandbox (core/sandbox_resources.h); fresh
// /proc with Docker's masked and read-only paths, the same minimal /dev (null zero full random
// urandom tty, devpts, shm); pivot_root with the host's tree detached; RLIMIT_NOFILE,
// RLIMIT_NPROC and RLIMIT_CORE; no_new_privs; and the seccomp filter of every sandbox command
// (isolation/seccomp/seccomp_policy.h). Unlike a sandbox: the root stays writable and has no /sys,
// /tmp tmpfs or /workspace; the user namespace maps ids 0-65535 inside to the same ids
// outside, so files a step creates are owned on disk exactly as in a template built by
// mmdebstrap (root is 0, `sandbox` is 1000) and the template keeps Debian's ownership
// conventions; the command runs as the Dockerfile's USER with the namespace's capabilities.
// The network is the host's: build time is operator-trusted, like `docker build`'s default
// (RUN apt-get install needs it); the Dockerfile author is trusted to the same degree as
// whoever runs `agent-sandbox template build`.
//
// When the command (PID 1 of the new pid namespace) exits, the kernel kills every process it
// left behind; when the builder dies, PR_SET_PDEATHSIG kills the command. The step's cgroups
// (agent-sandbox-build/build-<pid>-<n>) are removed when it ends; those of a builder that was
// killed are removed by the next build.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"
#include "core/sandbox_resources.h"

namespace asb::templates {

/// The cgroup (below each hierarchy's root) that build steps' cgroups live under.
inline constexpr char kBuildCgroupName[] = "agent-sandbox-build";

struct BuildCommand {
  std::string rootfs;             // host path of the staged rootfs (trusted, must exist)
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in env's PATH
  std::vector<std::string> env;   // "NAME=value", exactly what the command gets
  std::string workdir = "/";      // absolute inside the rootfs; created if missing
  uid_t uid = 0;
  gid_t gid = 0;
  int stdout_fd = 1;  // the command's stdout and stderr go here (the builder's by default)
  int stderr_fd = 2;
  /// cpus, memory_mb, pids_limit and tmp_size_mb (/dev/shm) apply; workspace_mb does not.
  core::SandboxResources resources = core::DefaultResources(core::Limits::Defaults());
};

/// Runs `cmd` to completion and returns its exit status (128 + signal number when killed by
/// a signal, as sh reports it; 137 when the memory limit's OOM killer ended it). Errors:
/// kBackend "<step> <path>: <strerror>" when the sandbox could not be set up; kNotFound when
/// the program does not exist in the rootfs ("exec <argv0>: No such file or directory");
/// FromErrno of clone3/waitid or of the cgroup files. Needs root (CAP_SYS_ADMIN and CAP_SETUID
/// on the host).
Result<int> RunBuildCommand(const BuildCommand& cmd);

}  // namespace asb::templates
