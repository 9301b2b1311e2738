// Backend: the interface an isolation technology implements (docs/ARCHITECTURE.md,
// "Isolation backends").
// The namespaces backend (isolation/ns/) is the embedded default; gVisor and microVM backends
// implement the same contract later. Every backend runs the same sandboxd as PID 1 inside the
// sandbox and hands the caller a connected protocol::Connection to it, so exec and file
// semantics are implemented once, in sandboxd.
//
// Contract, for every backend:
//  - Create() either returns a running sandbox whose sandboxd answered the protocol handshake,
//    or fails and leaves nothing behind (no process, mount, cgroup, loop device or file).
//  - Destroy() is idempotent, works on a half-created sandbox (after a crash of the server in
//    the middle of Create), and removes everything the backend made for that id.
//  - Adopt() reconnects to a sandbox that outlived a restart of the server.
//  - ListOwned() names every sandbox id for which the backend holds any resource, so that the
//    manager can destroy resources that no record names. It never reports things it did not
//    make (they are recognised by the backend's own state directory and naming).
//  - Everything beyond create, destroy, list and the connection to sandboxd is a capability the
//    backend states in Capabilities(). Every operation is pure virtual: a backend without a
//    capability implements its operations by failing with kUnavailable (never by a silent
//    default), and callers test the capability before they rely on it. A wrapper that forwards
//    to another backend (backend_wrapper.h) therefore fails to compile when it misses one.
// Methods are thread-safe; different ids may be created and destroyed concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "isolation/net/policy.h"
#include "protocol/client.h"

namespace asb::isolation {

/// What a sandbox is made of. Units: bytes, milliseconds, CPUs as a fraction of one core.
struct SandboxSpec {
  std::string id;  // "sb_" + 16 hex, issued by the caller
  std::string template_name = "base";
  std::string rootfs;                     // absolute host path of the template's root filesystem
  double cpus = 1.0;                      // CPU bandwidth in cores (0.5 = half a core)
  uint64_t memory_bytes = 512ull << 20;   // memory limit, no swap
  uint32_t pids_limit = 256;              // processes + threads, sandboxd included
  uint64_t workspace_bytes = 1ull << 30;  // size quota of /workspace
  uint64_t tmp_bytes = 64ull << 20;       // size of the /tmp tmpfs
  uint32_t nofile_limit = 4096;           // RLIMIT_NOFILE of sandbox processes
  bool network = false;                   // false: loopback only
  /// With network: the egress policy (isolation/net/policy.h).
  net::NetworkPolicy network_policy;
  std::string hostname = "sandbox";
  /// Base environment of every command in the sandbox (exec env is layered on top).
  std::map<std::string, std::string> env;
  /// Host path of a workspace image made by CopyWorkspaceImage (a snapshot's) to clone as this
  /// sandbox's workspace instead of a fresh one; "" = fresh. The image's size is the quota
  /// (workspace_bytes must equal it). Only with BackendCapabilities::workspace_images; other
  /// backends refuse a non-empty one with kUnavailable.
  std::string workspace_image;
  /// Host path of a directory written by SnapshotMemory: the sandbox continues from that
  /// machine state (processes, memory, /tmp) instead of booting; "" = boot. Only with
  /// BackendCapabilities::memory_snapshot; other backends refuse a non-empty one with kUnavailable.
  std::string memory_snapshot;
};

/// What a backend can do beyond create, destroy, list and the connection to sandboxd, which
/// every backend has. A false field means the matching operations fail with kUnavailable and
/// callers take another path (or answer that the backend cannot). The set is fixed for the life
/// of a backend object.
struct BackendCapabilities {
  /// Sandboxes outlive the server process and Adopt reconnects to them. Without it, a restart
  /// ends them: the manager destroys what records name instead of adopting.
  bool adopt = false;
  /// Workspace images (docs/adr/0009): WorkspaceImageDir, CopyWorkspaceImage, StageWorkspace,
  /// HasStagedWorkspace, SwapStagedWorkspace, DropStagedWorkspace and
  /// SandboxSpec::workspace_image. Without it, snapshots take the portable (tar) path.
  bool workspace_images = false;
  /// SandboxSpec::network (egress through a host-side policy) and UpdateNetwork.
  bool network = false;
  /// Sandbox::ConnectTcp: TCP connections to ports inside the sandbox (exposed ports).
  bool tcp_connect = false;
  /// Pause and Resume: every process of the sandbox stops and later continues where it was.
  bool pause = false;
  /// SnapshotMemory and SandboxSpec::memory_snapshot: the whole machine state of a running
  /// sandbox saved and continued in new sandboxes (live fork, template snapshots).
  bool memory_snapshot = false;
  /// sandboxd itself says in each exec's result whether the command was OOM-killed or refused
  /// a fork (the sandbox's kernel is its own, as in a microVM): the host then reads no usage
  /// around an exec. Without it the host compares its own cgroup counters before and after.
  bool exec_limit_hits = false;
  /// UpdateLimits: the memory and CPU limits of a running sandbox change in place (a warm
  /// pool's sandbox takes its claim's, core/warm_pool.h).
  bool live_limits = false;
};

/// What SnapshotMemory wrote. Bytes: `memory_bytes` is the guest memory saved, `stored_bytes`
/// what the directory takes on disk.
struct MemorySnapshotInfo {
  uint64_t memory_bytes = 0;
  uint64_t stored_bytes = 0;
};

/// A copy of a workspace image (the copy-on-write fast path, docs/adr/0009). `method` is "reflink"
/// (extents shared with the source, O(1) in the data size) or "sparse-copy" (the data extents
/// copied, O(data)). Bytes: `image_bytes` is the image's size (the quota), `used_bytes` what the
/// file system in it uses.
struct WorkspaceImageCopy {
  std::string method;
  uint64_t image_bytes = 0;
  uint64_t used_bytes = 0;
};

/// Live resource figures of a sandbox, read from its cgroups.
struct SandboxUsage {
  uint64_t memory_bytes = 0;
  uint64_t memory_peak_bytes = 0;
  uint64_t pids = 0;
  uint64_t cpu_usage_ns = 0;
  uint64_t oom_kills = 0;        // OOM kills inside the sandbox so far
  uint64_t pids_limit_hits = 0;  // forks refused by the pids limit so far (pids.events max)
  uint64_t workspace_used_bytes = 0;
};

/// The two counters an exec compares before and after its command to report oom_killed and
/// pids_limited: OOM kills in the sandbox and forks its pids limit refused, so far.
struct LimitHitCounts {
  uint64_t oom_kills = 0;
  uint64_t pids_limit_hits = 0;
};

/// A running sandbox as seen from the host.
class Sandbox {
 public:
  virtual ~Sandbox() = default;
  virtual const std::string& id() const = 0;
  /// The connection to the sandbox's sandboxd (multiplexed; shared by all callers); nullptr or
  /// a dead connection when sandboxd is gone.
  virtual std::shared_ptr<protocol::Connection> connection() = 0;
  /// Current cgroup figures. Errors: kNotFound if the sandbox is gone.
  virtual Result<SandboxUsage> Usage() = 0;
  /// Just SandboxUsage's oom_kills and pids_limit_hits, read on every exec (twice) where
  /// sandboxd does not report them (BackendCapabilities::exec_limit_hits): a backend overrides
  /// it where it can read them for less than Usage(). Errors: as Usage().
  virtual Result<LimitHitCounts> LimitHits() {
    ASB_ASSIGN_OR_RETURN(SandboxUsage u, Usage());
    return LimitHitCounts{u.oom_kills, u.pids_limit_hits};
  }
  /// Host pid of the sandbox's PID 1 (sandboxd, or the VMM of a VM), for diagnostics.
  virtual int host_pid() const = 0;
  /// A TCP connection to 127.0.0.1:`port` inside the sandbox, whatever its network (exposed
  /// ports): a connected, blocking, close-on-exec socket fd that the caller owns. Errors:
  /// nothing listening as kUnavailable ("nothing listens on port N"), kTimeout after
  /// `timeout_ms`, kUnavailable without BackendCapabilities::tcp_connect.
  virtual Result<int> ConnectTcp(uint16_t port, int timeout_ms) = 0;
  /// Why the sandbox ended on its own, once its connection is gone, when the backend can tell
  /// ("the guest kernel panicked: ..."); "" when it cannot. Shown to clients, so it names no
  /// host path.
  virtual std::string LostReason() { return {}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Short name: "ns", "gvisor", "microvm".
  virtual std::string_view name() const = 0;
  /// What this backend can do beyond the required operations (see BackendCapabilities).
  virtual BackendCapabilities Capabilities() const = 0;
  /// What runs a VM backend's guests: "kvm" (hardware) or "tcg" (QEMU's software emulation),
  /// chosen by a test boot; "" for a backend without guests (ns).
  virtual std::string accelerator() const { return {}; }
  /// Checks that the host can run this backend (kernel features, helper binaries). Errors:
  /// kUnavailable with the reason ("runsc not found", "cgroup memory controller missing").
  virtual Status Probe() = 0;
  /// Creates and starts a sandbox. Errors: kInvalidArgument (bad spec), kLimitExceeded (no uid
  /// range or pool slot left), kUnavailable (the spec asks for a capability this backend lacks:
  /// network, workspace_image, memory_snapshot), kBackend (any isolation step failed; the
  /// message names it).
  virtual Result<std::shared_ptr<Sandbox>> Create(const SandboxSpec& spec) = 0;
  /// Reconnects to a sandbox created by an earlier server process. Errors: kNotFound if it no
  /// longer runs, kUnavailable without BackendCapabilities::adopt.
  virtual Result<std::shared_ptr<Sandbox>> Adopt(const std::string& id) = 0;
  /// Kills every process of the sandbox and removes all its resources. Idempotent: an unknown
  /// id is success.
  virtual Status Destroy(const std::string& id) = 0;
  /// Ids for which this backend holds resources (running or leftover).
  virtual Result<std::vector<std::string>> ListOwned() = 0;

  // ---- Workspace images (BackendCapabilities::workspace_images; docs/adr/0009). Without the
  // capability every one of these fails with kUnavailable (HasStagedWorkspace: false).

  /// Directory (0700, on the same file system as the workspaces, so that clones can share
  /// extents) where the caller may keep image copies.
  virtual Result<std::string> WorkspaceImageDir() const = 0;
  /// Writes a consistent copy of sandbox `id`'s workspace image to the new file `dest` (in
  /// WorkspaceImageDir()): the file system is frozen (FIFREEZE) while the image is cloned, so
  /// the copy is exactly the state at one instant. `dest` is fsynced; the caller renames it into
  /// place. The file's size is the workspace's quota. Errors: kUnavailable (no images, or a
  /// workspace made before images had canonical ids), kNotFound, FromErrno; `dest` does not
  /// exist after a failure.
  virtual Result<WorkspaceImageCopy> CopyWorkspaceImage(const std::string& id,
                                                        const std::string& dest) = 0;
  /// Rollback, step 1: clones `image` beside sandbox `id`'s workspace as its staged next
  /// workspace (temp + fsync + rename). Nothing the sandbox sees changes. Errors: as
  /// CopyWorkspaceImage, kInvalidArgument when the image's size differs from the workspace's.
  virtual Result<WorkspaceImageCopy> StageWorkspace(const std::string& id,
                                                    const std::string& image) = 0;
  /// True if sandbox `id` has a staged workspace (a rollback was cut short after step 1).
  virtual bool HasStagedWorkspace(const std::string& id) = 0;
  /// Rollback, step 2 (the caller has ended the sandbox's processes): the staged image becomes
  /// the sandbox's /workspace (inside its running mount namespace, and on the host) and replaces
  /// the old image file by rename. Idempotent after a crash at any point: running it again
  /// finishes the switch. Returns false if nothing was staged. Errors: kBackend; the sandbox
  /// then still has its old workspace and the staged image stays (DropStagedWorkspace).
  virtual Result<bool> SwapStagedWorkspace(const std::string& id) = 0;
  /// Removes a staged workspace (a rollback that failed). Missing is success.
  virtual Status DropStagedWorkspace(const std::string& id) = 0;

  // ---- Network (BackendCapabilities::network).

  /// Replaces the egress policy of a networked sandbox at once. Errors: kNotFound (not
  /// running), kInvalidArgument (the sandbox has no network), kUnavailable (the backend offers
  /// no networking), kBackend.
  virtual Status UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) = 0;

  // ---- Limits (BackendCapabilities::live_limits).

  /// Sets the memory limit (bytes, as SandboxSpec::memory_bytes) and CPU quota (cpus, as
  /// SandboxSpec::cpus) of running sandbox `id`, as if it had been created with them; the
  /// pids limit and sizes stay. Errors: kNotFound (not running), kUnavailable without
  /// BackendCapabilities::live_limits, kInvalidArgument (memory below what the sandbox uses
  /// now), kBackend.
  virtual Status UpdateLimits(const std::string& id, uint64_t memory_bytes, double cpus) = 0;

  // ---- Pause and memory snapshots (BackendCapabilities::pause,
  // BackendCapabilities::memory_snapshot).

  /// Stops every process of sandbox `id` where it is (a cgroup freeze, or a VM's vCPUs
  /// stopped); its memory, files and connection stay. Idempotent. Errors: kNotFound (not
  /// running), kUnavailable without BackendCapabilities::pause, kBackend.
  virtual Status Pause(const std::string& id) = 0;
  /// Lets a paused sandbox continue. Idempotent (a running one is success). Errors: as Pause.
  virtual Status Resume(const std::string& id) = 0;
  /// Writes the machine state of running sandbox `id` (memory, devices, processes) into the
  /// new directory `dest`, durably; the sandbox is paused while it is written and then goes on
  /// as before. A Create whose SandboxSpec::memory_snapshot names `dest` (with a workspace_image
  /// copied at the same pause) continues from that state. `dest` does not exist after a
  /// failure. Errors: kNotFound, kUnavailable without BackendCapabilities::memory_snapshot,
  /// kLimitExceeded (no room), kBackend.
  virtual Result<MemorySnapshotInfo> SnapshotMemory(const std::string& id,
                                                    const std::string& dest) = 0;
};

/// The kUnavailable error a backend answers for an operation it lacks (`what`: "workspace
/// images", "pause"), naming itself: "the fake backend has no workspace images".
inline Error NotCapable(std::string_view backend, std::string_view what) {
  return Error::Unavailable("the " + std::string(backend) + " backend has no " + std::string(what));
}

}  // namespace asb::isolation
