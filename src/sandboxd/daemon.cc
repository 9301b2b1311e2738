#include "sandboxd/daemon.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "sandboxd/connection.h"
#include "sandboxd/proc_scan.h"
#include "sandboxd/proc_table.h"
#include "sandboxd/spare_child.h"
#include "sandboxd/sudo_server.h"
#include "sandboxd/sudo_wire.h"

namespace asb::sandboxd {

namespace {
constexpr long kKillRescanNs = 10'000'000;  // re-scan doomed sessions every 10 ms

void SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}
}  // namespace

Daemon::Daemon(Options options, std::unique_ptr<EventLoop> loop, isolation::SeccompProgram seccomp,
               UniqueFd workspace_fd)
    : options_(std::move(options)),
      loop_(std::move(loop)),
      seccomp_(std::move(seccomp)),
      workspace_fd_(std::move(workspace_fd)),
      procs_(std::make_unique<ProcTable>(*this)) {}

Status Daemon::ReplaceEnv(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
        v.find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("env.set: invalid environment variable name or value"));
    }
  }
  std::map<std::string, std::string> next = DefaultEnv();
  for (const auto& [k, v] : env) next[k] = v;
  options_.env = std::move(next);
  return {};
}

int Daemon::workspace_fd() {
  struct stat held, now;
  if (fstat(workspace_fd_.get(), &held) == 0 && stat(options_.workspace.c_str(), &now) == 0 &&
      S_ISDIR(now.st_mode) && (held.st_dev != now.st_dev || held.st_ino != now.st_ino)) {
    UniqueFd fresh(open(options_.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (fresh) workspace_fd_ = std::move(fresh);
  }
  return workspace_fd_.get();
}

Daemon::~Daemon() {
  spare_.reset();
  sudo_.reset();
  connections_.clear();
  procs_.reset();
  for (auto& [fd, owned] : void_drains_) loop_->Remove(fd);
}

Status Daemon::Init() {
  // Nobody in the sandbox may ptrace sandboxd or read its memory through /proc.
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // On the host (tests) orphans of our commands are re-parented to us, as they are to a PID 1.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return FailErrno("PR_SET_CHILD_SUBREAPER");
  signal(SIGPIPE, SIG_IGN);  // a host that goes away must not kill us; children reset it
  // File operations switch only fsuid/fsgid; drop supplementary groups so that a file
  // writable by one of sandboxd's groups (e.g. gid 0) is not writable for the sandbox user.
  if (setgroups(0, nullptr) != 0) {
    fprintf(stderr, "sandboxd: setgroups: %s (file permission checks keep them)\n",
            strerror(errno));
  }

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return FailErrno("sigprocmask");
  signal_fd_.Reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd_) return FailErrno("signalfd");
  ASB_TRY(loop_->Add(signal_fd_.get(), EPOLLIN, [this](uint32_t) { OnSignal(); }));

  kill_timer_fd_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!kill_timer_fd_) return FailErrno("timerfd_create");
  ASB_TRY(loop_->Add(kill_timer_fd_.get(), EPOLLIN, [this](uint32_t) { OnKillTimer(); }));

  if (options_.pid1 && !options_.hostname.empty()) {
    if (sethostname(options_.hostname.data(), options_.hostname.size()) != 0) {
      fprintf(stderr, "sandboxd: sethostname: %s\n", strerror(errno));
    }
  }

  if (!options_.port.empty()) {
    port_timer_fd_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!port_timer_fd_) return FailErrno("timerfd_create");
    ASB_TRY(loop_->Add(port_timer_fd_.get(), EPOLLIN, [this](uint32_t) { OnPortTimer(); }));
    ASB_TRY(OpenPort());
  } else {
    int lfd = options_.listen_fd;
    if (fcntl(lfd, F_SETFD, FD_CLOEXEC) != 0) return FailErrno("listen fd");
    SetNonBlocking(lfd);
    ASB_TRY(loop_->Add(lfd, EPOLLIN, [this](uint32_t) { OnAccept(); }));
  }
  if (options_.sudo) {
    sudo_ = std::make_unique<SudoServer>(*this);
    // Not fatal: the sandbox still serves the host; `sudo` then says it is not offered.
    if (auto st = sudo_->Listen(kSudoSocketName); !st) {
      fprintf(stderr, "sandboxd: sudo: %s\n", st.error().ToString().c_str());
      sudo_.reset();
    }
  }
  if (options_.spare && !options_.work_cgroup_fds.empty()) {
    ChildPlan shared;
    shared.seccomp = &seccomp_;
    shared.work_cgroup_fds = options_.work_cgroup_fds.data();
    shared.work_cgroup_fd_count = static_cast<int>(options_.work_cgroup_fds.size());
    spare_ = std::make_unique<SpareChild>(shared);
    spare_->Refill();  // joins the work cgroups while the host still does its handshake
  }
  // A stale SIGCHLD from before the signalfd existed would be lost: reap once now.
  ReapChildren();
  return {};
}

Status Daemon::Run() {
  while (!stop_) ASB_TRY(loop_->RunOnce(-1));
  // Leaving (host-side runs only): take every command we started with us.
  connections_.clear();
  for (int i = 0; i < 100 && SignalDescendants(getpid(), SIGKILL) > 0; ++i) usleep(10'000);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  return {};
}

void Daemon::OnSignal() {
  signalfd_siginfo si;
  bool child = false;
  while (read(signal_fd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (si.ssi_signo == SIGCHLD) {
      child = true;
    } else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
      if (options_.pid1) {
        // The backend destroys a sandbox by killing its pid namespace; a signal from inside
        // the sandbox must not take its PID 1 down.
        fprintf(stderr, "sandboxd: ignoring signal %u from pid %u\n", si.ssi_signo, si.ssi_pid);
      } else {
        stop_ = true;
      }
    }
  }
  if (child) ReapChildren();
}

void Daemon::ReapChildren() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;  // 0: children left but none exited; -1/ECHILD: no children
    auto it = watched_.find(pid);
    if (it == watched_.end()) continue;  // an adopted orphan or a forgotten child
    auto cb = std::move(it->second);
    watched_.erase(it);
    cb(status);
  }
}

void Daemon::WatchChild(pid_t pid, std::function<void(int)> on_exit) {
  watched_[pid] = std::move(on_exit);
}

void Daemon::ForgetChild(pid_t pid) { watched_.erase(pid); }

void Daemon::DrainIntoVoid(UniqueFd fd) {
  if (!fd) return;
  int raw = fd.get();
  SetNonBlocking(raw);
  auto handler = [this, raw](uint32_t) {
    static char sink[64 * 1024];
    for (int i = 0; i < 16; ++i) {
      ssize_t n = read(raw, sink, sizeof sink);
      if (n > 0) continue;
      if (n < 0 && (errno == EINTR)) continue;
      if (n < 0 && errno == EAGAIN) return;
      loop_->Remove(raw);
      void_drains_.erase(raw);  // closes it
      return;
    }
  };
  if (!loop_->Add(raw, EPOLLIN, handler)) return;  // fd closed by ~UniqueFd
  void_drains_.emplace(raw, std::move(fd));
}

void Daemon::KillSessionUntilGone(pid_t sid) {
  if (sid <= 1) return;
  kill(-sid, SIGKILL);
  if (SignalSession(sid, SIGKILL) == 0) return;
  doomed_sessions_.insert(sid);
  ArmKillTimer();
}

void Daemon::ArmKillTimer() {
  itimerspec its{};
  its.it_value.tv_nsec = kKillRescanNs;
  its.it_interval.tv_nsec = kKillRescanNs;
  timerfd_settime(kill_timer_fd_.get(), 0, &its, nullptr);
}

void Daemon::OnKillTimer() {
  uint64_t ticks;
  while (read(kill_timer_fd_.get(), &ticks, sizeof ticks) > 0) {
  }
  for (auto it = doomed_sessions_.begin(); it != doomed_sessions_.end();) {
    kill(-*it, SIGKILL);
    if (SignalSession(*it, SIGKILL) == 0) {
      it = doomed_sessions_.erase(it);
    } else {
      ++it;
    }
  }
  if (doomed_sessions_.empty()) {
    itimerspec off{};
    timerfd_settime(kill_timer_fd_.get(), 0, &off, nullptr);
  }
}

void Daemon::OnAccept() {
  for (;;) {
    int fd = accept4(options_.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) fprintf(stderr, "sandboxd: accept: %s\n", strerror(errno));
      return;
    }
    auto conn = std::make_unique<Connection>(*this, UniqueFd(fd));
    Connection* raw = conn.get();
    if (auto st = raw->Start(); !st) {
      fprintf(stderr, "sandboxd: %s\n", st.error().ToString().c_str());
      continue;
    }
    connections_[raw] = std::move(conn);
  }
}

Status Daemon::OpenPort() {
  UniqueFd fd(open(options_.port.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return FailErrno("open " + options_.port);
  // A virtio-serial port whose host side is not connected polls as hung up (and reads as end
  // of file) until the host connects (drivers/char/virtio_console.c): a connection started
  // now would end at once. Bytes the host sends meanwhile wait in QEMU until the port opens.
  pollfd pfd{fd.get(), POLLIN, 0};
  if (poll(&pfd, 1, 0) < 0) return FailErrno("poll " + options_.port);
  if ((pfd.revents & POLLHUP) != 0) {
    ArmPortTimer();
    return {};
  }
  auto conn = std::make_unique<Connection>(*this, std::move(fd));
  Connection* raw = conn.get();
  ASB_TRY(raw->Start());
  connections_[raw] = std::move(conn);
  port_conn_ = raw;
  return {};
}

void Daemon::ArmPortTimer() {
  itimerspec its{};
  its.it_value.tv_nsec = kPortRetryMs * 1'000'000L;
  timerfd_settime(port_timer_fd_.get(), 0, &its, nullptr);
}

void Daemon::OnPortTimer() {
  uint64_t ticks;
  while (read(port_timer_fd_.get(), &ticks, sizeof ticks) > 0) {
  }
  if (port_conn_ != nullptr) return;
  if (auto st = OpenPort(); !st) {
    fprintf(stderr, "sandboxd: %s\n", st.error().ToString().c_str());
    ArmPortTimer();
  }
}

void Daemon::ConnectionClosed(Connection* conn) {
  auto it = connections_.find(conn);
  if (it == connections_.end()) return;
  std::shared_ptr<Connection> owned(std::move(it->second));
  connections_.erase(it);
  DestroyLater(*loop_, std::move(owned));
  // The host side of a microVM's port went away (its server stopped; a restarted one adopts
  // the VM and connects again): the port is opened anew once the old descriptor is closed
  // (after this batch; the port takes one opener at a time). Commands keep running.
  if (conn == port_conn_) {
    port_conn_ = nullptr;
    ArmPortTimer();
  }
}

}  // namespace asb::sandboxd
