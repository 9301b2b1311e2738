// WarmPool: ready sandboxes waiting for a create (docs/adr/0027-warm-pools.md).
//
// Per template, with or without network, a configured number of sandboxes is made ahead of any
// request, in the background and at a bounded rate (ManagerConfig::warm_pool_refill_per_second),
// and kept out of sight: no owner, no listing, no reaper, a record in state "creating" under
// kPoolOwner. A create whose shape matches one (SandboxShape: template, backend, limits,
// network and policy, command defaults) takes it: SandboxLifecycle::CreateWith gives it the
// request's owner, TTL, metadata and lifecycle, its environment (sandboxd's env.set,
// protocol/env_messages.h: a pooled sandbox is made with its template's) and, where the backend
// changes them in place (BackendCapabilities::live_limits), its memory and CPU limits; writes
// it running, and it is an ordinary sandbox from then on; the pool makes another. A pooled sandbox
// serves one claim and is never returned to a pool, so nothing of one tenant can reach another.
//
// Pooled sandboxes take slots of the server's capacity (max_sandboxes), never of a tenant's
// quota; a create that finds the server full evicts a ready one of another shape first. A
// server killed with a full pool leaves records in "creating", which Recover finishes like any
// interrupted create (destroyed); Stop() destroys the ready ones.
//
// Threading: every method is thread-safe. The refill runs on a thread of its own (Start/Stop),
// one sandbox at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/sandbox_types.h"

namespace asb::core {

class SandboxLifecycle;
struct Entry;

/// The owner of the records of pooled sandboxes (never an API key's owner: those are key ids).
inline constexpr char kPoolOwner[] = "(warm pool)";

/// What must match for a create to take a pooled sandbox: everything the runtime was made with
/// and cannot change later. (The environment is not: a claim sends its own; nor, where the
/// backend has live_limits, memory and cpus: ShapeOf leaves them 0.)
struct SandboxShape {
  std::string template_name;
  std::string backend;
  double cpus = 0;
  int64_t memory_mb = 0;
  int64_t pids_limit = 0;
  int64_t workspace_mb = 0;
  int64_t tmp_size_mb = 0;
  bool network = false;
  NetworkPolicy network_policy{};
  std::string default_workdir;
  std::string default_user;
  bool operator==(const SandboxShape&) const = default;
};

/// The shape of a sandbox as SandboxLifecycle resolved it; memory_mb and cpus 0 when
/// `live_limits` (the claim sets them).
SandboxShape ShapeOf(const SandboxInfo& info, bool live_limits);

/// One pool as GET /v1/pools and /metrics show it.
struct WarmPoolStatus {
  std::string template_name;
  bool network = false;
  int64_t size = 0;        // wanted
  int64_t ready = 0;       // made and waiting
  int64_t hits = 0;        // creates that took one
  int64_t misses = 0;      // creates of this template and network that found none to take
  std::string last_error;  // why the last refill failed ("" when it did not); client-safe
};

class WarmPool {
 public:
  /// `lifecycle` makes and destroys the pooled sandboxes; it must outlive the pool.
  WarmPool(SandboxLifecycle& lifecycle, int64_t refill_per_second);
  ~WarmPool();  // Stop()
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  /// Sets the wanted size of the pool of `template_name` (with or without network): the refill
  /// makes up a shortfall; ready sandboxes beyond it are destroyed now. 0 ends the pool.
  /// Errors: kInvalidArgument for an empty name or a negative size.
  Status Resize(const std::string& template_name, bool network, int64_t size);
  /// Every pool, by template then network.
  std::vector<WarmPoolStatus> Pools() const;

  /// A ready sandbox of exactly `shape` (ShapeOf with the same `live_limits`), removed from its
  /// pool (the caller claims it), or nullptr: a miss when the template has a pool, nothing at
  /// all otherwise.
  std::shared_ptr<Entry> Take(const SandboxShape& shape, bool live_limits);
  /// Removes one ready sandbox of any shape from its pool, if there is one (a create found the
  /// server full: it takes that sandbox's slot and destroys it); nullptr when none is ready.
  std::shared_ptr<Entry> TakeAny();

  /// Starts the refill thread. Idempotent.
  void Start();
  /// Stops the refill thread and destroys every ready sandbox. Idempotent.
  void Stop();

 private:
  struct Key {
    std::string template_name;
    bool network = false;
    auto operator<=>(const Key&) const = default;
  };
  struct Pool {
    int64_t size = 0;
    std::deque<std::shared_ptr<Entry>> ready;
    int64_t making = 0;
    int64_t hits = 0;
    int64_t misses = 0;
    std::string last_error;
    int64_t retry_at_ms = 0;  // after a failed refill: not before then
  };
  /// After a claim the refill waits this long (and longer while claims keep coming): making a
  /// sandbox takes both cores for ~15 ms here, and the claimed sandbox's first commands, which
  /// come right after its create, should not share them with it.
  static constexpr int64_t kQuietAfterClaimMs = 250;

  void RefillLoop();
  void Destroy(std::vector<std::shared_ptr<Entry>> entries);

  SandboxLifecycle& lifecycle_;
  const int64_t refill_interval_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Pool> pools_;
  bool stop_ = false;
  int64_t last_claim_ms_ = 0;  // steady-clock milliseconds of the last Take that found one
  std::thread refill_;
};

}  // namespace asb::core
