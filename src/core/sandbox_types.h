// The values of core's public API: what a sandbox, a snapshot, an exec, a file and a process
// look like to the layers above (api/, mcp/, cli/). They are core's own types, not sandboxd's
// wire types (protocol/), so that a change of the sandbox protocol stops at core/ and the HTTP
// and MCP layers never decode protocol frames (docs/ARCHITECTURE.md, "Layers"; ADR 0018).
// Times are Unix epoch milliseconds, sizes bytes unless a name says otherwise (_mb: MiB).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "isolation/net/policy.h"

namespace asb::core {

/// The egress policy of a networked sandbox: a plain value (rules, bandwidth) that core,
/// the backends and sandboxd's resolver share (isolation/net/policy.h holds its parser).
using NetworkPolicy = isolation::net::NetworkPolicy;

/// The owner that sees every sandbox.
inline constexpr char kAnyOwner[] = "";

/// A sandbox's state (lifecycle.h draws the machine). kPaused: every process stopped where it
/// was (SandboxLifecycle::Pause), memory and files kept, or, after a files-only pause, no
/// process left and only the files kept; only Resume and Destroy act on it.
enum class SandboxState { kCreating, kRunning, kPaused, kStopping, kDestroyed, kError };

/// "creating", "running", "paused", "stopping", "destroyed", "error".
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
  /// Outbound network (ADR 0013); kInvalidArgument when the server has networking disabled.
  bool network = false;
  /// The egress policy with network; absent = config.default_network_policy.
  std::optional<NetworkPolicy> network_policy{};
  /// With network false: give it network (and network_policy) when its backend offers
  /// networking on this server, and none without an error when it does not (E2B's default of
  /// allowInternetAccess; docs/e2b.md). network_policy without either is still refused.
  bool network_when_offered = false;
  /// The caller's labels (E2B's sandbox metadata; docs/e2b.md): at most kMaxMetadataEntries,
  /// keys 1..kMaxMetadataKeyBytes and values up to kMaxMetadataValueBytes, without NUL.
  std::map<std::string, std::string> metadata{};
  /// When its TTL or idle timeout passes, pause the sandbox instead of destroying it (E2B's
  /// autoPause); it is then kept paused for paused_timeout_seconds. Needs a backend that can
  /// pause (kInvalidArgument otherwise).
  bool auto_pause = false;
  /// How that auto-pause pauses: true keeps the memory (the freeze); false keeps only the
  /// files (E2B's `onTimeout: {action: 'pause', keepMemory: false}`; SandboxLifecycle::Pause).
  bool auto_pause_keep_memory = true;
  /// While paused, a request that needs it running (exec, files, processes, ports, previews)
  /// resumes it first instead of failing with 409 (E2B's autoResume). Needs a backend that can
  /// pause (kInvalidArgument otherwise).
  bool auto_resume = false;
  /// The isolation backend to run it on (GET /v1/backends lists them); "" = the server's
  /// default. kInvalidArgument for a name the server does not know, kUnavailable for one it
  /// knows but cannot run on this host.
  std::string backend{};
  /// Its ports answer on their preview hosts without a token (E2B's allowPublicTraffic: true):
  /// anyone who knows the sandbox's id reaches them. Off by default: a port then needs a
  /// preview token or the sandbox's E2B traffic token.
  bool allow_public_traffic = false;
  /// The Host header every request to one of its ports carries (E2B's maskRequestHost), with
  /// "${PORT}" replaced by the port; "" = 127.0.0.1:<port>. Checked by ValidRequestHostMask.
  std::string mask_request_host{};
};

/// Checks a mask_request_host: 1..253 bytes of letters, digits, '.', '-', '_', ':', '[', ']'
/// and "${PORT}". Errors: kInvalidArgument naming the field.
Status ValidRequestHostMask(std::string_view mask);
/// The Host header of a request to `port` under `mask` ("" = "127.0.0.1:<port>").
std::string RequestHostFor(std::string_view mask, int64_t port);

/// Limits of CreateRequest::metadata.
inline constexpr size_t kMaxMetadataEntries = 64;
inline constexpr size_t kMaxMetadataKeyBytes = 256;
inline constexpr size_t kMaxMetadataValueBytes = 1024;

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
  NetworkPolicy network_policy{};  // meaningful with network
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
  /// When it was paused; 0 unless state is paused. While paused, expires_at_ms is when the
  /// reaper destroys it (paused_at_ms + paused_timeout_seconds).
  int64_t paused_at_ms = 0;
  bool auto_pause = false;             // CreateRequest::auto_pause
  bool auto_pause_keep_memory = true;  // CreateRequest::auto_pause_keep_memory
  bool auto_resume = false;            // CreateRequest::auto_resume
  /// Set while it is paused with only its files kept (a files-only pause): the hidden snapshot
  /// that holds its workspace until Resume makes it again. Never shown to clients.
  std::optional<std::string> paused_workspace_snapshot_id{};
  /// The snapshot its workspace came from last: set by a fork or a create from a snapshot, and
  /// by every rollback (seed B's meaning, which its SDK checks). Which of the two it was is
  /// kept apart below.
  std::optional<std::string> source_snapshot_id{};
  /// Its origin: the snapshot it was forked (or created) from; a rollback never changes it.
  /// Records written before 2026-12-06 have none.
  std::optional<std::string> forked_from_snapshot_id{};
  /// The snapshot of its last rollback, and when (0 = never rolled back).
  std::optional<std::string> rolled_back_to_snapshot_id{};
  int64_t rolled_back_at_ms = 0;
  std::string backend{};                          // Backend::name(), e.g. "ns"
  std::map<std::string, std::string> metadata{};  // CreateRequest::metadata; forks keep it
  bool allow_public_traffic = false;              // CreateRequest's; forks keep it
  std::string mask_request_host{};                // CreateRequest's; forks keep it
};

/// An isolation backend as the API lists it (GET /v1/backends): whether the host can run it now
/// and what it can do beyond create, exec, files and destroy.
struct BackendInfo {
  std::string name{};  // what a sandbox's `backend` says: "ns"
  bool available = false;
  std::string reason{};  // why not, when unavailable (safe to show a client)
  bool is_default = false;
  std::string accelerator{};  // a VM backend's: "kvm" or "tcg"; "" for ns
  /// "adopt" (sandboxes outlive the server), "pause", "workspace_images" (O(1) snapshot images),
  /// "network", "tcp_connect" (exposed ports), "memory_snapshot".
  std::map<std::string, bool> capabilities{};
};

/// What a running sandbox uses now (its cgroups and workspace), as the API shows it.
struct SandboxUsageInfo {
  int64_t sampled_at_ms = 0;        // Unix epoch milliseconds
  uint64_t memory_bytes = 0;        // memory charged to its cgroup now
  uint64_t memory_limit_bytes = 0;  // memory_mb in bytes
  uint64_t cpu_usage_ns = 0;        // CPU time used since it started, nanoseconds
  uint64_t pids = 0;                // processes and threads now
  uint64_t workspace_used_bytes = 0;
  uint64_t workspace_limit_bytes = 0;  // workspace_mb in bytes
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

/// The user names a command may run as: "sandbox" (uid 1000) and "root" (root of the
/// sandbox's user namespace).
inline constexpr char kUserSandbox[] = "sandbox";
inline constexpr char kUserRoot[] = "root";

/// How a command ended (exec, run to completion or streamed).
struct ExecResult {
  int exit_code = -1;  // exit status, or 128+signal when a signal killed it
  int signal = 0;      // terminating signal number, 0 if it exited
  bool timed_out = false;
  bool stdout_truncated = false;  // the output cap dropped stdout bytes
  bool stderr_truncated = false;
  uint64_t stdout_bytes = 0;  // total bytes the command wrote, including dropped ones
  uint64_t stderr_bytes = 0;
  uint64_t duration_ms = 0;
  bool oom_killed = false;    // the memory limit killed a process of the sandbox meanwhile
  bool pids_limited = false;  // the pids limit refused a fork meanwhile
};

/// A finished exec: its result and the kept output of each stream.
struct ExecOutcome {
  ExecResult result;
  std::string stdout_data;
  std::string stderr_data;
};

/// A file, directory or other entry inside a sandbox.
struct FileStat {
  std::string path;   // absolute path inside the sandbox
  std::string name;   // last component
  std::string type;   // "file", "dir", "symlink", "fifo", "socket", "char", "block"
  uint64_t size = 0;  // bytes
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime_ms = 0;
  std::string link_target;  // for symlinks
  /// Its file metadata (user-set key/value pairs, E2B's envd >= 0.6.2), when asked for.
  std::map<std::string, std::string> metadata{};
};

/// One change under a watched directory (FileService::WatchDirectory). `type` is one of
/// "create" (also: moved in), "write", "remove", "rename" (moved away from `path`), "chmod"
/// (mode, owner, times) and "overflow": events were lost, `dropped` of them because the reader
/// fell behind the watch's queue (0: the kernel's own queue overflowed, or a new directory could
/// not be watched). Names are E2B's and fsnotify's (envd's filesystem.proto EventType).
struct FileEvent {
  std::string type;
  std::string path;  // absolute inside the sandbox; "" for overflow
  bool dir = false;  // the entry is a directory
  uint64_t dropped = 0;
  /// The entry when the watch asked for entries (FileService::WatchDirectory): for create,
  /// write and chmod, as it was when sandboxd sent the event; absent when gone by then.
  std::optional<FileStat> entry{};
};

/// What a tar import extracted.
struct TarResult {
  uint64_t entries = 0;
  uint64_t bytes = 0;  // sum of regular file sizes
};

/// A background process of a sandbox.
struct ProcessInfo {
  int pid = 0;  // in the sandbox's pid namespace
  std::string tag;
  std::vector<std::string> argv;  // as requested (empty when `command` was given)
  std::optional<std::string> command;
  int64_t started_at_ms = 0;
  int64_t ended_at_ms = 0;  // 0 while running
  std::string state;        // "running" or "exited"
  int exit_code = -1;       // exit status or 128+signal; -1 while running
  int signal = 0;           // terminating signal, 0 if it exited
  bool pty = false;
  bool stdin_open = false;    // a stdin pipe exists and has not been closed
  uint64_t output_bytes = 0;  // bytes the process has written so far (both streams)
};

/// Largest replay ring of a background process, bytes (ProcessOptions::ring_bytes).
inline constexpr uint64_t kMaxProcessRingBytes = 4 * 1024 * 1024;

/// A workspace snapshot as the API shows it (ADR 0008). Times are Unix epoch milliseconds.
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
  /// Replaces the source's egress policy (with network); CreateRequest's meaning.
  std::optional<NetworkPolicy> network_policy{};
  /// CreateRequest::network_when_offered, for a fork whose network is false.
  bool network_when_offered = false;
  std::optional<int64_t> timeout_seconds{};
  /// Set over the source's env (CreateRequest::env's rules).
  std::map<std::string, std::string> env{};
  /// Replaces the source's metadata (CreateRequest::metadata's limits).
  std::optional<std::map<std::string, std::string>> metadata{};
  std::optional<bool> auto_pause{};
  std::optional<bool> auto_resume{};
};

/// A fork of a running sandbox (SnapshotService::ForkSandbox): how many children, and their
/// TTL (absent = the parent's timeout_seconds).
struct SandboxForkRequest {
  int64_t count = 1;  // [1, Limits::max_fork_count]
  std::optional<int64_t> timeout_seconds{};
  /// The caller's own sandbox quota, when it has one: how many more it may have now. Children
  /// past it are refused (kLimitExceeded) without being tried.
  std::optional<int64_t> quota_left{};
};

/// One child of a fork: the sandbox made, or why it was not (its own error; the others are
/// unaffected). `memory`: whether it started with the parent's memory (processes and RAM);
/// false on every backend so far, whose children start their processes afresh.
struct ForkedChild {
  std::optional<SandboxInfo> sandbox{};
  std::optional<Error> error{};
  bool memory = false;
};

/// A background process request as the API decoded it (ADR 0011). Command, env, workdir and
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
  std::optional<int64_t> ring_bytes{};  // replay ring [1, kMaxProcessRingBytes]
};

/// Largest terminal width or height accepted (columns or rows).
inline constexpr int64_t kMaxTerminalSize = 10000;

/// Parses a signal name ("SIGTERM", "TERM", case-insensitive) or number ("15") into its
/// number (signal(7)). Errors: kInvalidArgument naming the accepted names.
Result<int> ParseSignalName(std::string_view name);

}  // namespace asb::core
