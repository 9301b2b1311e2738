// Streams a running exec to this process's terminal or pipes: the command's stdout and stderr
// are written to our fds as each DATA frame arrives (no buffering beyond one frame), and our
// stdin can be forwarded to it.
#pragma once

#include <unistd.h>

#include "common/result.h"
#include "protocol/client.h"
#include "protocol/messages.h"

namespace asb::cli {

struct StreamIo {
  int stdout_fd = STDOUT_FILENO;
  int stderr_fd = STDERR_FILENO;
  /// >= 0: bytes read from this fd are sent as the command's stdin, then EOF (the exec must have
  /// been opened with stdin_pipe = true). -1: nothing is forwarded.
  int stdin_fd = -1;
};

/// Drives an exec channel to its terminal event and returns the command's result. Output to an
/// fd whose reader went away (EPIPE; SIGPIPE must be ignored) is discarded from then on, the
/// command keeps running. Errors: the operation's own ERROR (e.g. kNotFound for a missing cwd,
/// kCancelled), kBackend when the connection to sandboxd is lost, kBackend for an undecodable
/// RESULT.
Result<protocol::ExecResult> StreamExec(protocol::Channel& channel, const StreamIo& io);

}  // namespace asb::cli
