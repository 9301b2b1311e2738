// SandboxRegistry: the live sandboxes of one server and what every service of core/ shares
// about them (docs/ARCHITECTURE.md, "core/"): the entries by id, owner lookup (tenancy), the
// quota slots, the activity marks that keep a sandbox from idling out, the state writes of the
// state machine, and the detection of a sandbox that died on its own.
//
// The services (lifecycle.h, exec_service.h, file_service.h, process_service.h,
// snapshot_service.h, network_service.h) each take the registry; none holds sandboxes of its
// own. The registry knows nothing of HTTP and is not seen by api/ or mcp/.
//
// Locking, from outside in (never the other way round):
//   Entry::op_mu   serializes lifecycle changes of one sandbox (create, destroy, timeout,
//                  rollback, network). Held across the backend call, so only this sandbox waits.
//   registry mu_   guards the entries map and the quota count; held for lookups only.
//   Entry::info_mu guards Entry::info and Entry::sandbox; held for copies only, so Get/List
//                  never wait for a backend call.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "core/config.h"
#include "core/sandbox_types.h"
#include "core/templates.h"
#include "isolation/backend.h"
#include "isolation/backend_set.h"

namespace asb::store {
class Store;
}

namespace asb::core {

/// One sandbox the registry knows (every state but destroyed).
struct Entry {
  explicit Entry(SandboxInfo i) : info(std::move(i)) {}
  std::mutex op_mu;
  mutable std::mutex info_mu;
  SandboxInfo info;                             // guarded by info_mu
  std::shared_ptr<isolation::Sandbox> sandbox;  // guarded by info_mu; set while running
  bool holds_slot = false;                      // guarded by the registry's mu_
  /// Reaper passes left to retry adopting a sandbox Recover could not reach (guarded by
  /// op_mu). Its PID 1 may be a zombie that the host's init has not reaped yet.
  int adopt_retries_left = 0;
  std::atomic<int> active_ops{0};  // execs/file ops in flight
  /// Of those, the calls that wait for sandboxd's answer (Activity::kCall), and whether a
  /// pause is waiting for them to drain (then new calls are refused; lifecycle_pause.cc).
  std::atomic<int> calls_in_flight{0};
  std::atomic<bool> pausing{false};
  /// The last_activity the store was last given by Touch (guarded by info_mu): the store is
  /// written at most once per kStoreActivityEveryMs (SandboxRegistry::Touch).
  int64_t stored_activity_ms = 0;

  SandboxInfo Snapshot() const {
    std::lock_guard l(info_mu);
    return info;
  }
};

class SandboxRegistry {
 public:
  /// All references must outlive the registry. `config` should have passed Validate();
  /// `backends` is complete (nothing is added to it while the registry lives).
  SandboxRegistry(const ManagerConfig& config, store::Store& store,
                  const isolation::BackendSet& backends, Clock& clock,
                  const TemplateCatalog& templates)
      : cfg(config), store(store), backends(backends), clock(clock), templates(templates) {}
  SandboxRegistry(const SandboxRegistry&) = delete;
  SandboxRegistry& operator=(const SandboxRegistry&) = delete;

  const ManagerConfig& cfg;
  store::Store& store;
  const isolation::BackendSet& backends;
  Clock& clock;
  const TemplateCatalog& templates;

  /// The backend that runs `info`'s sandbox: the one its record names ("" = the default, as
  /// for records written before a create could choose). Errors: kUnavailable when this server
  /// does not run that backend now (started without it, or its host support went away).
  Result<isolation::Backend*> BackendOf(const SandboxInfo& info) const;
  /// The same for a live entry, without copying its info (exec's hot path asks).
  Result<isolation::Backend*> BackendOf(Entry& e) const;

  // ---- entries -----------------------------------------------------------------------------
  /// The live entry `id` visible to `owner` (kAnyOwner sees all). Errors: kNotFound, with one
  /// message for unknown, destroyed and foreign ids (they must be indistinguishable).
  Result<std::shared_ptr<Entry>> Find(const std::string& owner, const std::string& id);
  std::vector<std::shared_ptr<Entry>> AllEntries();
  void Insert(const std::shared_ptr<Entry>& e);
  void Erase(const std::string& id);

  // ---- quota ---------------------------------------------------------------------------------
  /// Takes a quota slot for `e` if one is free (force: even if not, for adopted sandboxes).
  /// Errors: kLimitExceeded naming max_sandboxes.
  Status ReserveSlot(Entry& e, bool force = false);
  /// Gives back e's slot if it holds one.
  void ReleaseSlot(Entry& e);
  /// Moves `from`'s slot to `to` (which holds none) at once: nobody can take it in between.
  /// False when `from` holds no slot.
  bool TransferSlot(Entry& from, Entry& to);

  // ---- state (caller holds e.op_mu) --------------------------------------------------------
  /// Writes state (and error message) to the store, then to the cached info.
  Status WriteState(Entry& e, SandboxState s, std::string_view error_message = {});
  /// Writes the whole record `next` (e's info with a lifecycle change: state, paused_at,
  /// paused_workspace_snapshot_id, timeout_seconds, expires_at, last_activity, updated_at) to the
  /// store, then those fields to the cached info; last_activity only ever moves forward (a
  /// concurrent Touch may be newer). Errors: the store's (the cached info is then unchanged).
  Status WriteLifecycle(Entry& e, const SandboxInfo& next);
  /// kConflict "sandbox X is <state>, not running" unless `info` is running.
  static Status RequireRunning(const SandboxInfo& info);

  // ---- activity ------------------------------------------------------------------------------
  /// The running sandbox of `e`, marked active until `mark` is released (the reaper's idle
  /// timeout counts from then). Errors: kConflict when the sandbox is not running.
  struct Active {
    std::shared_ptr<isolation::Sandbox> sandbox;
    std::shared_ptr<void> mark;  // releasing it ends the activity and touches last_activity
  };
  /// kCall: a request that waits for sandboxd's answer on a server thread (a file operation, a
  /// command run to completion); a pause waits for these to finish rather than freeze them
  /// mid-answer. kStream: a stream, attachment or connection that may stall across a pause.
  enum class Activity { kCall, kStream };
  Result<Active> BeginActivity(const std::shared_ptr<Entry>& e, Activity kind = Activity::kCall);
  /// Sets last_activity to now: in memory at once, in the store when what it holds is older
  /// than kStoreActivityEveryMs. Every exec and file operation touches twice, and the store's
  /// copy is read only when a restarted server applies idle timeouts (lifecycle_recovery.cc),
  /// for which a second's lag is immaterial; two SQLite writes per exec were ~0.1 ms of its
  /// round trip (bench/bench_create.py, "exec round trip").
  void Touch(Entry& e);
  static constexpr int64_t kStoreActivityEveryMs = 1000;

  // ---- sandboxes that die on their own ---------------------------------------------------
  /// The sandbox's live connection to its sandboxd. Errors: kBackend; when the sandbox turns
  /// out to be gone, it is also marked "error" (NoteIfLost).
  Result<std::shared_ptr<protocol::Connection>> ConnectionFor(Entry& e, const Active& a);
  /// After a kBackend/kCancelled failure: if the sandbox's connection is dead or the backend
  /// says it is gone, and no lifecycle change is under way, marks it "error" ("sandbox stopped
  /// unexpectedly") and frees its quota slot. It stays visible and deletable.
  void NoteIfLost(Entry& e, const std::shared_ptr<isolation::Sandbox>& sandbox);
  /// `r`, after noting a lost sandbox when it failed with kBackend or kCancelled.
  template <typename T>
  Result<T> Checked(Entry& e, const Active& a, Result<T> r) {
    if (!r &&
        (r.error().code() == ErrorCode::kBackend || r.error().code() == ErrorCode::kCancelled)) {
      NoteIfLost(e, a.sandbox);
    }
    return r;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // live (not destroyed)
  int64_t slots_used_ = 0;                                 // creating + running
};

}  // namespace asb::core
