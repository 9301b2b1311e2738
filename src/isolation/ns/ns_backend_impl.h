// The ns backend's class, shared by the files that implement it (ns_backend.cc: lifecycle and
// network; ns_images.cc: workspace images). Private to isolation/ns/: users include
// ns_backend.h and get a Backend from MakeNsBackend.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "isolation/backend.h"
#include "isolation/ns/cgroup.h"
#include "isolation/ns/contain.h"
#include "isolation/ns/ns_backend.h"
#include "isolation/ns/user.h"
#include "isolation/ns/workspace.h"
#include "isolation/ns/workspace_seed.h"
#include "protocol/messages.h"

namespace asb::isolation::ns {

/// Host paths of one sandbox's state (NsBackendOptions::state_dir).
struct Layout {
  std::string dir, ws, image, sock, log, state, hostname, resolv, network;
  // A rollback's staged workspace: cloned to next_tmp, renamed to next (complete and durable
  // from then on), mounted on ws_next while it is being swapped in.
  std::string next, next_tmp, ws_next;
};

/// The host paths of sandbox `id` below `state_dir`.
inline Layout LayoutFor(const std::string& state_dir, const std::string& id) {
  Layout l;
  l.dir = state_dir + "/" + id;
  l.ws = l.dir + "/ws";
  l.image = l.dir + "/workspace.img";
  l.sock = l.dir + "/sandboxd.sock";
  l.log = l.dir + "/sandboxd.log";
  l.state = l.dir + "/state.json";
  l.hostname = l.dir + "/hostname";
  l.next = l.dir + "/workspace.next.img";
  l.next_tmp = l.dir + "/.workspace.next.tmp";
  l.ws_next = l.dir + "/ws-next";
  l.resolv = l.dir + "/resolv.conf";
  l.network = l.dir + "/network.json";  // the policy, for Adopt by a later server process
  return l;
}

/// The namespaces backend (ns_backend.h). Sandboxes outlive it; per-id operations hold IdLock.
class NsBackend final : public Backend {
 public:
  NsBackend(NsBackendOptions opts, CgroupLayout layout)
      : opts_(std::move(opts)),
        layout_(std::move(layout)),
        slots_(ChooseUidRegistry(opts_.state_dir), opts_.state_dir, opts_.uid_range_base,
               opts_.max_slots),
        seeds_(opts_.state_dir + "/.seeds", protocol::kSandboxUid) {
    if (opts_.workspace_pool_size > 0) {
      pool_ = std::make_unique<WorkspacePool>(
          opts_.state_dir + "/.pool", opts_.default_workspace_bytes, opts_.workspace_pool_size,
          [this] { return seeds_.BlankFor(opts_.default_workspace_bytes); });
    }
  }
  // Sandboxes outlive the backend (Adopt); the pool does not, nor do our cgroup parents when
  // no sandbox is left in them (rmdir fails on a non-empty one, which is the point).
  ~NsBackend() override {
    pool_.reset();
    RemoveEmptyCgroupParents(layout_, opts_.cgroup_name);
  }

  std::string_view name() const override { return "ns"; }
  BackendCapabilities Capabilities() const override;
  Status Probe() override;
  Result<std::shared_ptr<Sandbox>> Create(const SandboxSpec& spec) override;
  Result<std::shared_ptr<Sandbox>> Adopt(const std::string& id) override;
  Status Destroy(const std::string& id) override;
  Result<std::vector<std::string>> ListOwned() override;
  // Workspace images (ns_images.cc).
  Result<std::string> WorkspaceImageDir() const override { return opts_.state_dir + "/.images"; }
  Result<WorkspaceImageCopy> CopyWorkspaceImage(const std::string& id,
                                                const std::string& dest) override;
  Result<WorkspaceImageCopy> StageWorkspace(const std::string& id,
                                            const std::string& image) override;
  bool HasStagedWorkspace(const std::string& id) override;
  Result<bool> SwapStagedWorkspace(const std::string& id) override;
  Status DropStagedWorkspace(const std::string& id) override;
  Status UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) override;
  Status UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) override;
  // Pause and Resume freeze and thaw the sandbox's cgroups (cgroup_freeze.h); they wait up to
  // kFreezeTimeoutMs for every task to stop. No memory snapshots (yet): kUnavailable.
  static constexpr int64_t kFreezeTimeoutMs = 5000;
  Status Pause(const std::string& id) override;
  Status Resume(const std::string& id) override;
  Result<MemorySnapshotInfo> SnapshotMemory(const std::string& id,
                                            const std::string& dest) override;

 private:
  // Pause (frozen) and Resume: the freezer of sandbox `id`'s cgroups, under its IdLock.
  Status SetFrozen(const std::string& id, bool frozen);
  // The sandbox's slot from state.json, else from the uid registry; nullopt if neither has it.
  std::optional<uint32_t> SlotOf(const std::string& id, const Layout& l);
  std::shared_ptr<std::mutex> IdLock(const std::string& id) {
    std::lock_guard lock(locks_mu_);
    auto& m = locks_[id];
    if (!m) m = std::make_shared<std::mutex>();
    return m;
  }
  Result<std::shared_ptr<Sandbox>> CreateLocked(const SandboxSpec& spec);
  Status DestroyLocked(const std::string& id);
  Status PrepareWorkspace(const SandboxSpec& spec, const Layout& l, int idmap_userns,
                          std::string* loop_device);
  /// A user namespace mapping 0..65535 onto the host ids from `uid_base` (idmap.h), for the
  /// idmapped mounts of a sandbox of that range: made once per range and kept (a userns without
  /// processes lives while an fd holds it), so a create does not fork this whole process for
  /// the helper MakeIdmapUserns needs. Returns a descriptor of the caller's own.
  Result<UniqueFd> IdmapUsernsFor(uint32_t uid_base);

  NsBackendOptions opts_;
  CgroupLayout layout_;
  UidSlots slots_;
  std::unique_ptr<WorkspacePool> pool_;
  WorkspaceSeeds seeds_;  // templates' /workspace content (workspace_seed.h)
  std::mutex locks_mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> locks_;
  std::mutex idmap_mu_;
  std::map<uint32_t, UniqueFd> idmap_userns_;  // by uid_base (IdmapUsernsFor)
  std::mutex children_mu_;
  std::map<std::string, ChildProcess> children_;  // sandboxes this process cloned (to reap)
};

}  // namespace asb::isolation::ns
