// The sandbox manager's configuration: limits on what a create or exec request may ask for,
// their defaults, and where durable data lives. The API layer fills this from flags and the
// AGENT_SANDBOX_* environment names (ADR 0007) and calls Validate() before use;
// the manager validates every request against it (ranges, output and file size caps).
//
// Units are in the field names: *_seconds, *_mb (MiB, 1 << 20 bytes), *_bytes, cpus (cores,
// fractions allowed: 0.5 = half a core).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/net/policy.h"

namespace asb::core {

/// Per-request limits. For each limited value the request may omit it (the default applies)
/// or give a value in [min, max] inclusive; anything else is kInvalidArgument naming the field
/// and the allowed range.
struct Limits {
  /// Sandboxes in state creating or running at once, across all owners. Over it: kLimitExceeded.
  int64_t max_sandboxes = 20;
  /// Children one fork of a running sandbox may ask for (E2B's fork takes 1..100).
  int64_t max_fork_count = 100;

  /// Absolute lifetime (TTL) of a sandbox, from its creation or its last SetTimeout.
  int64_t min_timeout_seconds = 1;
  int64_t default_timeout_seconds = 900;
  int64_t max_timeout_seconds = 86400;
  /// How long a paused sandbox is kept, from its pause; then the reaper destroys it. A paused
  /// sandbox on the ns backend still holds its memory on the host.
  int64_t paused_timeout_seconds = 86400;

  /// CPU bandwidth in cores; must be > 0. max_cpus defaults to the host's CPU count
  /// (DefaultMaxCpus()).
  double default_cpus = 1.0;
  double max_cpus = 0;  // 0 here means "use DefaultMaxCpus()"; see Limits::Defaults().

  /// Memory limit (no swap), MiB.
  int64_t min_memory_mb = 64;
  int64_t default_memory_mb = 512;
  int64_t max_memory_mb = 8192;

  /// Processes + threads in the sandbox (sandboxd included).
  int64_t min_pids_limit = 8;
  int64_t default_pids_limit = 256;
  int64_t max_pids_limit = 4096;

  /// Size of the private /tmp tmpfs, MiB (not per request).
  int64_t tmp_size_mb = 64;

  /// Size quota of /workspace, MiB.
  int64_t min_workspace_mb = 16;
  int64_t default_workspace_mb = 1024;
  int64_t max_workspace_mb = 10240;

  /// Per-command timeout. A request may ask for any value > 0; above the max it is clamped.
  int64_t default_exec_timeout_seconds = 60;
  int64_t max_exec_timeout_seconds = 3600;

  /// Cap on an exec's kept output, bytes, per stream (stdout and stderr each keep up to this).
  /// A request may ask for less; more is clamped to this.
  uint64_t max_exec_output_bytes = 1ull << 20;

  /// Largest file that may be written or read through the API, bytes. Over it: kTooLarge.
  uint64_t max_file_bytes = 100ull << 20;

  /// Optional idle timeout (no exec or file operation for this long -> reaped). 0 = none;
  /// requests may ask for 0..max_timeout_seconds.
  int64_t default_idle_timeout_seconds = 0;

  /// The defaults above with max_cpus set to DefaultMaxCpus().
  static Limits Defaults();
};

/// The number of CPUs this process may run on (sched_getaffinity; at least 1).
double DefaultMaxCpus();

/// Snapshot limits (ADR 0008; AGENT_SANDBOX_MAX_SNAPSHOT_BYTES and friends, parsed by the API's
/// config). Over a byte limit: kTooLarge (413); over a count: kLimitExceeded (429).
struct SnapshotLimits {
  /// Content of one snapshot (uncompressed tar bytes; an upload past it stops there).
  uint64_t max_snapshot_bytes = 10ull << 30;
  int64_t max_per_sandbox = 50;
  int64_t max_per_owner = 500;
  /// Stored bytes of all snapshots of one owner.
  uint64_t max_total_bytes_per_owner = 100ull << 30;
};

struct ManagerConfig {
  Limits limits = Limits::Defaults();
  SnapshotLimits snapshots{};

  /// Root of durable data: agent-sandbox.db, sandboxes/, snapshots/, templates/<name>/rootfs.
  std::string data_dir = "/var/lib/agent-sandbox";

  /// Template used when a create request names none.
  std::string default_template = "base";

  /// Egress policy of networked sandboxes whose create names none (ADR 0013; seed A's VM_*
  /// variables set it, see isolation/net/policy.h).
  isolation::net::NetworkPolicy default_network_policy{};

  /// How often the reaper looks for expired or idle sandboxes, seconds (> 0).
  int64_t reap_interval_seconds = 1;

  /// How often every running sandbox's use is sampled for its history (MetricsHistory; E2B's
  /// getMetrics), seconds (> 0), and how many samples a sandbox keeps (>= 1): 120 x 5 s is its
  /// last 10 minutes.
  int64_t metrics_interval_seconds = 5;
  int64_t metrics_samples_kept = 120;

  /// Warm pools (core/warm_pool.h): ready sandboxes per template, with or without network, that
  /// a matching create takes instead of making one. Empty: none. Sizes can change at run time
  /// (WarmPool::Resize, PUT /v1/pools/{template}).
  struct WarmPoolTarget {
    std::string template_name;
    bool network = false;
    int64_t size = 0;  // [0, limits.max_sandboxes]
  };
  std::vector<WarmPoolTarget> warm_pools{};
  /// Pooled sandboxes made per second at most while refilling (> 0): a pool refills in the
  /// background without taking both cores from the creates it serves.
  int64_t warm_pool_refill_per_second = 4;

  /// Checks internal consistency: every min <= default <= max, positive sizes, cpus > 0,
  /// reap interval > 0, data_dir absolute. Errors: kInvalidArgument naming the setting, e.g.
  /// "default_memory_mb (9000) must be within [64, 8192]". The API prints it as
  /// "configuration error: ..." and exits 2.
  Status Validate() const;

  /// <data_dir>/agent-sandbox.db
  std::string DatabasePath() const;
  /// <data_dir>/templates
  std::string TemplatesDir() const;
};

}  // namespace asb::core
