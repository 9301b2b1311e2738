// FakeBackend: an isolation::Backend for the manager's logic tests (fakes through
// interfaces, in the manner of leveldb's memenv and fault-injection env). It records every call,
// can fail Create (before or after leaving resources behind) or Destroy on demand, and lets a
// test arrange "surviving" sandboxes and leftover resources for recovery tests.
//
// A fake sandbox has no isolation. Its connection() is the real sandboxd binary run on the host
// (`sandboxd --listen-fd=N --no-pid1 --workspace=<tmpdir>/ws`) when FakeBackend was given its
// path and the file exists; otherwise connection() returns nullptr and tests needing it skip.
//
// Capabilities: adopt always; workspace images when FakeBackendOptions::workspace_images is
// set: images are real files in a temp dir (fake_workspace_image.h), and the operations keep the
// contract of backend.h (a staged image beside the workspace, a swap that renames the unpacked
// tree onto <tmpdir>/ws, where sandboxd's next file operation finds it). Pause and Resume only
// mark the sandbox (IsPaused); its sandboxd keeps running (core refuses operations on a paused
// sandbox before they reach it). No network, ports or memory snapshots: those answer
// kUnavailable.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "isolation/backend.h"

namespace asb::core::testing {

class FakeSandbox;

struct FakeBackendOptions {
  /// States BackendCapabilities::workspace_images and keeps images in a temp dir (removed with
  /// the backend). Off: the image operations answer kUnavailable, as a backend without them.
  bool workspace_images = false;
  /// Backend::name(): a second fake beside the first needs another (BackendSet keys by name).
  std::string name = "fake";
};

class FakeBackend final : public isolation::Backend {
 public:
  /// `sandboxd_path`: the sandboxd binary for connection(), "" for none.
  explicit FakeBackend(std::string sandboxd_path = "", FakeBackendOptions options = {});
  ~FakeBackend() override;

  std::string_view name() const override { return options_.name; }
  isolation::BackendCapabilities Capabilities() const override;
  Status Probe() override { return {}; }
  /// With SandboxSpec::workspace_image, the fake workspace is unpacked from it (kInvalidArgument
  /// when its size is not workspace_bytes).
  Result<std::shared_ptr<isolation::Sandbox>> Create(const isolation::SandboxSpec& spec) override;
  Result<std::shared_ptr<isolation::Sandbox>> Adopt(const std::string& id) override;
  Status Destroy(const std::string& id) override;
  Result<std::vector<std::string>> ListOwned() override;

  // Workspace images (FakeBackendOptions::workspace_images), per backend.h. Errors: kNotFound
  // for a sandbox that is not running.
  Result<std::string> WorkspaceImageDir() const override;
  Result<isolation::WorkspaceImageCopy> CopyWorkspaceImage(const std::string& id,
                                                           const std::string& dest) override;
  Result<isolation::WorkspaceImageCopy> StageWorkspace(const std::string& id,
                                                       const std::string& image) override;
  bool HasStagedWorkspace(const std::string& id) override;
  Result<bool> SwapStagedWorkspace(const std::string& id) override;
  Status DropStagedWorkspace(const std::string& id) override;

  /// Marks running sandbox `id` paused / not paused. Errors: kNotFound (not running), the
  /// FailPause error.
  Status Pause(const std::string& id) override;
  Status Resume(const std::string& id) override;

  /// Records "limits <id> <memory MiB> <cpus>" (a fake sandbox has no cgroups). Errors:
  /// kNotFound (not running).
  Status UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) override;

  // Not capable: kUnavailable.
  Status UpdateNetwork(const std::string& id, const isolation::net::NetworkPolicy& policy) override;
  Result<isolation::MemorySnapshotInfo> SnapshotMemory(const std::string& id,
                                                       const std::string& dest) override;

  // ---- test controls (thread-safe) -----------------------------------------------------------

  /// The next Create fails with `error`. With `leave_resources`, the id stays "owned" (a
  /// half-made sandbox, as after a crash inside Create) until Destroy.
  void FailNextCreate(Error error, bool leave_resources = false);
  /// While set, Destroy fails with this error (resources are kept).
  void FailDestroy(std::optional<Error> error);
  /// A sandbox that survived a server restart: running and owned (Adopt succeeds).
  void AddRunning(const std::string& id);
  /// Resources owned for `id` with no running sandbox (Adopt answers kNotFound).
  void AddLeftover(const std::string& id);
  /// The sandbox dies on its own (its processes are gone; resources remain owned).
  void Crash(const std::string& id);
  /// While set, Pause fails with this error (the sandbox stays as it was).
  void FailPause(std::optional<Error> error);
  /// Sets the paused mark directly (a crash between a freeze and its record).
  void SetPaused(const std::string& id, bool paused);
  bool IsPaused(const std::string& id) const;
  /// Sets the OOM kill counter Usage() reports for `id`.
  void SetOomKills(const std::string& id, uint64_t n);
  /// Called inside Create before it succeeds or fails (e.g. to block it in a test).
  void SetCreateHook(std::function<void(const isolation::SandboxSpec&)> hook);

  /// Every call so far as "create <id>", "adopt <id>", "destroy <id>", "list", "pause <id>",
  /// "resume <id>", and for the image operations "copy <id>", "stage <id>", "swap <id>", "drop
  /// <id>".
  std::vector<std::string> calls() const;
  /// How many calls equal `call`.
  int CountCalls(const std::string& call) const;
  bool IsRunning(const std::string& id) const;
  bool IsOwned(const std::string& id) const;
  /// The spec of the last successful or failed Create of `id`.
  std::optional<isolation::SandboxSpec> SpecOf(const std::string& id) const;

 private:
  /// The running sandbox `id` (kNotFound if none) for an image operation (kUnavailable without
  /// images); records `call` + " " + id.
  Result<std::shared_ptr<FakeSandbox>> ImageTarget(const std::string& call, const std::string& id);

  std::string sandboxd_path_;
  FakeBackendOptions options_;
  std::string image_dir_;  // with workspace_images: the temp dir of images
  mutable std::mutex mu_;
  std::vector<std::string> calls_;
  std::map<std::string, std::shared_ptr<FakeSandbox>> running_;
  std::set<std::string> owned_;
  std::map<std::string, isolation::SandboxSpec> specs_;
  std::optional<std::pair<Error, bool>> fail_create_;
  std::optional<Error> fail_destroy_;
  std::optional<Error> fail_pause_;
  std::set<std::string> paused_;
  std::function<void(const isolation::SandboxSpec&)> create_hook_;
};

/// A fake sandbox. Thread-safe.
class FakeSandbox final : public isolation::Sandbox {
 public:
  /// `workspace_bytes`: the quota, which is the size of the workspace's images.
  FakeSandbox(std::string id, std::string sandboxd_path, uint64_t workspace_bytes = 1ull << 30);
  ~FakeSandbox() override;

  const std::string& id() const override { return id_; }
  /// Starts sandboxd on first use (see the file comment); nullptr without a binary or when it
  /// could not start (the reason is in last_error()).
  std::shared_ptr<protocol::Connection> connection() override;
  Result<isolation::SandboxUsage> Usage() override;
  int host_pid() const override { return static_cast<int>(pid_); }
  /// Not capable: kUnavailable.
  Result<int> ConnectTcp(uint16_t port, int timeout_ms) override;

  void SetOomKills(uint64_t n);
  /// Marks the sandbox dead: Usage() answers kNotFound, sandboxd is stopped.
  void Kill();
  std::string last_error() const;
  /// The host directory serving as /workspace for sandboxd ("" before first use).
  std::string workspace_dir() const;

  // Workspace images (FakeBackend's operations; the caller checked the capability).
  /// Makes the workspace from `image` (before first use). Errors: kInvalidArgument (size).
  Status LoadImage(const std::string& image);
  Result<isolation::WorkspaceImageCopy> CopyImage(const std::string& dest);
  Result<isolation::WorkspaceImageCopy> Stage(const std::string& image);
  bool HasStaged() const;
  Result<bool> SwapStaged();
  Status DropStaged();

 private:
  void StopDaemonLocked();
  /// Creates dir_ and dir_/ws if they do not exist yet. Errors: FromErrno, kNotFound (dead).
  Status EnsureDirLocked();
  std::string id_;
  std::string sandboxd_path_;
  uint64_t workspace_bytes_;
  mutable std::mutex mu_;
  bool dead_ = false;
  uint64_t oom_kills_ = 0;
  pid_t pid_ = -1;
  std::string dir_;
  std::string last_error_;
  std::shared_ptr<protocol::Connection> conn_;
};

}  // namespace asb::core::testing
