// SandboxLifecycle: a sandbox's life from create to destroy (docs/ARCHITECTURE.md, "core/"): it
// issues ids, validates requests against the configured limits, enforces the quota, runs the
// state machine and writes every transition to the store before and after its side effect,
// reaps sandboxes whose TTL or idle timeout passed, and reconciles the store with the backend
// after a restart (lifecycle_recovery.cc).
//
// State machine (stored as lower-case names):
//
//   creating --backend Create ok--> running --Destroy/reaper--> stopping --> destroyed
//      |                            |    ^                        ^  ^
//      |                Pause/auto_pause  Resume                  |  |
//      |                            v    |                        |  |
//      |                            paused --Destroy/reaper-------+  |
//      +--backend Create failed--> error --Destroy/reaper------------+
//
// Pause and Resume write their state after the side effect (the freeze, the thaw): a crash in
// between leaves a record whose state the sandbox no longer has, and Recover, which adopts
// running and paused records alike, then pauses or resumes the sandbox to match its record.
//
// A files-only pause (Pause with keep_memory false) keeps the workspace as a hidden snapshot
// (WorkspaceKeeper), writes "paused" naming it, and only then destroys the runtime; Resume makes
// the runtime again with the same id from that snapshot, writes "running", and only then drops
// the snapshot. A crash anywhere leaves a record that Recover can finish: a paused record that
// names a snapshot is never adopted (a runtime still there is destroyed), and a snapshot no
// record names is removed (SnapshotService::RecoverSnapshots).
//
// Each transition is written to the store before the side effect (e.g. "stopping" before
// Backend::Destroy) and after it ("destroyed"), so that Recover() can finish whatever a crash
// interrupted. Destroyed records are kept (for audit) but are invisible: Get answers kNotFound.
//
// Tenancy: every call takes the caller's `owner` (an opaque string; api/auth.h maps API keys to
// owners). A sandbox of another owner answers kNotFound, exactly as a missing one. The owner
// kAnyOwner ("") sees and may act on every sandbox (admin, or --insecure-no-auth).
//
// Threading: all methods are thread-safe; operations on different sandboxes never wait for each
// other (sandbox_registry.h, "Locking").
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/sandbox_types.h"
#include "core/template_defaults.h"

namespace asb::isolation {
class Backend;
class Sandbox;
}  // namespace asb::isolation

namespace asb::core {

class SandboxRegistry;
class WarmPool;
struct Entry;

/// What a files-only pause needs of the snapshot service (which implements it; the manager
/// wires it in): a sandbox's workspace kept while the sandbox has no runtime, and given back.
class WorkspaceKeeper {
 public:
  virtual ~WorkspaceKeeper() = default;
  /// Ends every process of running sandbox `e` (caller holds e.op_mu) and captures its
  /// workspace as a snapshot no list shows. Returns the snapshot's id. Errors: kConflict (not
  /// running), kTooLarge (past max_snapshot_bytes), kBackend.
  virtual Result<std::string> KeepWorkspace(const std::shared_ptr<Entry>& e) = 0;
  /// The kept snapshot's workspace image to create the sandbox from, or "" when it has none
  /// (then RestoreWorkspace fills the new workspace from its archive).
  virtual std::string KeptImage(const std::string& snapshot_id) = 0;
  /// Fills the freshly made workspace of `e` (caller holds e.op_mu) from the kept snapshot
  /// unless it was made from KeptImage. Errors: kNotFound (the snapshot is gone), kBackend.
  virtual Status RestoreWorkspace(const std::shared_ptr<Entry>& e,
                                  const std::string& snapshot_id) = 0;
  /// Removes the kept snapshot (record, image and archive); a missing one is not an error.
  virtual void ReleaseWorkspace(const std::string& snapshot_id) = 0;
};

class SandboxLifecycle {
 public:
  /// `registry` must outlive the service.
  explicit SandboxLifecycle(SandboxRegistry& registry) : reg_(registry) {}
  /// Enables files-only pauses; `keeper` must outlive the service. Set once, before use.
  void SetWorkspaceKeeper(WorkspaceKeeper* keeper) { keeper_ = keeper; }
  /// Plain creates (no workspace image, no inherited defaults) take a ready sandbox of their
  /// shape from `pool` when it has one (warm_pool.h); nullptr: none. Set before serving.
  void SetWarmPool(WarmPool* pool) { pool_ = pool; }

  /// A sandbox for a warm pool: made as a create of `template_name` (network as asked, every
  /// other setting the default), holding a slot of the server's capacity, recorded in state
  /// "creating" under kPoolOwner and not in the registry, so that nobody sees it until a
  /// create claims it. Errors: as Create.
  Result<std::shared_ptr<Entry>> MakePooled(const std::string& template_name, bool network);
  /// Destroys a pooled sandbox nobody claimed (its record ends destroyed, its slot is freed).
  void DestroyPooled(Entry& e);

  /// Validates `req`, reserves a quota slot, writes a "creating" record, asks the backend to
  /// create the sandbox, and writes "running". Returns the running sandbox's info.
  /// Errors: kInvalidArgument (any field out of range, with the field and the allowed range in
  /// the message; unknown template naming the available ones; network), kLimitExceeded (quota:
  /// max_sandboxes creating+running), kBackend / others from the backend. A failed backend
  /// create leaves a record in state "error" (visible, deletable, reaped at its TTL), cleans up
  /// the backend's resources, and frees the quota slot.
  Result<SandboxInfo> Create(const std::string& owner, const CreateRequest& req);
  /// Create, with the workspace cloned from `workspace_image` (a snapshot's; "" = fresh) and
  /// the command defaults `inherited` (a fork's source's) instead of the template's when set.
  /// Errors: as Create.
  Result<SandboxInfo> CreateWith(const std::string& owner, const CreateRequest& req,
                                 const std::string& workspace_image,
                                 const std::optional<CommandDefaults>& inherited = std::nullopt);

  /// The sandbox `id`. Errors: kNotFound (unknown, destroyed, or another owner's).
  Result<SandboxInfo> Get(const std::string& owner, const std::string& id);
  /// The owner's sandboxes that are not destroyed, oldest first (kAnyOwner: everyone's).
  Result<std::vector<SandboxInfo>> List(const std::string& owner);

  /// Destroys the sandbox from any state (creating, running, error, a stuck stopping): writes
  /// "stopping", Backend::Destroy, writes "destroyed". Running execs on it end with an error.
  /// Errors: kNotFound (unknown, already destroyed, another owner's), kBackend if the backend
  /// could not remove it (the record then stays "stopping" and a later Destroy or Recover
  /// retries).
  Status Destroy(const std::string& owner, const std::string& id);

  /// What the running sandbox uses now, read from the backend without counting as activity
  /// (polling it never keeps an idle sandbox alive). Errors: kNotFound, kConflict (not
  /// running), the backend's.
  Result<SandboxUsageInfo> Usage(const std::string& owner, const std::string& id);

  /// Sets expires_at = now + seconds. Seconds below min_timeout_seconds: kInvalidArgument;
  /// above max_timeout_seconds: clamped to it. Errors: kNotFound, kConflict if the sandbox is
  /// not running.
  Result<SandboxInfo> SetTimeout(const std::string& owner, const std::string& id, int64_t seconds);

  /// Pauses running sandbox `id` (Backend::Pause; ADR 0024): every process stops where it is,
  /// keeping memory, files, connections and network. Until Resume, only Get, List, Resume and
  /// Destroy act on it (exec, files, processes, snapshots and usage answer kConflict); its TTL
  /// and idle timeout stop, and it is destroyed paused_timeout_seconds after the pause
  /// (expires_at shows when). It keeps its quota slot. Errors: kNotFound, kConflict (not
  /// running, e.g. already paused), kUnavailable (its backend cannot pause), kTimeout (a
  /// process would not stop; the sandbox was left running), kBackend.
  ///
  /// With `keep_memory` false (E2B's `pause({keepMemory: false})`) it is a files-only pause:
  /// every process ends, the workspace is kept (as a hidden snapshot), and the runtime is
  /// destroyed, so the sandbox holds disk only and gives back its quota slot; /tmp, processes
  /// and memory are gone. Resume makes it again on the same id with the same spec. Works on
  /// every backend, paused or not capable. Errors: as above, plus those of a snapshot
  /// (kTooLarge past max_snapshot_bytes).
  Result<SandboxInfo> Pause(const std::string& owner, const std::string& id,
                            bool keep_memory = true);
  /// Resumes paused sandbox `id` when it was made with auto_resume (a request that needs it
  /// running arrived; E2B's autoResume), with its last TTL; nothing for any other sandbox.
  /// Concurrent callers resume it once (the others find it running). Errors: those of Resume
  /// but kConflict, and kNotFound only when the sandbox is unknown to `owner`.
  Status WakeIfAutoResume(const std::string& owner, const std::string& id);
  /// Lets paused sandbox `id` continue where it stopped. Its TTL starts again from now:
  /// `timeout_seconds` when given (checked and clamped as SetTimeout does), else the TTL it last
  /// had. After a files-only pause it is made again (same id, spec, env and files; fresh
  /// processes and /tmp), which takes a quota slot. With `keep_memory` false (E2B's connect
  /// `onResume: 'reboot'`) a frozen sandbox is thawed and every process ended: it starts
  /// afresh from its files, as one paused files-only does. Errors: kNotFound, kConflict (not
  /// paused), kInvalidArgument, kLimitExceeded (files-only: no quota slot free), kBackend.
  Result<SandboxInfo> Resume(const std::string& owner, const std::string& id,
                             std::optional<int64_t> timeout_seconds = std::nullopt,
                             bool keep_memory = true);

  /// Reconciles the store with the backend. Records in running state are
  /// adopted (Backend::Adopt) keeping their expires_at; those whose sandbox is gone (kNotFound)
  /// become destroyed; those that still fail to adopt after about a second of retries for
  /// another reason are kept in state error (visible, deletable) and retried by the reaper.
  /// Records in creating/stopping are destroyed (interrupted transitions). Every id in
  /// Backend::ListOwned() that no live record names is destroyed via the backend. Errors: only
  /// store failures; backend failures for single sandboxes are logged and retried.
  Status Recover();
  /// One reaper pass: destroys every sandbox whose expires_at passed or whose idle timeout
  /// passed with no operation in progress (pauses it instead when it was made with auto_pause),
  /// destroys paused ones whose paused_timeout_seconds passed, and retries stuck "stopping"
  /// ones. Returns how many were destroyed.
  int ReapOnce();

  /// The default isolation backend's short name ("ns"): a create that names none gets it.
  std::string_view BackendName() const;
  /// Whether the host can run the default backend now (Backend::Probe). Errors: kUnavailable
  /// with the reason.
  Status ProbeBackend();

  /// Every backend the server knows, default first, probed now; one it cannot run is listed
  /// with available false and the reason.
  std::vector<BackendInfo> Backends();

  /// Counts for metrics: sandboxes per state (live ones only).
  std::map<SandboxState, int64_t> CountByState();
  /// Counts for metrics since this service was made: sandboxes the reaper destroyed (TTL,
  /// idle timeout, stuck stop), and what Recover() did with the records it found.
  struct MaintenanceCounts {
    int64_t reaped = 0;
    int64_t recovered_adopted = 0;
    int64_t recovered_dropped = 0;
    int64_t orphans_destroyed = 0;
    int64_t auto_paused = 0;
  };
  MaintenanceCounts Counts() const;

 private:
  /// One retry of an adoption Recover could not complete; caller holds e.op_mu. Returns true
  /// if the sandbox was dropped (destroyed) because it is gone.
  bool RetryAdopt(Entry& e);
  /// Destroy's transition for a caller that holds e.op_mu; `why` is logged. Errors: as Destroy.
  Status DestroyLocked(Entry& e, std::string_view why);
  /// CreateWith's work; `pooled`: MakePooled's (no owner, not registered, left "creating").
  Result<std::shared_ptr<Entry>> CreateEntry(const std::string& owner, const CreateRequest& req,
                                             const std::string& workspace_image,
                                             const std::optional<CommandDefaults>& inherited,
                                             bool pooled);
  /// Gives pooled sandbox `e` the create's `info` (owner, TTL, metadata, lifecycle), records
  /// it running and registers it; its environment, and its memory and CPU limits where they
  /// differ (`backend` has live_limits then), are set first. Errors: the store's, sandboxd's
  /// env.set, the backend's UpdateLimits (then `e` is destroyed).
  Result<SandboxInfo> ClaimPooled(const std::shared_ptr<Entry>& e, SandboxInfo info,
                                  isolation::Backend& backend);
  /// After adopting e's sandbox: pauses or thaws it to match its record (a paused one that
  /// cannot be paused again becomes running). Caller holds e.op_mu.
  void MatchPauseToRecord(Entry& e);
  /// Pause's transition for a caller that holds e.op_mu (lifecycle_pause.cc).
  Result<SandboxInfo> PauseLocked(const std::shared_ptr<Entry>& e, std::string_view why,
                                  bool keep_memory);
  /// The files-only pause and its resume (lifecycle_pause.cc); caller holds e.op_mu.
  Result<SandboxInfo> PauseFilesOnlyLocked(const std::shared_ptr<Entry>& e, std::string_view why);
  Result<SandboxInfo> ResumeFilesOnlyLocked(const std::shared_ptr<Entry>& e, int64_t seconds);
  /// Makes e's runtime again from its record (same id and spec), its workspace cloned from
  /// `workspace_image` ("" = fresh). Errors: the template's and the backend's.
  Result<std::shared_ptr<isolation::Sandbox>> RecreateRuntime(const SandboxInfo& info,
                                                              const std::string& workspace_image);

  SandboxRegistry& reg_;
  WorkspaceKeeper* keeper_ = nullptr;
  WarmPool* pool_ = nullptr;
  std::atomic<int64_t> reaped_total_{0};
  std::atomic<int64_t> adopted_total_{0};
  std::atomic<int64_t> dropped_total_{0};
  std::atomic<int64_t> orphans_total_{0};
  std::atomic<int64_t> auto_paused_total_{0};
};

}  // namespace asb::core
