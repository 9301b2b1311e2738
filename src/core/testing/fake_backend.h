// FakeBackend: an isolation::Backend for the manager's logic tests (STYLE.md: fakes through
// interfaces, in the manner of leveldb's memenv and fault-injection env). It records every call,
// can fail Create (before or after leaving resources behind) or Destroy on demand, and lets a
// test arrange "surviving" sandboxes and leftover resources for recovery tests.
//
// A fake sandbox has no isolation. Its connection() is the real sandboxd binary run on the host
// (`sandboxd --listen-fd=N --no-pid1 --workspace=<tmpdir>`) when FakeBackend was given its path
// and the file exists; otherwise connection() returns nullptr and tests needing it skip.
#pragma once

#include <sys/types.h>

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

class FakeBackend final : public isolation::Backend {
 public:
  /// `sandboxd_path`: the sandboxd binary for connection(), "" for none.
  explicit FakeBackend(std::string sandboxd_path = "");
  ~FakeBackend() override;

  std::string_view name() const override { return "fake"; }
  Status Probe() override { return {}; }
  Result<std::shared_ptr<isolation::Sandbox>> Create(const isolation::SandboxSpec& spec) override;
  Result<std::shared_ptr<isolation::Sandbox>> Adopt(const std::string& id) override;
  Status Destroy(const std::string& id) override;
  Result<std::vector<std::string>> ListOwned() override;

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
  /// Sets the OOM kill counter Usage() reports for `id`.
  void SetOomKills(const std::string& id, uint64_t n);
  /// Called inside Create before it succeeds or fails (e.g. to block it in a test).
  void SetCreateHook(std::function<void(const isolation::SandboxSpec&)> hook);

  /// Every call so far as "create <id>", "adopt <id>", "destroy <id>", "list".
  std::vector<std::string> calls() const;
  /// How many calls equal `call`.
  int CountCalls(const std::string& call) const;
  bool IsRunning(const std::string& id) const;
  bool IsOwned(const std::string& id) const;
  /// The spec of the last successful or failed Create of `id`.
  std::optional<isolation::SandboxSpec> SpecOf(const std::string& id) const;

 private:
  std::string sandboxd_path_;
  mutable std::mutex mu_;
  std::vector<std::string> calls_;
  std::map<std::string, std::shared_ptr<FakeSandbox>> running_;
  std::set<std::string> owned_;
  std::map<std::string, isolation::SandboxSpec> specs_;
  std::optional<std::pair<Error, bool>> fail_create_;
  std::optional<Error> fail_destroy_;
  std::function<void(const isolation::SandboxSpec&)> create_hook_;
};

/// A fake sandbox. Thread-safe.
class FakeSandbox final : public isolation::Sandbox {
 public:
  FakeSandbox(std::string id, std::string sandboxd_path);
  ~FakeSandbox() override;

  const std::string& id() const override { return id_; }
  /// Starts sandboxd on first use (see the file comment); nullptr without a binary or when it
  /// could not start (the reason is in last_error()).
  std::shared_ptr<protocol::Connection> connection() override;
  Result<isolation::SandboxUsage> Usage() override;
  int host_pid() const override { return static_cast<int>(pid_); }

  void SetOomKills(uint64_t n);
  /// Marks the sandbox dead: Usage() answers kNotFound, sandboxd is stopped.
  void Kill();
  std::string last_error() const;
  /// The host directory serving as /workspace for sandboxd ("" before it started).
  std::string workspace_dir() const;

 private:
  void StopDaemonLocked();
  std::string id_;
  std::string sandboxd_path_;
  mutable std::mutex mu_;
  bool dead_ = false;
  uint64_t oom_kills_ = 0;
  pid_t pid_ = -1;
  std::string dir_;
  std::string last_error_;
  std::shared_ptr<protocol::Connection> conn_;
};

}  // namespace asb::core::testing
