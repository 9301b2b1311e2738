#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

namespace asb::cli {

std::optional<protocol::ExecRequest::Pty> TerminalSize(int fd) {
  struct winsize ws = {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return std::nullopt;
  protocol::ExecRequest::Pty pty;
  pty.cols = ws.ws_col;
  pty.rows = ws.ws_row;
  return pty;
}

Result<std::unique_ptr<RawTerminal>> RawTerminal::Enter(int fd) {
  struct termios saved;
  if (::tcgetattr(fd, &saved) != 0) return FailErrno("tcgetattr");
  struct termios raw = saved;
  ::cfmakeraw(&raw);
  if (::tcsetattr(fd, TCSADRAIN, &raw) != 0) return FailErrno("tcsetattr raw");
  return std::unique_ptr<RawTerminal>(new RawTerminal(fd, saved));
}

RawTerminal::~RawTerminal() { ::tcsetattr(fd_, TCSADRAIN, &saved_); }

}  // namespace asb::cli
