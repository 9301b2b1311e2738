// SnapshotService: workspace snapshots, rollback and fork (docs/ARCHITECTURE.md, "core/";
// ADR 0008, ADR 0009). Archives live in <data_dir>/snapshots/<id>.tar.zst
// (core/snapshot_archive.h); where the backend has workspace images, a snapshot also keeps
// <WorkspaceImageDir>/<id>.img, from which fork and rollback clone. Records go pending -> ready
// around the archive's rename (store/snapshot_store.h); RecoverSnapshots removes whatever a
// crash left half-made. Limits: ManagerConfig::snapshots.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/lifecycle.h"
#include "core/sandbox_types.h"

namespace asb::core {

/// Also the WorkspaceKeeper of files-only pauses: a kept workspace is a transient snapshot
/// (pending, invisible, not counted) that the paused sandbox's record names, so recovery keeps it.
class SnapshotService : public WorkspaceKeeper {
 public:
  /// Both must outlive the service; forks are created through `lifecycle`.
  SnapshotService(SandboxRegistry& registry, SandboxLifecycle& lifecycle)
      : reg_(registry), lifecycle_(lifecycle) {}

  /// Archives the sandbox's /workspace. Errors: kNotFound, kConflict (not running),
  /// kLimitExceeded (count limits), kTooLarge (byte limits), kBackend.
  Result<SnapshotInfo> CreateSnapshot(const std::string& owner, const std::string& sandbox_id,
                                      const std::string& name);
  /// Ready snapshots of `owner` (kAnyOwner: all), optionally of one sandbox, oldest first.
  Result<std::vector<SnapshotInfo>> ListSnapshots(const std::string& owner,
                                                  const std::optional<std::string>& sandbox_id);
  /// Errors: kNotFound (unknown, pending, another owner's, malformed id).
  Result<SnapshotInfo> GetSnapshot(const std::string& owner, const std::string& snapshot_id);
  /// Deletes record and file. Errors: kNotFound.
  Status DeleteSnapshot(const std::string& owner, const std::string& snapshot_id);
  /// Host path of the snapshot's tar.zst (for download). Errors: kNotFound.
  Result<std::string> SnapshotArchivePath(const std::string& owner, const std::string& snapshot_id);
  /// Restores the sandbox's /workspace to the snapshot exactly, after killing every process
  /// and emptying /tmp; keeps the id and sets source_snapshot_id. The archive is checked
  /// before anything is touched, and a failed import puts the previous workspace back, so a
  /// failed rollback leaves the sandbox as it was. Errors: kNotFound
  /// (sandbox or snapshot), kConflict, kTooLarge (does not fit the workspace), kBackend.
  Result<SandboxInfo> Rollback(const std::string& owner, const std::string& sandbox_id,
                               const std::string& snapshot_id);
  /// Creates a new sandbox from the snapshot's template, env and limits (with `req`'s
  /// overrides) and fills its workspace from the snapshot. On failure the new sandbox is
  /// destroyed. Errors: as Create, plus kNotFound for the snapshot.
  Result<SandboxInfo> Fork(const std::string& owner, const std::string& snapshot_id,
                           const ForkRequest& req);
  /// Forks a running sandbox `req.count` times: its workspace is captured at one instant (as a
  /// snapshot nobody sees, removed after) and each child is a new sandbox with the parent's
  /// template, limits, env, metadata, network policy and command defaults, its workspace a
  /// copy of that instant (a clone of the image where the backend has them), its TTL
  /// `req.timeout_seconds` or the parent's. The parent runs on. Children start with fresh
  /// processes: no backend here copies memory (ForkedChild::memory is false). A child that
  /// cannot be made (kLimitExceeded past max_sandboxes, a backend failure) is that child's
  /// error and leaves nothing behind; the others are made. Errors (nothing made): kNotFound,
  /// kInvalidArgument (count outside [1, max_fork_count]), kConflict (not running), those of
  /// CreateSnapshot's capture.
  Result<std::vector<ForkedChild>> ForkSandbox(const std::string& owner,
                                               const std::string& sandbox_id,
                                               const SandboxForkRequest& req);
  /// Makes a snapshot from an uploaded archive: `temp_path` must be a file inside
  /// SnapshotUploadDir(); it is checked (ScanArchive) and renamed into place, or removed.
  /// Errors: kInvalidArgument (hostile or unreadable archive), kTooLarge, kLimitExceeded.
  Result<SnapshotInfo> ImportSnapshot(const std::string& owner, const std::string& temp_path,
                                      const std::string& name, const std::string& template_name);
  /// Directory in which upload temp files are to be made (same file system as the archives).
  std::string SnapshotUploadDir() const;
  /// Deletes pending snapshot records and stray temp files (a crash mid-snapshot), archive
  /// files no record names, and restores workspaces of interrupted rollbacks. Called by
  /// Start() after Recover() (so sandboxes are adopted by then).
  Status RecoverSnapshots();
  /// Part of RecoverSnapshots: puts the workspace saved by a rollback that a crash cut short
  /// back into the sandbox (if it still runs). Errors: kBackend.
  Status RestoreInterruptedRollback(const std::string& sandbox_id, const std::string& backup);

  // ---- WorkspaceKeeper (lifecycle.h) ------------------------------------------------------------
  Result<std::string> KeepWorkspace(const std::shared_ptr<Entry>& e) override;
  std::string KeptImage(const std::string& snapshot_id) override;
  Status RestoreWorkspace(const std::shared_ptr<Entry>& e, const std::string& snapshot_id) override;
  void ReleaseWorkspace(const std::string& snapshot_id) override;

 private:
  /// Take's work for a caller that holds e's op_mu. `stream`: its activity on the sandbox is
  /// of the kind a pause does not wait for (the pause that keeps a workspace calls this).
  Result<SnapshotInfo> TakeLocked(const std::shared_ptr<Entry>& e, bool stream,
                                  const std::string& name, bool transient);
  /// CreateSnapshot; a `transient` one is not counted against the snapshot limits and stays
  /// pending (invisible to every list and lookup, removed by recovery after a crash).
  Result<SnapshotInfo> Take(const std::string& owner, const std::string& sandbox_id,
                            const std::string& name, bool transient);
  /// A new sandbox from `snap` (Fork's work). `from_snapshot`: the child records the snapshot
  /// as its origin (a fork of a running sandbox names none: its snapshot is transient).
  Result<SandboxInfo> ForkFrom(const SnapshotInfo& snap, const ForkRequest& req,
                               bool from_snapshot);
  /// Removes a snapshot's record, archive and image, whatever its state or owner.
  Status Drop(const std::string& snapshot_id);
  /// The snapshot's tar.zst, made from its image on first use when the snapshot has none yet
  /// (a short-lived sandbox exports it). Errors: kInternal (neither archive nor image), those
  /// of Create and the export.
  Result<std::string> EnsureArchive(const SnapshotInfo& snap);
  /// <WorkspaceImageDir>/<snapshot_id>.img if the backend has images and the file exists.
  std::optional<std::string> SnapshotImage(const std::string& snapshot_id) const;
  /// Part of RecoverSnapshots: finishes the image swap of a rollback a crash cut short after
  /// it staged the image (the staged image is complete: roll forward).
  Status FinishStagedRollback(const std::string& sandbox_id);

  SandboxRegistry& reg_;
  SandboxLifecycle& lifecycle_;
};

}  // namespace asb::core
