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
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/unique_fd.h"
#include "core/testing/fake_workspace_image.h"

namespace asb::core::testing {

// ---- FakeBackend ----------------------------------------------------------------------------

FakeBackend::FakeBackend(std::string sandboxd_path, FakeBackendOptions options)
    : sandboxd_path_(std::move(sandboxd_path)), options_(options) {
  if (options_.workspace_images) {
    char tmpl[] = "/tmp/asb_fake_images.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) image_dir_ = tmpl;  // else WorkspaceImageDir() fails
  }
}

FakeBackend::~FakeBackend() {
  std::lock_guard l(mu_);
  for (auto& [id, sb] : running_) sb->Kill();
  if (!image_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(image_dir_, ec);
  }
}

isolation::BackendCapabilities FakeBackend::Capabilities() const {
  isolation::BackendCapabilities c;
  c.adopt = true;
  c.workspace_images = options_.workspace_images;
  c.pause = true;
  c.live_limits = true;
  return c;
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
  auto sb = std::make_shared<FakeSandbox>(spec.id, sandboxd_path_, spec.workspace_bytes);
  if (!spec.memory_snapshot.empty()) return Fail(isolation::NotCapable(name(), "memory snapshots"));
  if (!spec.workspace_image.empty()) {
    if (!options_.workspace_images) return Fail(isolation::NotCapable(name(), "workspace images"));
    if (Status st = sb->LoadImage(spec.workspace_image); !st) {
      sb->Kill();  // removes what it unpacked
      return Fail(std::move(st).error().WithContext("fake: create " + spec.id));
    }
  }
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
    paused_.erase(id);
  }
  if (victim) victim->Kill();
  return {};
}

Result<std::vector<std::string>> FakeBackend::ListOwned() {
  std::lock_guard l(mu_);
  calls_.push_back("list");
  return std::vector<std::string>(owned_.begin(), owned_.end());
}

Result<std::string> FakeBackend::WorkspaceImageDir() const {
  if (!options_.workspace_images) return Fail(isolation::NotCapable(name(), "workspace images"));
  if (image_dir_.empty()) return Fail(Error::Internal("fake: no temp dir for images"));
  return image_dir_;
}

Result<std::shared_ptr<FakeSandbox>> FakeBackend::ImageTarget(const std::string& call,
                                                              const std::string& id) {
  std::lock_guard l(mu_);
  calls_.push_back(call + " " + id);
  if (!options_.workspace_images) return Fail(isolation::NotCapable(name(), "workspace images"));
  auto it = running_.find(id);
  if (it == running_.end()) return Fail(Error::NotFound("fake: sandbox " + id + " not running"));
  return it->second;
}

Result<isolation::WorkspaceImageCopy> FakeBackend::CopyWorkspaceImage(const std::string& id,
                                                                      const std::string& dest) {
  ASB_ASSIGN_OR_RETURN(auto sb, ImageTarget("copy", id));
  return sb->CopyImage(dest);
}

Result<isolation::WorkspaceImageCopy> FakeBackend::StageWorkspace(const std::string& id,
                                                                  const std::string& image) {
  ASB_ASSIGN_OR_RETURN(auto sb, ImageTarget("stage", id));
  return sb->Stage(image);
}

bool FakeBackend::HasStagedWorkspace(const std::string& id) {
  std::lock_guard l(mu_);
  auto it = running_.find(id);
  return options_.workspace_images && it != running_.end() && it->second->HasStaged();
}

Result<bool> FakeBackend::SwapStagedWorkspace(const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto sb, ImageTarget("swap", id));
  return sb->SwapStaged();
}

Status FakeBackend::DropStagedWorkspace(const std::string& id) {
  auto sb = ImageTarget("drop", id);
  if (!sb) return sb.error().code() == ErrorCode::kNotFound ? Status{} : Fail(sb.error());
  return (*sb)->DropStaged();
}

Status FakeBackend::UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) {
  std::lock_guard l(mu_);
  if (running_.count(id) == 0) return Fail(Error::NotFound("fake: sandbox " + id + " not running"));
  char cpus_text[32];
  std::snprintf(cpus_text, sizeof cpus_text, "%g", cpus);
  calls_.push_back("limits " + id + " " + std::to_string(memory_bytes >> 20) + " " + cpus_text);
  return {};
}

Status FakeBackend::UpdateNetwork(const std::string& id,
                                  const isolation::net::NetworkPolicy& policy) {
  (void)id, (void)policy;
  return Fail(isolation::NotCapable(name(), "networking"));
}

Status FakeBackend::Pause(const std::string& id) {
  std::lock_guard l(mu_);
  calls_.push_back("pause " + id);
  if (running_.count(id) == 0) return Fail(Error::NotFound("fake: sandbox " + id + " not running"));
  if (fail_pause_) return Fail(*fail_pause_);
  paused_.insert(id);
  return {};
}

Status FakeBackend::Resume(const std::string& id) {
  std::lock_guard l(mu_);
  calls_.push_back("resume " + id);
  if (running_.count(id) == 0) return Fail(Error::NotFound("fake: sandbox " + id + " not running"));
  paused_.erase(id);
  return {};
}

void FakeBackend::FailPause(std::optional<Error> error) {
  std::lock_guard l(mu_);
  fail_pause_ = std::move(error);
}

void FakeBackend::SetPaused(const std::string& id, bool paused) {
  std::lock_guard l(mu_);
  if (paused) {
    paused_.insert(id);
  } else {
    paused_.erase(id);
  }
}

bool FakeBackend::IsPaused(const std::string& id) const {
  std::lock_guard l(mu_);
  return paused_.count(id) != 0;
}

Result<isolation::MemorySnapshotInfo> FakeBackend::SnapshotMemory(const std::string& id,
                                                                  const std::string& dest) {
  (void)id, (void)dest;
  return Fail(isolation::NotCapable(name(), "memory snapshots"));
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

FakeSandbox::FakeSandbox(std::string id, std::string sandboxd_path, uint64_t workspace_bytes)
    : id_(std::move(id)),
      sandboxd_path_(std::move(sandboxd_path)),
      workspace_bytes_(workspace_bytes) {}

Status FakeSandbox::EnsureDirLocked() {
  if (dead_) return Fail(Error::NotFound("fake: sandbox " + id_ + " is gone"));
  if (dir_.empty()) {
    char tmpl[] = "/tmp/asb_fake_sandbox.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return FailErrno("mkdtemp");
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
  }
  const std::string ws = dir_ + "/ws";
  if (::mkdir(ws.c_str(), 0777) == 0) {
    ::chmod(ws.c_str(), 0777);  // sandboxd runs file ops as uid 1000 on the host here
  } else if (errno != EEXIST) {
    return FailErrno("mkdir " + ws);
  }
  return {};
}

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
  if (Status st = EnsureDirLocked(); !st) {
    last_error_ = st.error().ToString();
    return nullptr;
  }
  const std::string ws = dir_ + "/ws";
  const std::string sock = dir_ + "/sandboxd.sock";

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

Result<int> FakeSandbox::ConnectTcp(uint16_t port, int timeout_ms) {
  (void)port, (void)timeout_ms;
  return Fail(isolation::NotCapable("fake", "ports"));
}

// Workspace images. Below dir_: ws/ (the workspace), next.img (the staged image), .next.tmp
// (staging), ws.new and ws.old (the two sides of a swap).

Status FakeSandbox::LoadImage(const std::string& image) {
  std::lock_guard l(mu_);
  ASB_ASSIGN_OR_RETURN(uint64_t size, FakeImageSize(image));
  if (size != workspace_bytes_) {
    return Fail(Error::InvalidArgument("image of " + std::to_string(size) +
                                       " bytes does not match the workspace of " +
                                       std::to_string(workspace_bytes_) + " bytes"));
  }
  if (dead_) return Fail(Error::NotFound("fake: sandbox " + id_ + " is gone"));
  if (dir_.empty()) {
    char tmpl[] = "/tmp/asb_fake_sandbox.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return FailErrno("mkdtemp");
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
  }
  return ReadFakeImage(image, dir_ + "/ws");
}

Result<isolation::WorkspaceImageCopy> FakeSandbox::CopyImage(const std::string& dest) {
  std::lock_guard l(mu_);
  ASB_TRY(EnsureDirLocked());
  ASB_ASSIGN_OR_RETURN(FakeImageFacts facts, WriteFakeImage(dir_ + "/ws", dest, workspace_bytes_));
  return isolation::WorkspaceImageCopy{"fake-copy", facts.image_bytes, facts.used_bytes};
}

Result<isolation::WorkspaceImageCopy> FakeSandbox::Stage(const std::string& image) {
  std::lock_guard l(mu_);
  ASB_TRY(EnsureDirLocked());
  ASB_ASSIGN_OR_RETURN(uint64_t size, FakeImageSize(image));
  if (size != workspace_bytes_) {
    return Fail(Error::InvalidArgument("image of " + std::to_string(size) +
                                       " bytes does not match the workspace of " +
                                       std::to_string(workspace_bytes_) + " bytes"));
  }
  const std::string tmp = dir_ + "/.next.tmp", next = dir_ + "/next.img";
  ::unlink(tmp.c_str());
  ASB_TRY(CopyFakeImage(image, tmp));
  if (::rename(tmp.c_str(), next.c_str()) != 0) {
    Error e = Error::FromErrno(errno, "rename " + tmp);
    ::unlink(tmp.c_str());
    return Fail(std::move(e));
  }
  return isolation::WorkspaceImageCopy{"fake-copy", size, 0};
}

bool FakeSandbox::HasStaged() const {
  std::lock_guard l(mu_);
  return !dead_ && !dir_.empty() && ::access((dir_ + "/next.img").c_str(), F_OK) == 0;
}

Result<bool> FakeSandbox::SwapStaged() {
  std::lock_guard l(mu_);
  if (dead_) return Fail(Error::NotFound("fake: sandbox " + id_ + " no longer runs"));
  const std::string next = dir_ + "/next.img";
  if (dir_.empty() || ::access(next.c_str(), F_OK) != 0) return false;
  const std::string ws = dir_ + "/ws", fresh = dir_ + "/ws.new", old = dir_ + "/ws.old";
  auto backend_error = [](Error e) { return std::move(e).WithCode(ErrorCode::kBackend); };
  std::error_code ec;
  std::filesystem::remove_all(fresh, ec);
  if (Status st = ReadFakeImage(next, fresh); !st) {
    std::filesystem::remove_all(fresh, ec);
    return Fail(backend_error(std::move(st).error()));
  }
  // Renames only from here: a crash between them leaves next.img, and a second run redoes it.
  if (::rename(ws.c_str(), old.c_str()) != 0 && errno != ENOENT) {
    return Fail(backend_error(Error::FromErrno(errno, "rename " + ws)));
  }
  if (::rename(fresh.c_str(), ws.c_str()) != 0) {
    Error e = backend_error(Error::FromErrno(errno, "rename " + fresh));
    (void)::rename(old.c_str(), ws.c_str());  // the old workspace stays (backend.h)
    return Fail(std::move(e));
  }
  std::filesystem::remove_all(old, ec);
  ::unlink(next.c_str());
  return true;
}

Status FakeSandbox::DropStaged() {
  std::lock_guard l(mu_);
  if (dir_.empty()) return {};
  for (const std::string& p : {dir_ + "/.next.tmp", dir_ + "/next.img"}) {
    if (::unlink(p.c_str()) != 0 && errno != ENOENT) return FailErrno("unlink " + p);
  }
  return {};
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
