#include "sandboxd/sudo_server.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/messages.h"
#include "sandboxd/daemon.h"
#include "sandboxd/fd_passing.h"
#include "sandboxd/launch.h"
#include "sandboxd/sudo_wire.h"

namespace asb::sandboxd {

namespace {

// Best effort: a client that is gone or not reading loses the message, never sandboxd's time.
void Send(int fd, const std::string& message) {
  (void)send(fd, message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// A signal number the client may forward: any catchable one (SIGKILL and SIGSTOP cannot reach
// the client's own handler, so they never arrive here either way).
bool ForwardableSignal(int sig) {
  return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP;
}

// What the client prints after "sudo: ": the message, and the errno's text where the message
// does not carry it already (a child's start report carries the errno apart).
std::string Describe(const Error& e) {
  std::string text = e.detail();
  if (e.sys_errno() != 0) {
    const std::string why = strerror(e.sys_errno());
    if (text.find(why) == std::string::npos) text += ": " + why;
  }
  return text;
}

}  // namespace

SudoServer::~SudoServer() {
  for (auto& [fd, s] : sessions_) {
    daemon_.loop().Remove(fd);
    if (s->error_fd) daemon_.loop().Remove(s->error_fd.get());
    if (s->pid > 0) {
      daemon_.ForgetChild(s->pid);
      daemon_.KillSessionUntilGone(s->pid);
    }
  }
  if (listen_fd_) daemon_.loop().Remove(listen_fd_.get());
}

Status SudoServer::Listen(const char* name) {
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return FailErrno("sudo: socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t len = strlen(name);
  if (len + 1 > sizeof addr.sun_path) return Fail(Error::InvalidArgument("sudo: name too long"));
  memcpy(addr.sun_path + 1, name, len);  // sun_path[0] == '\0': the abstract namespace
  const socklen_t addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    return FailErrno("sudo: bind @" + std::string(name));
  }
  if (listen(fd.get(), 16) != 0) return FailErrno("sudo: listen");
  ASB_TRY(daemon_.loop().Add(fd.get(), EPOLLIN, [this](uint32_t) { OnAccept(); }));
  listen_fd_ = std::move(fd);
  return {};
}

void SudoServer::OnAccept() {
  for (;;) {
    UniqueFd conn(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!conn) return;  // EAGAIN, or a connection that died in the backlog
    if (sessions_.size() >= 2 * kMaxSessions) continue;  // closed: nothing more is held
    const int fd = conn.get();
    if (!daemon_.loop().Add(fd, EPOLLIN, [this, fd](uint32_t) { OnConnReadable(fd); })) continue;
    auto s = std::make_unique<Session>();
    s->conn = std::move(conn);
    s->refused = sessions_.size() - refused_ >= kMaxSessions;
    refused_ += s->refused;
    sessions_.emplace(fd, std::move(s));
  }
}

void SudoServer::OnConnReadable(int fd) {
  auto it = sessions_.find(fd);
  if (it == sessions_.end()) return;
  Session& s = *it->second;
  const bool requested = s.pid > 0 || s.error_fd;
  // The request is the largest message; later ones ("signal N") are small.
  static std::vector<char> buf(kSudoRequestMax + 1);
  // Every fd that came along is owned from here on, whatever happens next.
  std::vector<UniqueFd> fds;
  bool truncated = false;
  const ssize_t n = RecvWithFds(fd, buf.data(), requested ? kSudoMessageMax : buf.size(), &fds,
                                MSG_DONTWAIT, &truncated);
  if (n < 0 && errno == EAGAIN) return;
  if (n <= 0) {  // the client went away (or broke its socket): its command goes too
    Finish(fd, "");
    return;
  }
  const std::string_view bytes(buf.data(), static_cast<size_t>(n));
  if (requested) {
    int sig = 0;
    const std::string_view prefix = "signal ";
    if (bytes.substr(0, prefix.size()) == prefix) {
      std::from_chars(bytes.data() + prefix.size(), bytes.data() + bytes.size(), sig);
    }
    // A command that has not started yet has no group to signal: the signal is dropped, as
    // one that arrives before a real sudo has forked.
    if (ForwardableSignal(sig) && s.pid > 0) kill(-s.pid, sig);
    return;
  }
  if (s.refused) {
    Finish(fd, "error too many sudo commands at once in this sandbox (at most " +
                   std::to_string(kMaxSessions) + ")");
    return;
  }
  if (truncated) {
    Finish(fd, "error the command line and environment are too long (at most " +
                   std::to_string(kSudoRequestMax) + " bytes)");
    return;
  }
  if (fds.size() != 3) {
    Finish(fd, "error a request must carry stdin, stdout and stderr");
    return;
  }
  auto request = DecodeSudoRequest(bytes);
  if (!request) {
    Finish(fd, "error " + Describe(request.error()));
    return;
  }
  for (int i = 0; i < 3; ++i) s.stdio[i] = std::move(fds[i]);

  protocol::ExecRequest req;
  req.argv = std::move(request->argv);
  req.cwd = request->cwd;
  req.user = request->as_root ? protocol::kUserRoot : protocol::kUserSandbox;
  for (const std::string& e : request->env) {
    const size_t eq = e.find('=');
    req.env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  const int stdio[3] = {s.stdio[0].get(), s.stdio[1].get(), s.stdio[2].get()};
  auto launched = LaunchCommand(daemon_, req, stdio);
  // The command holds its own copies now; ours would keep a pipe open past its end.
  for (auto& f : s.stdio) f.Reset();
  if (!launched) {
    const Error& e = launched.error();
    Finish(fd,
           "error " + std::string(e.sys_errno() == EAGAIN ? "the sandbox's process limit is reached"
                                                          : Describe(e)));
    return;
  }
  s.pid = launched->pid;
  s.error_fd = std::move(launched->error_fd);
  daemon_.WatchChild(s.pid, [this, fd](int status) { OnCommandExit(fd, status); });
  if (!daemon_.loop().Add(s.error_fd.get(), EPOLLIN, [this, fd](uint32_t) { OnStartReport(fd); })) {
    s.error_fd.Reset();  // the exit still ends the session
  }
}

void SudoServer::OnStartReport(int conn_fd) {
  auto it = sessions_.find(conn_fd);
  if (it == sessions_.end()) return;
  Session& s = *it->second;
  std::optional<Error> failure = ReadChildFailure(s.error_fd.get());
  daemon_.loop().Remove(s.error_fd.get());
  s.error_fd.Reset();
  // The child exits 125 after reporting; its exit must not answer a second time.
  if (failure) Finish(conn_fd, "error " + Describe(*failure));
}

void SudoServer::OnCommandExit(int conn_fd, int status) {
  auto it = sessions_.find(conn_fd);
  if (it == sessions_.end()) return;
  Session& s = *it->second;
  if (s.error_fd) {
    // A failure report written just before the exit is still in the pipe: read it first.
    std::optional<Error> failure = ReadChildFailure(s.error_fd.get());
    if (failure) {
      s.pid = -1;
      Finish(conn_fd, "error " + Describe(*failure));
      return;
    }
  }
  s.pid = -1;  // reaped: nothing left to kill under this number
  Finish(conn_fd, WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                      : "exit " + std::to_string(WEXITSTATUS(status)));
}

void SudoServer::Finish(int conn_fd, const std::string& message) {
  auto it = sessions_.find(conn_fd);
  if (it == sessions_.end()) return;
  std::unique_ptr<Session> s = std::move(it->second);
  sessions_.erase(it);
  refused_ -= s->refused;
  if (!message.empty()) Send(conn_fd, message);
  daemon_.loop().Remove(conn_fd);
  if (s->error_fd) daemon_.loop().Remove(s->error_fd.get());
  if (s->pid > 0) {
    daemon_.ForgetChild(s->pid);  // still reaped, and ignored
    daemon_.KillSessionUntilGone(s->pid);
  }
}

}  // namespace asb::sandboxd
