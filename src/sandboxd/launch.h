// Starting a command: what exec and proc.start share. Validates the request (argv/command,
// user, environment, cwd), makes the pipes or the PTY, and fork()s a child that runs
// RunExecChild (exec_child.h). The caller then watches the child (Daemon::WatchChild, before
// returning to the event loop) and waits for the start report on `error_fd`: EOF means the
// program was exec'd, a ChildFailure (ReadChildFailure) means it never ran.
#pragma once

#include <sys/types.h>

#include <optional>

#include "common/result.h"
#include "common/unique_fd.h"
#include "protocol/messages.h"

namespace asb::sandboxd {

class Daemon;

struct LaunchedCommand {
  pid_t pid = -1;
  UniqueFd error_fd;     // read end of the CLOEXEC start-report pipe
  UniqueFd stdout_read;  // with a PTY: a dup of the master (the merged terminal output)
  UniqueFd stderr_read;  // not set with a PTY
  UniqueFd stdin_write;  // set with stdin_pipe or a PTY (then a dup of the master)
  UniqueFd pty_master;   // for TIOCSWINSZ
};

/// Uses req's argv/command, env, cwd, user, stdin_pipe and pty (caps and timeouts are the
/// caller's). With `inherited_stdio` (three fds: stdin, stdout, stderr, kept by the caller)
/// the command gets those instead of new pipes (req's stdin_pipe and pty are then ignored and
/// only error_fd is set in the answer): `sudo` hands its own over (sudo_server.h). Errors:
/// kInvalidArgument (argv/command, user, env, NUL bytes), the errno of a failed pipe/openpt,
/// kLimitExceeded-class errno of fork (EAGAIN: the pids limit).
Result<LaunchedCommand> LaunchCommand(Daemon& daemon, const protocol::ExecRequest& req,
                                      const int* inherited_stdio = nullptr);

/// Reads the start report from `error_fd` once it is readable: nullopt when the program was
/// exec'd (EOF), else the child's error (e.g. kNotFound for a missing cwd).
std::optional<Error> ReadChildFailure(int error_fd);

}  // namespace asb::sandboxd
