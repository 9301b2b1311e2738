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
#include "protocol/client.h"

namespace asb::isolation {

/// What a sandbox is made of. Units: bytes, milliseconds, CPUs as a fraction of one core.
struct SandboxSpec {
  std::string id;                   // "sb_" + 16 hex, issued by the caller
  std::string template_name = "base";
  std::string rootfs;               // absolute host path of the template's root filesystem
  double cpus = 1.0;                // CPU bandwidth in cores (0.5 = half a core)
  uint64_t memory_bytes = 512ull << 20;      // memory limit, no swap
  uint32_t pids_limit = 256;        // processes + threads, sandboxd included
  uint64_t workspace_bytes = 1ull << 30;     // size quota of /workspace
  uint64_t tmp_bytes = 64ull << 20;          // size of the /tmp tmpfs
  uint32_t nofile_limit = 4096;     // RLIMIT_NOFILE of sandbox processes
  bool network = false;             // false: loopback only
  std::string hostname = "sandbox";
  /// Base environment of every command in the sandbox (exec env is layered on top).
  std::map<std::string, std::string> env;
};

/// Live resource figures of a sandbox, read from its cgroups.
struct SandboxUsage {
  uint64_t memory_bytes = 0;
  uint64_t memory_peak_bytes = 0;
  uint64_t pids = 0;
  uint64_t cpu_usage_ns = 0;
  uint64_t oom_kills = 0;           // OOM kills inside the sandbox so far
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
};

}  // namespace asb::isolation
