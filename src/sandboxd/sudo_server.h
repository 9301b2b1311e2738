// sandboxd's side of a sandbox's `sudo` (sudo_wire.h says why and how): listens on the
// sandbox's abstract socket, starts each requested command as the requested user through
// LaunchCommand (the API's exec path: same credentials, seccomp filter and work cgroups) with
// the client's own stdin/stdout/stderr, forwards the client's signals to the command's process
// group, and answers how the command ended. A client that goes away takes its command's session
// with it (as a lost host connection does its commands').
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>

#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::sandboxd {

class Daemon;

class SudoServer {
 public:
  /// At most this many sudo commands (and connections not yet past their request) at once: each
  /// holds sandboxd fds. The next ones are answered "error ..." once their request is read (a
  /// connection closed with its request unread would reset the client's socket, losing the
  /// reason); past twice this many connections, they are closed at once.
  static constexpr size_t kMaxSessions = 64;

  explicit SudoServer(Daemon& daemon) : daemon_(daemon) {}
  ~SudoServer();

  /// Binds the abstract socket `name` (sudo_wire.h kSudoSocketName in a sandbox) and starts
  /// accepting. Errors: those of socket/bind/listen (EADDRINUSE: another sandboxd in this
  /// network namespace has it).
  Status Listen(const char* name);

 private:
  struct Session {
    UniqueFd conn;
    UniqueFd stdio[3];
    UniqueFd error_fd;     // the child's start report (launch.h)
    pid_t pid = -1;        // the command, once started
    bool refused = false;  // over kMaxSessions: answered once its request is in
  };

  void OnAccept();
  void OnConnReadable(int fd);
  void OnRequest(Session& s);
  void OnStartReport(int conn_fd);
  void OnCommandExit(int conn_fd, int status);
  // Sends `message` (best effort: the client may be gone) and ends the session; a command
  // still running is killed with its session.
  void Finish(int conn_fd, const std::string& message);

  Daemon& daemon_;
  UniqueFd listen_fd_;
  std::map<int, std::unique_ptr<Session>> sessions_;  // by connection fd
  size_t refused_ = 0;                                // of sessions_, those refused
};

}  // namespace asb::sandboxd
