#include "core/testing/fake_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/unique_fd.h"

namespace asb::core::testing {

// ---- FakeBackend ----------------------------------------------------------------------------

FakeBackend::FakeBackend(std::string sandboxd_path) : sandboxd_path_(std::move(sandboxd_path)) {}

FakeBackend::~FakeBackend() {
  std::lock_guard l(mu_);
  for (auto& [id, sb] : running_) sb->Kill();
}

Result<std::shared_ptr<isolation::Sandbox>> FakeBackend::Create(
    const isolation::SandboxSpec& spec) {
  std::function<void(const isolation::SandboxSpec&)> hook;
  {
    std::lock_guard l(mu_);
    calls_.push_back("create " + spec.id);
    specs_[spec.id] = spec;
    hook = create_hook_;
  }
  if (hook) hook(spec);
  std::lock_guard l(mu_);
  if (fail_create_) {
    auto [err, leave] = std::move(*fail_create_);
    fail_create_.reset();
    if (leave) owned_.insert(spec.id);
    return Fail(std::move(err));
  }
  if (running_.count(spec.id) != 0) {
    return Fail(Error::Conflict("fake: sandbox " + spec.id + " exists"));
  }
  auto sb = std::make_shared<FakeSandbox>(spec.id, sandboxd_path_);
  running_[spec.id] = sb;
  owned_.insert(spec.id);
  return std::shared_ptr<isolation::Sandbox>(sb);
}

Result<std::shared_ptr<isolation::Sandbox>> FakeBackend::Adopt(const std::string& id) {
  std::lock_guard l(mu_);
  calls_.push_back("adopt " + id);
  auto it = running_.find(id);
  if (it == running_.end()) return Fail(Error::NotFound("fake: sandbox " + id + " not running"));
  return std::shared_ptr<isolation::Sandbox>(it->second);
}

Status FakeBackend::Destroy(const std::string& id) {
  std::shared_ptr<FakeSandbox> victim;
  {
    std::lock_guard l(mu_);
    calls_.push_back("destroy " + id);
    if (fail_destroy_) return Fail(*fail_destroy_);
    auto it = running_.find(id);
    if (it != running_.end()) {
      victim = it->second;
      running_.erase(it);
    }
    owned_.erase(id);
  }
  if (victim) victim->Kill();
  return {};
}

Result<std::vector<std::string>> FakeBackend::ListOwned() {
  std::lock_guard l(mu_);
  calls_.push_back("list");
  return std::vector<std::string>(owned_.begin(), owned_.end());
}

void FakeBackend::FailNextCreate(Error error, bool leave_resources) {
  std::lock_guard l(mu_);
  fail_create_.emplace(std::move(error), leave_resources);
}

void FakeBackend::FailDestroy(std::optional<Error> error) {
  std::lock_guard l(mu_);
  fail_destroy_ = std::move(error);
}

void FakeBackend::AddRunning(const std::string& id) {
  std::lock_guard l(mu_);
  running_[id] = std::make_shared<FakeSandbox>(id, sandboxd_path_);
  owned_.insert(id);
}

void FakeBackend::AddLeftover(const std::string& id) {
  std::lock_guard l(mu_);
  owned_.insert(id);
}

void FakeBackend::Crash(const std::string& id) {
  std::shared_ptr<FakeSandbox> victim;
  {
    std::lock_guard l(mu_);
    auto it = running_.find(id);
    if (it == running_.end()) return;
    victim = it->second;
    running_.erase(it);
  }
  victim->Kill();
}

void FakeBackend::SetOomKills(const std::string& id, uint64_t n) {
  std::lock_guard l(mu_);
  if (auto it = running_.find(id); it != running_.end()) it->second->SetOomKills(n);
}

void FakeBackend::SetCreateHook(std::function<void(const isolation::SandboxSpec&)> hook) {
  std::lock_guard l(mu_);
  create_hook_ = std::move(hook);
}

std::vector<std::string> FakeBackend::calls() const {
  std::lock_guard l(mu_);
  return calls_;
}

int FakeBackend::CountCalls(const std::string& call) const {
  std::lock_guard l(mu_);
  return static_cast<int>(std::count(calls_.begin(), calls_.end(), call));
}

bool FakeBackend::IsRunning(const std::string& id) const {
  std::lock_guard l(mu_);
  return running_.count(id) != 0;
}

bool FakeBackend::IsOwned(const std::string& id) const {
  std::lock_guard l(mu_);
  return owned_.count(id) != 0;
}

std::optional<isolation::SandboxSpec> FakeBackend::SpecOf(const std::string& id) const {
  std::lock_guard l(mu_);
  auto it = specs_.find(id);
  if (it == specs_.end()) return std::nullopt;
  return it->second;
}

// ---- FakeSandbox ----------------------------------------------------------------------------

FakeSandbox::FakeSandbox(std::string id, std::string sandboxd_path)
    : id_(std::move(id)), sandboxd_path_(std::move(sandboxd_path)) {}

FakeSandbox::~FakeSandbox() {
  std::lock_guard l(mu_);
  StopDaemonLocked();
}

std::shared_ptr<protocol::Connection> FakeSandbox::connection() {
  std::lock_guard l(mu_);
  if (dead_) return nullptr;
  if (conn_) return conn_;
  if (sandboxd_path_.empty() || ::access(sandboxd_path_.c_str(), X_OK) != 0) {
    last_error_ = "no sandboxd binary at '" + sandboxd_path_ + "'";
    return nullptr;
  }
  char tmpl[] = "/tmp/asb_fake_sandbox.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    last_error_ = std::string("mkdtemp: ") + std::strerror(errno);
    return nullptr;
  }
  dir_ = tmpl;
  const std::string ws = dir_ + "/ws";
  const std::string sock = dir_ + "/sandboxd.sock";
  ::mkdir(ws.c_str(), 0777);
  ::chmod(ws.c_str(), 0777);  // sandboxd runs file ops as uid 1000 on the host here
  ::chmod(dir_.c_str(), 0755);

  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM, 0));  // inheritable on purpose
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener.get(), 16) != 0) {
    last_error_ = std::string("listen on ") + sock + ": " + std::strerror(errno);
    return nullptr;
  }
  // Arguments are built before fork: nothing is allocated in the child.
  std::string fd_arg = "--listen-fd=" + std::to_string(listener.get());
  std::string ws_arg = "--workspace=" + ws;
  const char* argv[] = {sandboxd_path_.c_str(), fd_arg.c_str(), "--no-pid1", ws_arg.c_str(),
                        nullptr};
  pid_t pid = ::fork();
  if (pid < 0) {
    last_error_ = std::string("fork: ") + std::strerror(errno);
    return nullptr;
  }
  if (pid == 0) {
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  pid_ = pid;
  listener.Reset();
  auto conn = protocol::Connection::Dial(sock, 5000);
  if (!conn) {
    last_error_ = conn.error().ToString();
    StopDaemonLocked();
    return nullptr;
  }
  conn_ = *conn;
  return conn_;
}

Result<isolation::SandboxUsage> FakeSandbox::Usage() {
  std::lock_guard l(mu_);
  if (dead_) return Fail(Error::NotFound("fake: sandbox " + id_ + " is gone"));
  isolation::SandboxUsage u;
  u.oom_kills = oom_kills_;
  return u;
}

void FakeSandbox::SetOomKills(uint64_t n) {
  std::lock_guard l(mu_);
  oom_kills_ = n;
}

void FakeSandbox::Kill() {
  std::lock_guard l(mu_);
  dead_ = true;
  StopDaemonLocked();
}

std::string FakeSandbox::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

std::string FakeSandbox::workspace_dir() const {
  std::lock_guard l(mu_);
  return dir_.empty() ? "" : dir_ + "/ws";
}

void FakeSandbox::StopDaemonLocked() {
  if (conn_) {
    conn_->Close();
    conn_.reset();
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace asb::core::testing
