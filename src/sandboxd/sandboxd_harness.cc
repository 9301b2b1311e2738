#include "sandboxd/sandboxd_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace asb::sandboxd::testing {

namespace {

void RemoveTree(const std::string& path) {
  // The workspace belongs to uid 1000 partly; we are root in the tests.
  std::string cmd = "rm -rf '" + path + "'";
  int rc = system(cmd.c_str());
  (void)rc;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<std::unique_ptr<SandboxdProcess>> SandboxdProcess::Start(const std::string& config,
                                                                bool as_pid1) {
  std::unique_ptr<SandboxdProcess> p(new SandboxdProcess);
  p->as_pid1_ = as_pid1;
  char tmpl[] = "/tmp/sandboxd-test-XXXXXX";
  if (!mkdtemp(tmpl)) return FailErrno("mkdtemp");
  p->dir_ = tmpl;
  chmod(p->dir_.c_str(), 0755);
  p->workspace_ = p->dir_ + "/workspace";
  if (mkdir(p->workspace_.c_str(), 0755) != 0) return FailErrno("mkdir workspace");
  if (chown(p->workspace_.c_str(), 1000, 1000) != 0) return FailErrno("chown workspace");
  p->socket_path_ = p->dir_ + "/sandboxd.sock";

  UniqueFd listen_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listen_fd) return FailErrno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, p->socket_path_.c_str(), sizeof addr.sun_path - 1);
  if (bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return FailErrno("bind");
  }
  if (listen(listen_fd.get(), 16) != 0) return FailErrno("listen");

  UniqueFd cfg_read, cfg_write;
  if (!MakePipe(&cfg_read, &cfg_write)) return FailErrno("pipe");

  std::string listen_arg = "--listen-fd=" + std::to_string(listen_fd.get());
  std::string config_arg = "--config-fd=" + std::to_string(cfg_read.get());
  std::string ws_arg = "--workspace=" + p->workspace_;
  pid_t pid = fork();
  if (pid < 0) return FailErrno("fork");
  if (pid == 0) {
    // Keep the two inherited fds across exec.
    fcntl(listen_fd.get(), F_SETFD, 0);
    fcntl(cfg_read.get(), F_SETFD, 0);
    if (as_pid1) {
      const char* args[] = {"/usr/bin/unshare",
                            "--pid",
                            "--fork",
                            "--mount-proc",
                            "--uts",
                            "--kill-child",
                            SANDBOXD_PATH,
                            listen_arg.c_str(),
                            config_arg.c_str(),
                            ws_arg.c_str(),
                            nullptr};
      execv(args[0], const_cast<char**>(args));
    } else {
      const char* args[] = {SANDBOXD_PATH,  listen_arg.c_str(), config_arg.c_str(),
                            ws_arg.c_str(), "--no-pid1",        nullptr};
      execv(SANDBOXD_PATH, const_cast<char**>(args));
    }
    _exit(127);
  }
  p->pid_ = pid;
  cfg_read.Reset();
  if (!config.empty()) WriteAll(cfg_write.get(), config.data(), config.size());
  cfg_write.Reset();
  return p;
}

SandboxdProcess::~SandboxdProcess() {
  if (pid_ > 0) {
    // unshare(1) ignores SIGTERM while it waits; SIGKILL it and --kill-child takes sandboxd
    // (and with it the whole pid namespace) down.
    kill(pid_, as_pid1_ ? SIGKILL : SIGTERM);
    for (int i = 0; i < 500; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!dir_.empty()) RemoveTree(dir_);
}

pid_t SandboxdProcess::pid() const {
  if (!as_pid1_) return pid_;
  // unshare's only child, once it exists.
  for (int i = 0; i < 200; ++i) {
    std::string kids =
        ReadAll("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
    if (!kids.empty()) return static_cast<pid_t>(std::stol(kids));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

bool SandboxdProcess::Alive() {
  if (pid_ <= 0) return false;
  int status;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

Result<std::shared_ptr<protocol::Connection>> SandboxdProcess::Connect() {
  return protocol::Connection::Dial(socket_path_, 5000);
}

protocol::ExecRequest ShellRequest(const std::string& cmd) {
  protocol::ExecRequest r;
  r.command = cmd;
  r.cwd = ".";
  return r;
}

namespace {
template <typename Fn>
void ForEachStat(Fn fn) {
  DIR* d = opendir("/proc");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    long ppid, pgrp, session;
    rest >> state >> ppid >> pgrp >> session;
    fn(static_cast<pid_t>(pid), state, static_cast<pid_t>(ppid), static_cast<pid_t>(session));
  }
  closedir(d);
}
}  // namespace

int CountSession(pid_t sid) {
  int n = 0;
  ForEachStat([&](pid_t, char, pid_t, pid_t s) { n += s == sid; });
  return n;
}

int CountZombieChildren(pid_t parent) {
  int n = 0;
  ForEachStat([&](pid_t, char st, pid_t pp, pid_t) { n += (pp == parent && st == 'Z'); });
  return n;
}

int CountProcessesMatching(const std::string& needle) {
  int n = 0;
  ForEachStat([&](pid_t pid, char st, pid_t, pid_t) {
    if (st == 'Z') return;
    std::string cmd = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    for (char& c : cmd) {
      if (c == '\0') c = ' ';
    }
    if (cmd.find(needle) != std::string::npos) ++n;
  });
  return n;
}

int CountProcessesWithCommandLine(const std::string& cmdline) {
  int n = 0;
  ForEachStat([&](pid_t pid, char st, pid_t, pid_t) {
    if (st == 'Z') return;
    std::string cmd = ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    if (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
    for (char& c : cmd) {
      if (c == '\0') c = ' ';
    }
    if (cmd == cmdline) ++n;
  });
  return n;
}

bool WaitUntil(const std::function<bool()>& done, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool ok = done();
  while (!ok && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ok = done();
  }
  return ok;
}

// ---- PidsCgroup ------------------------------------------------------------------------------

namespace {
bool WriteFileStr(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  close(fd);
  return ok;
}
}  // namespace

Result<std::unique_ptr<PidsCgroup>> PidsCgroup::Create(pid_t pid, const std::string& max) {
  std::unique_ptr<PidsCgroup> cg(new PidsCgroup);
  if (access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) == 0) {
    cg->root_ = "/sys/fs/cgroup/pids";
  } else if (ReadAll("/sys/fs/cgroup/cgroup.subtree_control").find("pids") != std::string::npos) {
    cg->root_ = "/sys/fs/cgroup";
  } else {
    return Fail(Error::Unavailable("no pids cgroup controller"));
  }
  cg->path_ =
      cg->root_ + "/asb-sandboxd-test-" + std::to_string(getpid()) + "-" + std::to_string(pid);
  if (mkdir(cg->path_.c_str(), 0755) != 0) return FailErrno("mkdir " + cg->path_);
  ASB_TRY(cg->SetMax(max));
  if (!WriteFileStr(cg->path_ + "/cgroup.procs", std::to_string(pid))) {
    return FailErrno("move into " + cg->path_);
  }
  return cg;
}

Status PidsCgroup::SetMax(const std::string& max) {
  if (!WriteFileStr(path_ + "/pids.max", max)) return FailErrno("pids.max");
  return {};
}

PidsCgroup::~PidsCgroup() {
  if (path_.empty()) return;
  for (int i = 0; i < 100; ++i) {
    std::istringstream procs(ReadAll(path_ + "/cgroup.procs"));
    std::string pid;
    while (procs >> pid) WriteFileStr(root_ + "/cgroup.procs", pid);
    if (rmdir(path_.c_str()) == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---- SandboxdTest ----------------------------------------------------------------------------

void SandboxdTest::SetUp() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (setuid to 1000, setfsuid)";
  auto p = SandboxdProcess::Start(R"({"env":{"BASE_VAR":"base","OVERRIDE_ME":"old"}})");
  ASSERT_TRUE(p) << p.error().ToString();
  proc_ = std::move(*p);
  auto c = proc_->Connect();
  ASSERT_TRUE(c) << c.error().ToString();
  conn_ = *c;
}

void SandboxdTest::TearDown() {
  if (conn_) conn_->Close();
  conn_.reset();
  proc_.reset();
}

protocol::CollectedExec SandboxdTest::Run(const protocol::ExecRequest& req,
                                          std::string_view stdin_data) {
  auto r = protocol::ExecCollect(*conn_, req, stdin_data);
  EXPECT_TRUE(r) << r.error().ToString();
  return r ? *r : protocol::CollectedExec{};
}

}  // namespace asb::sandboxd::testing
