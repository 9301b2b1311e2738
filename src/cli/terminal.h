// The local terminal for `agent-sandbox run -t`: its size, and raw mode while a command runs
// on a PTY inside the sandbox (keys such as Ctrl-C then reach the sandbox's line discipline
// as bytes, exactly as with `docker run -it` or ssh).
#pragma once

#include <termios.h>

#include <memory>
#include <optional>

#include "common/result.h"
#include "protocol/messages.h"

namespace asb::cli {

/// The size of terminal `fd` (TIOCGWINSZ), or nullopt when `fd` is not a terminal or reports 0.
std::optional<protocol::ExecRequest::Pty> TerminalSize(int fd);

/// Raw mode on a terminal for the object's lifetime (cfmakeraw(3)); the previous settings are
/// restored on destruction.
class RawTerminal {
 public:
  /// Errors: FromErrno of tcgetattr/tcsetattr (ENOTTY when `fd` is not a terminal).
  static Result<std::unique_ptr<RawTerminal>> Enter(int fd);
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  RawTerminal(int fd, const struct termios& saved) : fd_(fd), saved_(saved) {}
  int fd_;
  struct termios saved_;
};

}  // namespace asb::cli
