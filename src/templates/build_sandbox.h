// The build sandbox that runs a Dockerfile's RUN steps (ADR 0012, "Dockerfile builds").
//
// The command runs with the staged rootfs as a *writable* root, in new user, mount, pid, ipc
// and uts namespaces: fresh /proc, a minimal /dev (null zero full random urandom tty, devpts,
// shm), pivot_root into the rootfs with the host's tree detached. The user namespace maps ids
// 0-65535 inside to the same ids outside, so files a step creates are owned on disk exactly as
// in a template built by mmdebstrap (root is 0, `sandbox` is 1000) and the template keeps
// Debian's ownership conventions. The network is the host's: build time is operator-trusted,
// like `docker build`'s default (RUN apt-get install needs it); the Dockerfile author is
// trusted to the same degree as whoever runs `agent-sandbox template build`.
//
// When the command (PID 1 of the new pid namespace) exits, the kernel kills every process it
// left behind; when the builder dies, PR_SET_PDEATHSIG kills the command.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace asb::templates {

struct BuildCommand {
  std::string rootfs;             // host path of the staged rootfs (trusted, must exist)
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in env's PATH
  std::vector<std::string> env;   // "NAME=value", exactly what the command gets
  std::string workdir = "/";      // absolute inside the rootfs; created if missing
  uid_t uid = 0;
  gid_t gid = 0;
  int stdout_fd = 1;  // the command's stdout and stderr go here (the builder's by default)
  int stderr_fd = 2;
};

/// Runs `cmd` to completion and returns its exit status (128 + signal number when killed by
/// a signal, as sh reports it). Errors: kBackend "<step> <path>: <strerror>" when the sandbox
/// could not be set up; kNotFound when the program does not exist in the rootfs ("exec
/// <argv0>: No such file or directory"); FromErrno of clone3/wait. Needs root (CAP_SYS_ADMIN
/// and CAP_SETUID on the host).
Result<int> RunBuildCommand(const BuildCommand& cmd);

}  // namespace asb::templates
