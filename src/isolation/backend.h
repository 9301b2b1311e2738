// Backend: the interface an isolation technology implements (ARCHITECTURE.md, "Isolation").
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
// Methods are thread-safe; different ids may be created and destroyed concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
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
  /// (workspace_bytes must equal it). Only for backends with a WorkspaceImageDir().
  std::string workspace_image;
};

/// A copy of a workspace image (issue 4, copy-on-write fast path). `method` is "reflink"
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

/// A running sandbox as seen from the host.
class Sandbox {
 public:
  virtual ~Sandbox() = default;
  virtual const std::string& id() const = 0;
  /// The connection to the sandbox's sandboxd (multiplexed; shared by all callers).
  virtual std::shared_ptr<protocol::Connection> connection() = 0;
  /// Current cgroup figures. Errors: kNotFound if the sandbox is gone.
  virtual Result<SandboxUsage> Usage() = 0;
  /// Host pid of the sandbox's PID 1 (sandboxd), for diagnostics.
  virtual int host_pid() const = 0;
  /// A TCP connection to 127.0.0.1:`port` inside the sandbox, whatever its network (exposed
  /// ports, issue 10): a connected, blocking, close-on-exec socket fd that the caller owns.
  /// Errors: kConnectionRefused-like failures as kUnavailable ("nothing listens on port N"),
  /// kTimeout after `timeout_ms`, kUnavailable when the backend cannot do it.
  virtual Result<int> ConnectTcp(uint16_t port, int timeout_ms) {
    (void)port;
    (void)timeout_ms;
    return Fail(Error::Unavailable("this backend cannot open ports of a sandbox"));
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  /// Short name: "ns", "gvisor", "microvm".
  virtual std::string_view name() const = 0;
  /// Checks that the host can run this backend (kernel features, helper binaries). Errors:
  /// kUnavailable with the reason ("runsc not found", "cgroup memory controller missing").
  virtual Status Probe() = 0;
  /// Creates and starts a sandbox. Errors: kInvalidArgument (bad spec), kLimitExceeded (no uid
  /// range or pool slot left), kBackend (any isolation step failed; the message names it).
  virtual Result<std::shared_ptr<Sandbox>> Create(const SandboxSpec& spec) = 0;
  /// Reconnects to a sandbox created by an earlier server process. Errors: kNotFound if it no
  /// longer runs.
  virtual Result<std::shared_ptr<Sandbox>> Adopt(const std::string& id) = 0;
  /// Kills every process of the sandbox and removes all its resources. Idempotent: an unknown
  /// id is success.
  virtual Status Destroy(const std::string& id) = 0;
  /// Ids for which this backend holds resources (running or leftover).
  virtual Result<std::vector<std::string>> ListOwned() = 0;

  // ---- Workspace images (issue 4). A backend without them keeps these defaults: "" and
  // kUnavailable, and the caller takes the portable (tar) path.

  /// Directory (0700, on the same file system as the workspaces, so that clones can share
  /// extents) where the caller may keep image copies; "" when the backend has no images.
  virtual std::string WorkspaceImageDir() const { return {}; }
  /// Writes a consistent copy of sandbox `id`'s workspace image to the new file `dest` (in
  /// WorkspaceImageDir()): the file system is frozen (FIFREEZE) while the image is cloned, so
  /// the copy is exactly the state at one instant. `dest` is fsynced; the caller renames it into
  /// place. Errors: kUnavailable (no images, or a workspace made before images had canonical
  /// ids), kNotFound, FromErrno; `dest` does not exist after a failure.
  virtual Result<WorkspaceImageCopy> CopyWorkspaceImage(const std::string& id,
                                                        const std::string& dest) {
    (void)id, (void)dest;
    return Fail(Error::Unavailable("this backend has no workspace images"));
  }
  /// Rollback, step 1: clones `image` beside sandbox `id`'s workspace as its staged next
  /// workspace (temp + fsync + rename). Nothing the sandbox sees changes. Errors: as
  /// CopyWorkspaceImage, kInvalidArgument when the image's size differs from the workspace's.
  virtual Result<WorkspaceImageCopy> StageWorkspace(const std::string& id,
                                                    const std::string& image) {
    (void)id, (void)image;
    return Fail(Error::Unavailable("this backend has no workspace images"));
  }
  /// True if sandbox `id` has a staged workspace (a rollback was cut short after step 1).
  virtual bool HasStagedWorkspace(const std::string& id) {
    (void)id;
    return false;
  }
  /// Rollback, step 2 (the caller has ended the sandbox's processes): the staged image becomes
  /// the sandbox's /workspace (inside its running mount namespace, and on the host) and replaces
  /// the old image file by rename. Idempotent after a crash at any point: running it again
  /// finishes the switch. Returns false if nothing was staged. Errors: kBackend; the sandbox
  /// then still has its old workspace and the staged image stays (DropStagedWorkspace).
  virtual Result<bool> SwapStagedWorkspace(const std::string& id) {
    (void)id;
    return false;
  }
  /// Removes a staged workspace (a rollback that failed). Missing is success.
  virtual Status DropStagedWorkspace(const std::string& id) {
    (void)id;
    return {};
  }
  /// Replaces the egress policy of a networked sandbox at once (issue 10). Errors: kNotFound
  /// (not running), kInvalidArgument (the sandbox has no network), kUnavailable (the backend
  /// offers no networking), kBackend.
  virtual Status UpdateNetwork(const std::string& id, const net::NetworkPolicy& policy) {
    (void)id;
    (void)policy;
    return Fail(Error::Unavailable("this backend offers no networking"));
  }
};

}  // namespace asb::isolation
