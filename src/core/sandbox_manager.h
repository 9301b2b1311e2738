// SandboxManager: the one place that decides what happens to sandboxes (ARCHITECTURE.md,
// "Layers": core/). It issues ids, validates requests against the configured limits, enforces
// the quota, runs the state machine and writes every transition to the store before and after
// its side effect, reaps sandboxes whose TTL or idle timeout passed, reconciles the store with
// the backend after a restart, and forwards exec and file operations to the sandbox's sandboxd.
//
// It knows nothing of HTTP. Every error it returns carries an ErrorCode the API maps to the
// wire codes of ARCHITECTURE.md ("API conventions"); messages are safe to show to the caller
// (they never contain env values).
//
// State machine (stored as lower-case names):
//
//   creating --backend Create ok--> running --Destroy/reaper--> stopping --> destroyed
//      |                                                          ^
//      +--backend Create failed--> error --Destroy/reaper---------+
//
// Each transition is written to the store before the side effect (e.g. "stopping" before
// Backend::Destroy) and after it ("destroyed"), so that Recover() can finish whatever a crash
// interrupted. Destroyed records are kept (for audit) but are invisible: Get answers kNotFound.
//
// Tenancy: every call takes the caller's `owner` (an opaque string; the auth issue maps API
// keys to owners). A sandbox of another owner answers kNotFound, exactly as a missing one.
// The owner kAnyOwner ("") sees and may act on every sandbox (admin, or --insecure-no-auth).
//
// Threading: all methods are thread-safe. Operations on different sandboxes never wait for each
// other (per-sandbox locks; the manager-wide lock is held only for map lookups). An exec or a
// file transfer holds no lock while it runs, so Destroy proceeds at once and cancels it: the
// sandbox's connection dies and the exec ends with a kBackend error / error event.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "core/config.h"
#include "core/template_defaults.h"
#include "core/templates.h"
#include "isolation/backend.h"
#include "protocol/client.h"
#include "protocol/messages.h"
#include "protocol/proc_messages.h"

namespace asb::store {
class Store;
}

namespace asb::core {

/// The owner that sees every sandbox.
inline constexpr char kAnyOwner[] = "";

enum class SandboxState { kCreating, kRunning, kStopping, kDestroyed, kError };

/// "creating", "running", "stopping", "destroyed", "error".
std::string_view SandboxStateName(SandboxState s);
/// Parses a name from SandboxStateName; nullopt for anything else.
std::optional<SandboxState> ParseSandboxState(std::string_view name);

/// A create request as the API decoded it. Absent optionals take the configured defaults, or
/// the template's default resources (cpus, memory_mb, workspace_mb from its manifest, brought
/// within the limits) when it has them; the template's env lies under `env`. Integers are signed so
/// that negative input reaches validation (and is rejected there).
struct CreateRequest {
  std::string template_name{};                    // "" = config.default_template
  std::optional<double> cpus{};                   // cores, (0, max_cpus]
  std::optional<int64_t> memory_mb{};             // [min_memory_mb, max_memory_mb]
  std::optional<int64_t> pids_limit{};            // [min_pids_limit, max_pids_limit]
  std::optional<int64_t> workspace_mb{};          // [min_workspace_mb, max_workspace_mb]
  std::optional<int64_t> timeout_seconds{};       // [min_timeout_seconds, max_timeout_seconds]
  std::optional<int64_t> idle_timeout_seconds{};  // [0, max_timeout_seconds]; 0 = none
  /// Base environment of every command. Keys non-empty, without '=' or NUL; values without NUL.
  std::map<std::string, std::string> env{};
  /// Outbound network (issue 10); kInvalidArgument when the server has networking disabled.
  bool network = false;
  /// The egress policy with network; absent = config.default_network_policy.
  std::optional<isolation::net::NetworkPolicy> network_policy{};
};

/// What the API shows about a sandbox. Times are Unix epoch milliseconds.
struct SandboxInfo {
  std::string id{};  // "sb_" + 16 hex
  std::string owner{};
  std::string template_name{};
  SandboxState state = SandboxState::kCreating;
  std::string error_message{};  // why it is in state error; "" otherwise
  double cpus = 0;
  int64_t memory_mb = 0;
  int64_t pids_limit = 0;
  int64_t workspace_mb = 0;
  int64_t tmp_size_mb = 0;
  bool network = false;
  isolation::net::NetworkPolicy network_policy{};  // meaningful with network
  bool read_only_rootfs = true;
  std::map<std::string, std::string> env{};
  /// Cwd and user of every exec, process and PTY that names none: its template's WORKDIR and
  /// USER (core/template_defaults.h), recorded at create; forks keep the source's.
  std::string default_workdir = "/workspace";  // absolute
  std::string default_user = "sandbox";        // "sandbox" or "root"
  int64_t created_at_ms = 0;
  int64_t updated_at_ms = 0;
  int64_t expires_at_ms = 0;
  int64_t timeout_seconds = 0;       // the TTL last set (create or SetTimeout)
  int64_t idle_timeout_seconds = 0;  // 0 = none
  int64_t last_activity_at_ms = 0;
  std::optional<std::string> source_snapshot_id{};
  std::string backend{};  // Backend::name(), e.g. "ns"
};

/// An exec request as the API decoded it.
struct ExecOptions {
  /// Exactly one of argv (non-empty) / command (run by /bin/sh -c). Errors: kInvalidArgument.
  std::vector<std::string> argv{};
  std::optional<std::string> command{};
  /// Layered over the sandbox's env. Same key/value rules as CreateRequest::env.
  std::map<std::string, std::string> env{};
  /// "" = the sandbox's default_workdir (its template's WORKDIR, else /workspace); relative =
  /// under /workspace; absolute anywhere ("/tmp").
  std::string workdir{};
  /// "" = the sandbox's default_user (its template's USER, else "sandbox"); "sandbox" (uid
  /// 1000), or "root" (root of the sandbox's user namespace).
  std::string user{};
  /// Seconds, > 0; absent = default_exec_timeout_seconds; above the max it is clamped.
  std::optional<double> timeout_seconds{};
  /// Cap on kept bytes of each stream separately (stdout and stderr each keep up to this).
  /// Exec: absent or above the limit = max_exec_output_bytes. StartExec (streamed, flow
  /// controlled): absent = no cap, else exactly this. 0 is kInvalidArgument.
  std::optional<uint64_t> max_output_bytes{};
  /// Bytes written to the command's stdin, then EOF. Absent: stdin is at EOF at once.
  std::optional<std::string> stdin_data{};
  /// Exec (run to completion) only: set when the caller went away; the command is then
  /// cancelled (its session killed) and Exec returns kCancelled.
  std::shared_ptr<const std::atomic<bool>> abandoned{};
};

/// A finished exec: ExecResult (with oom_killed filled in) and the kept output.
using ExecOutcome = protocol::CollectedExec;

/// A started streaming exec. The caller drains `channel` (kData stdout/stderr, kEof, then one
/// terminal kResult with ExecResult JSON, or kError), and when the terminal event came calls
/// Finish() to decode the result and fill in oom_killed. To stop the command early (client went
/// away) call channel->Cancel(). The handle keeps the sandbox counted as active (not idle)
/// until it is destroyed; it must not outlive the manager.
struct ExecStream {
  std::shared_ptr<protocol::Channel> channel;
  /// Decodes the RESULT payload, sets oom_killed from the sandbox's OOM counter, and touches
  /// last_activity. Errors: kBackend for a malformed payload.
  std::function<Result<protocol::ExecResult>(std::string_view result_json)> finish;
  /// Opaque: holds the sandbox and the activity mark alive.
  std::shared_ptr<void> keepalive;

  Result<protocol::ExecResult> Finish(std::string_view result_json) const {
    return finish(result_json);
  }
};

/// A started streaming file read: `stat` of the file (type "file", size <= max_file_bytes),
/// then the caller drains `channel`: kData stdout chunks, kEof, a terminal kResult (or kError).
struct FileReadStream {
  protocol::FileStat stat;
  std::shared_ptr<protocol::Channel> channel;
  std::shared_ptr<void> keepalive;
};

/// A started streaming file write: the caller Write()s the bytes to `channel` (at most
/// max_file_bytes in total; sandboxd answers kError payload_too_large beyond), CloseWrite()s,
/// then waits for the terminal kResult (FileStat JSON) or kError. If the caller gives up, it
/// Cancel()s and the partial file is discarded (the write is atomic: temp file + rename).
struct FileWriteStream {
  std::shared_ptr<protocol::Channel> channel;
  std::shared_ptr<void> keepalive;
};

/// A workspace snapshot as the API shows it (issue 4). Times are Unix epoch milliseconds.
struct SnapshotInfo {
  std::string id{};  // "snap_" + 16 hex
  std::string owner{};
  std::string sandbox_id{};  // the sandbox it was taken from; "" for an uploaded archive
  std::string name{};
  std::string template_name{};
  int64_t size_bytes = 0;     // bytes of the stored tar.zst
  int64_t content_bytes = 0;  // sum of regular file sizes in it
  int64_t created_at_ms = 0;
};

/// Overrides for a fork; absent fields are inherited from the snapshot's sandbox.
struct ForkRequest {
  std::optional<double> cpus{};
  std::optional<int64_t> memory_mb{};
  std::optional<bool> network{};
  std::optional<int64_t> timeout_seconds{};
};

/// A background process request as the API decoded it (issue 8). Command, env, workdir and
/// user follow ExecOptions' rules; there is no timeout and no output cap.
struct ProcessOptions {
  std::vector<std::string> argv{};
  std::optional<std::string> command{};
  std::map<std::string, std::string> env{};
  std::string workdir{};
  std::string user{};
  std::string tag{};                    // at most 256 bytes
  bool stdin = false;                   // give it a stdin pipe (implied by pty)
  bool pty = false;                     // run on a pseudo-terminal of cols x rows
  std::optional<int64_t> cols{};        // [1, kMaxTerminalSize], default 80
  std::optional<int64_t> rows{};        // [1, kMaxTerminalSize], default 24
  std::optional<int64_t> ring_bytes{};  // replay ring [1, protocol::kProcRingMaxBytes]
};

/// Largest terminal width or height accepted (columns or rows).
inline constexpr int64_t kMaxTerminalSize = 10000;

/// An attachment to a background process's output (SandboxManager::AttachProcess): the caller
/// drains `channel` (kInfo ProcInfo first; kData stdout/stderr; kInfo {"skipped":N}; kEof; a
/// terminal kResult ProcInfo when the process exited, or kError) and Cancel()s it to detach.
/// `keepalive` marks the sandbox active while held.
struct ProcessAttach {
  std::shared_ptr<protocol::Channel> channel;
  std::shared_ptr<void> keepalive;
};

/// Parses a signal name ("SIGTERM", "TERM", case-insensitive) or number ("15") into its
/// number (signal(7)). Errors: kInvalidArgument naming the accepted names.
Result<int> ParseSignalName(std::string_view name);

class SandboxManager {
 public:
  /// `store`, `backend`, `clock` and `templates` must outlive the manager. Call Start() before
  /// serving requests. `config` should have passed Validate().
  SandboxManager(ManagerConfig config, store::Store& store, isolation::Backend& backend,
                 Clock& clock, const TemplateCatalog& templates);
  /// Stops the reaper. Running sandboxes are left running (a later Start() adopts them).
  ~SandboxManager();
  SandboxManager(const SandboxManager&) = delete;
  SandboxManager& operator=(const SandboxManager&) = delete;

  /// Recover()s, then starts the reaper thread (every reap_interval_seconds).
  Status Start();
  /// Stops the reaper thread and waits for it. Idempotent. Running sandboxes keep running.
  void Stop();

  // ---- lifecycle ---------------------------------------------------------------------------

  /// Validates `req`, reserves a quota slot, writes a "creating" record, asks the backend to
  /// create the sandbox, and writes "running". Returns the running sandbox's info.
  /// Errors: kInvalidArgument (any field out of range, with the field and the allowed range in
  /// the message; unknown template naming the available ones; network), kLimitExceeded (quota:
  /// max_sandboxes creating+running), kBackend / others from the backend. A failed backend
  /// create leaves a record in state "error" (visible, deletable, reaped at its TTL), cleans up
  /// the backend's resources, and frees the quota slot.
  Result<SandboxInfo> Create(const std::string& owner, const CreateRequest& req);

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

  /// Sets expires_at = now + seconds. Seconds below min_timeout_seconds: kInvalidArgument;
  /// above max_timeout_seconds: clamped to it. Errors: kNotFound, kConflict if the sandbox is
  /// not running.
  Result<SandboxInfo> SetTimeout(const std::string& owner, const std::string& id, int64_t seconds);

  // ---- network (core/manager_network.cc; issue 10) -------------------------------------------

  /// The sandbox's egress policy. Errors: kNotFound, kInvalidArgument (created without
  /// network).
  Result<isolation::net::NetworkPolicy> GetNetwork(const std::string& owner, const std::string& id);
  /// Validates and replaces the policy at once (Backend::UpdateNetwork), then records it.
  /// Errors: kNotFound, kConflict (not running), kInvalidArgument (policy; no network),
  /// kBackend.
  Result<isolation::net::NetworkPolicy> SetNetwork(const std::string& owner, const std::string& id,
                                                   const isolation::net::NetworkPolicy& policy);

  /// A TCP connection to 127.0.0.1:`port` inside the sandbox (exposed ports; works without
  /// network). `fd` is owned by the caller; `keepalive` marks the sandbox active until
  /// released. Errors: kInvalidArgument (port not in 1..65535), kNotFound, kConflict (not
  /// running), kUnavailable (nothing listens), kTimeout.
  struct PortConnection {
    int fd = -1;
    std::shared_ptr<void> keepalive;
  };
  Result<PortConnection> ConnectPort(const std::string& owner, const std::string& id, int64_t port);

  // ---- exec ---------------------------------------------------------------------------------

  /// Runs a command to completion and returns its result and kept output. Touches
  /// last_activity. Errors: kNotFound, kConflict (sandbox not running), kInvalidArgument
  /// (options), kBackend (sandboxd or the connection failed, including when the sandbox is
  /// destroyed meanwhile). A command that times out is not an error: timed_out is set.
  Result<ExecOutcome> Exec(const std::string& owner, const std::string& id,
                           const ExecOptions& opts);

  /// Starts a command and returns its channel for streaming. Errors found before the command
  /// starts (kNotFound, kConflict, kInvalidArgument, kBackend) are returned here, so the API can
  /// answer them as ordinary JSON errors.
  Result<ExecStream> StartExec(const std::string& owner, const std::string& id,
                               const ExecOptions& opts);

  // ---- files (paths as in core/paths.h; all touch last_activity) ---------------------------

  /// Reads a whole file. Errors: kInvalidArgument (path rules; a directory), kNotFound,
  /// kTooLarge (larger than max_file_bytes).
  Result<std::string> ReadFile(const std::string& owner, const std::string& id,
                               const std::string& path);
  /// Opens a file for streamed reading (see FileReadStream). Errors as ReadFile.
  Result<FileReadStream> OpenFileRead(const std::string& owner, const std::string& id,
                                      const std::string& path);

  /// Writes a whole file atomically, creating parent directories. `mode` defaults to 0644 and
  /// must be <= 0777. Errors: kInvalidArgument (path, mode), kTooLarge (data over
  /// max_file_bytes), kNotFound, others from sandboxd. Returns the new file's stat.
  Result<protocol::FileStat> WriteFile(const std::string& owner, const std::string& id,
                                       const std::string& path, std::string_view data,
                                       std::optional<uint32_t> mode = std::nullopt);
  /// Opens a file for streamed writing (see FileWriteStream). `size_hint` (e.g. the request's
  /// Content-Length) over max_file_bytes is kTooLarge at once. Other errors as WriteFile.
  Result<FileWriteStream> OpenFileWrite(const std::string& owner, const std::string& id,
                                        const std::string& path,
                                        std::optional<uint32_t> mode = std::nullopt,
                                        std::optional<uint64_t> size_hint = std::nullopt);

  /// Lists a directory (entries sorted by name; sandboxd includes dotfiles and symlinks).
  /// kTooLarge over protocol::kMaxListingBytes, kLimitExceeded over 100,000 entries.
  Result<std::vector<protocol::FileStat>> ListFiles(const std::string& owner, const std::string& id,
                                                    const std::string& path, bool recursive);
  Result<protocol::FileStat> StatFile(const std::string& owner, const std::string& id,
                                      const std::string& path);
  /// Creates a directory (and its parents). `mode` defaults to 0755, must be <= 0777.
  Result<protocol::FileStat> MakeDir(const std::string& owner, const std::string& id,
                                     const std::string& path,
                                     std::optional<uint32_t> mode = std::nullopt);
  /// Removes a file, or a directory (recursive: with its contents). Removing /workspace itself
  /// is kInvalidArgument.
  Status RemoveFile(const std::string& owner, const std::string& id, const std::string& path,
                    bool recursive);
  /// Moves/renames `from` to `to` (both under /workspace). Returns the destination's stat.
  Result<protocol::FileStat> MoveFile(const std::string& owner, const std::string& id,
                                      const std::string& from, const std::string& to,
                                      bool overwrite);

  // ---- background processes (core/manager_procs.cc; issue 8) -------------------------------
  // They live in the sandbox's sandboxd (protocol "proc.*"), outlive the request that started
  // them and end with the sandbox. Errors of all: kNotFound (sandbox, or no such pid),
  // kConflict (sandbox not running; process exited / without stdin / without PTY),
  // kInvalidArgument, kLimitExceeded (256 running, a full 1 MiB stdin queue), kBackend.

  /// Starts a process and returns once its program runs (pid set).
  Result<protocol::ProcInfo> StartProcess(const std::string& owner, const std::string& id,
                                          const ProcessOptions& opts);
  /// Running and recently exited (the 64 most recent) processes, in start order.
  Result<std::vector<protocol::ProcInfo>> ListProcesses(const std::string& owner,
                                                        const std::string& id);
  /// Attaches to the output from now on, replaying up to `replay_bytes` of the recent output
  /// first; `stdin` lets the caller Write() the process's stdin on the channel (terminals).
  Result<ProcessAttach> AttachProcess(const std::string& owner, const std::string& id, int pid,
                                      uint64_t replay_bytes, bool stdin);
  /// Writes to its stdin; returns the bytes accepted.
  Result<uint64_t> WriteProcessStdin(const std::string& owner, const std::string& id, int pid,
                                     std::string_view data);
  Status CloseProcessStdin(const std::string& owner, const std::string& id, int pid);
  /// Sends `signal` (a name or number, ParseSignalName) to the process group.
  Status SignalProcess(const std::string& owner, const std::string& id, int pid,
                       std::string_view signal);
  /// cols and rows in [1, kMaxTerminalSize].
  Status ResizeProcess(const std::string& owner, const std::string& id, int pid, int64_t cols,
                       int64_t rows);
  /// Kills its whole tree; returns the final info once nothing of it is left.
  Result<protocol::ProcInfo> KillProcess(const std::string& owner, const std::string& id, int pid);

  // ---- snapshots (core/manager_snapshots.cc; issue 4) ---------------------------------------
  // Archives live in <data_dir>/snapshots/<id>.tar.zst (core/snapshot_archive.h); where the
  // backend has workspace images, a snapshot also keeps <WorkspaceImageDir>/<id>.img, from
  // which fork and rollback clone (docs/adr/0009). Limits: ManagerConfig::snapshots.

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
  /// failed rollback leaves the sandbox as it was (ACCEPTANCE.md S5). Errors: kNotFound
  /// (sandbox or snapshot), kConflict, kTooLarge (does not fit the workspace), kBackend.
  Result<SandboxInfo> Rollback(const std::string& owner, const std::string& sandbox_id,
                               const std::string& snapshot_id);
  /// Creates a new sandbox from the snapshot's template, env and limits (with `req`'s
  /// overrides) and fills its workspace from the snapshot. On failure the new sandbox is
  /// destroyed. Errors: as Create, plus kNotFound for the snapshot.
  Result<SandboxInfo> Fork(const std::string& owner, const std::string& snapshot_id,
                           const ForkRequest& req);
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
  /// Streams a tar of a directory of the sandbox (path rules as files) into `sink` chunks.
  /// Errors: kNotFound, kInvalidArgument (path), kBackend.
  Status ExportDirectory(const std::string& owner, const std::string& id, const std::string& path,
                         const std::function<Status(std::string_view)>& sink);
  /// Extracts a plain tar read from `source` (returns "" at the end) into a directory of the
  /// sandbox (created if missing). Hostile members are rejected by sandboxd.
  Result<protocol::TarResult> ImportDirectory(const std::string& owner, const std::string& id,
                                              const std::string& path,
                                              const std::function<Result<std::string>()>& source);

  // ---- maintenance --------------------------------------------------------------------------

  /// Reconciles the store with the backend (ACCEPTANCE.md L6); Start() calls it. Records in
  /// running state are adopted (Backend::Adopt) keeping their expires_at; those whose sandbox
  /// is gone (kNotFound) become destroyed; those that still fail to adopt after about a second
  /// of retries for another reason are kept in state error (visible, deletable). Records in
  /// creating/stopping are destroyed (interrupted transitions). Every id in Backend::ListOwned()
  /// that no live record names is destroyed via the backend. Nothing else is touched. Errors: only
  /// store failures; backend failures for single sandboxes are logged and retried by the reaper.
  Status Recover();

  /// One reaper pass: destroys every sandbox whose expires_at passed or whose idle timeout
  /// passed with no operation in progress, and retries stuck "stopping" ones. Returns how many
  /// were destroyed. Called by the reaper thread; public for tests with a FakeClock.
  int ReapOnce();

  /// Counts for metrics: sandboxes per state (live ones only).
  std::map<SandboxState, int64_t> CountByState();
  /// Counts for metrics since this manager was made (issue 5): sandboxes the reaper destroyed
  /// (TTL, idle timeout, stuck stop), and what Recover() did with the records it found.
  struct MaintenanceCounts {
    int64_t reaped = 0;
    int64_t recovered_adopted = 0;
    int64_t recovered_dropped = 0;
    int64_t orphans_destroyed = 0;
  };
  MaintenanceCounts Counts() const;

  const ManagerConfig& config() const { return config_; }
  const TemplateCatalog& templates() const { return templates_; }

 private:
  class Impl;
  /// Create, with the workspace cloned from `workspace_image` (a snapshot's) when not "", and
  /// the command defaults `inherited` (a fork's source's) instead of the template's when set.
  Result<SandboxInfo> CreateWith(const std::string& owner, const CreateRequest& req,
                                 const std::string& workspace_image,
                                 const std::optional<CommandDefaults>& inherited = std::nullopt);
  /// The snapshot's tar.zst, made from its image on first use when the snapshot has none yet
  /// (a short-lived sandbox exports it). Errors: kInternal (neither archive nor image), those
  /// of Create and the export.
  Result<std::string> EnsureArchive(const SnapshotInfo& snap);
  /// <WorkspaceImageDir>/<snapshot_id>.img if the backend has images and the file exists.
  std::optional<std::string> SnapshotImage(const std::string& snapshot_id) const;
  /// Part of RecoverSnapshots: finishes the image swap of a rollback a crash cut short after
  /// it staged the image (the staged image is complete: roll forward).
  Status FinishStagedRollback(const std::string& sandbox_id);

  ManagerConfig config_;
  const TemplateCatalog& templates_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asb::core
