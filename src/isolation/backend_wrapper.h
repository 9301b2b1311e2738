// BackendWrapper: a Backend that forwards every operation to another one, in the manner of
// leveldb's EnvWrapper. A test backend that injects a fault derives from it and overrides only
// the operation it breaks. It implements every pure virtual of Backend, so adding one there
// without forwarding it here fails to compile (a forgotten one cannot degrade silently).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "isolation/backend.h"

namespace asb::isolation {

class BackendWrapper : public Backend {
 public:
  /// `inner` must outlive the wrapper.
  explicit BackendWrapper(Backend& inner) : inner_(inner) {}

  /// The backend every call goes to.
  Backend& inner() const { return inner_; }

  std::string_view name() const override { return inner_.name(); }
  BackendCapabilities Capabilities() const override { return inner_.Capabilities(); }
  Status Probe() override { return inner_.Probe(); }
  Result<std::shared_ptr<Sandbox>> Create(const SandboxSpec& spec) override {
    return inner_.Create(spec);
  }
  Result<std::shared_ptr<Sandbox>> Adopt(const std::string& id) override {
    return inner_.Adopt(id);
  }
  Status Destroy(const std::string& id) override { return inner_.Destroy(id); }
  Result<std::vector<std::string>> ListOwned() override { return inner_.ListOwned(); }

  Result<std::string> WorkspaceImageDir() const override { return inner_.WorkspaceImageDir(); }
  Result<WorkspaceImageCopy> CopyWorkspaceImage(const std::string& id,
                                                const std::string& dest) override {
    return inner_.CopyWorkspaceImage(id, dest);
  }
  Result<WorkspaceImageCopy> StageWorkspace(const std::string& id,
                                            const std::string& image) override {
    return inner_.StageWorkspace(id, image);
  }
  bool HasStagedWorkspace(const std::string& id) override { return inner_.HasStagedWorkspace(id); }
  Result<bool> SwapStagedWorkspace(const std::string& id) override {
    return inner_.SwapStagedWorkspace(id);
  }
  Status DropStagedWorkspace(const std::string& id) override {
    return inner_.DropStagedWorkspace(id);
  }

  Status UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) override {
    return inner_.UpdateNetwork(id, policy);
  }

  Status UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) override {
    return inner_.UpdateLimits(id, memory_bytes, cpus);
  }
  Status Pause(const std::string& id) override { return inner_.Pause(id); }
  Status Resume(const std::string& id) override { return inner_.Resume(id); }
  Result<MemorySnapshotInfo> SnapshotMemory(const std::string& id,
                                            const std::string& dest) override {
    return inner_.SnapshotMemory(id, dest);
  }

 private:
  Backend& inner_;
};

// Fails here, not at some test's instantiation, when Backend gains an operation not forwarded.
static_assert(!std::is_abstract_v<BackendWrapper>, "BackendWrapper must forward every operation");

}  // namespace asb::isolation
