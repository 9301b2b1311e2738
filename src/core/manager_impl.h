// Private to core/: the state behind SandboxManager, shared by its .cc files
// (sandbox_manager.cc: lifecycle; manager_recovery.cc: Recover and the reaper;
// manager_ops.cc: exec and files).
//
// Locking, from outside in (never the other way round):
//   Entry::op_mu   serializes lifecycle changes of one sandbox (create, destroy, timeout).
//                  Held across the backend call of that change, so only this sandbox waits.
//   Impl::mu_      guards the entries_ map and the quota count; held for lookups only.
//   Entry::info_mu guards Entry::info and Entry::sandbox; held for copies only, so Get/List
//                  never wait for a backend call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/sandbox_manager.h"
#include "store/store.h"

namespace asb::core {

struct Entry {
  explicit Entry(SandboxInfo i) : info(std::move(i)) {}
  std::mutex op_mu;
  mutable std::mutex info_mu;
  SandboxInfo info;                             // guarded by info_mu
  std::shared_ptr<isolation::Sandbox> sandbox;  // guarded by info_mu; set while running
  bool holds_slot = false;                      // guarded by Impl::mu_
  /// Reaper passes left to retry adopting a sandbox Recover could not reach (guarded by
  /// op_mu). Its PID 1 may be a zombie that the host's init has not reaped yet.
  int adopt_retries_left = 0;
  std::atomic<int> active_ops{0};  // execs/file ops in flight

  SandboxInfo Snapshot() const {
    std::lock_guard l(info_mu);
    return info;
  }
};

/// Spec JSON of the store record <-> SandboxInfo (core owns the JSON's shape).
std::string EncodeSpecJson(const SandboxInfo& info);
/// Fills info's spec fields from JSON; unknown or malformed members are ignored.
void DecodeSpecJson(std::string_view json, SandboxInfo* info);
store::SandboxRecord ToRecord(const SandboxInfo& info);
SandboxInfo FromRecord(const store::SandboxRecord& r);

/// Checks an env map (sandbox or exec): keys non-empty without '=' or NUL, values without NUL.
/// `field` names it in the error ("env").
Status ValidateEnv(const std::map<std::string, std::string>& env, std::string_view field);

/// How an exec's output reaches its caller, which decides its default output cap.
enum class ExecDelivery {
  /// Collected in memory and answered at the end: each stream keeps at most
  /// min(o.max_output_bytes, lim.max_exec_output_bytes) and flags what it dropped.
  kCollected,
  /// Streamed to a reader with flow control (the channel's window is the backpressure): no cap
  /// unless the caller asks for one with o.max_output_bytes, which is then honoured as given.
  kStreamed,
};

/// The sandboxd request of an exec: command/argv, env, workdir and user checked, timeout and
/// output cap from `lim` and `delivery` (manager_ops.cc). An empty o.workdir / o.user takes
/// `defaults` (the sandbox's, SandboxInfo::default_workdir/default_user): the one place exec,
/// background processes and PTYs get them. Errors: kInvalidArgument.
Result<protocol::ExecRequest> BuildExecRequest(const Limits& lim, const ExecOptions& o,
                                               const CommandDefaults& defaults,
                                               ExecDelivery delivery = ExecDelivery::kCollected);
/// The command defaults recorded for the sandbox of `e`.
CommandDefaults DefaultsOf(const Entry& e);

class SandboxManager::Impl {
 public:
  Impl(const ManagerConfig& config, store::Store& store, isolation::Backend& backend, Clock& clock,
       const TemplateCatalog& templates)
      : cfg(config), store(store), backend(backend), clock(clock), templates(templates) {}

  const ManagerConfig& cfg;
  store::Store& store;
  isolation::Backend& backend;
  Clock& clock;
  const TemplateCatalog& templates;

  // ---- counters for metrics (SandboxManager::Counts) ---------------------------------------
  std::atomic<int64_t> reaped_total{0};
  std::atomic<int64_t> adopted_total{0};
  std::atomic<int64_t> dropped_total{0};
  std::atomic<int64_t> orphans_total{0};

  // ---- registry ----------------------------------------------------------------------------
  /// The live entry `id` visible to `owner`, or kNotFound.
  Result<std::shared_ptr<Entry>> Find(const std::string& owner, const std::string& id);
  std::vector<std::shared_ptr<Entry>> AllEntries();
  void Insert(const std::shared_ptr<Entry>& e);
  void Erase(const std::string& id);
  /// Takes a quota slot for `e` if one is free (force: even if not, for adopted sandboxes).
  /// Errors: kLimitExceeded.
  Status ReserveSlot(Entry& e, bool force = false);
  /// Gives back e's slot if it holds one.
  void ReleaseSlot(Entry& e);
  int64_t SlotsUsed();

  // ---- transitions (caller holds e.op_mu) ---------------------------------------------------
  /// Writes state (and error message) to the store, then to the cached info.
  Status WriteState(Entry& e, SandboxState s, std::string_view error_message = {});
  /// stopping -> Backend::Destroy -> destroyed, and removal from the registry. `why` is logged.
  Status DestroyLocked(Entry& e, std::string_view why);

  // ---- activity ------------------------------------------------------------------------------
  /// The running sandbox of `e`, marked active until the returned mark is released.
  /// Errors: kConflict when the sandbox is not running.
  struct Active {
    std::shared_ptr<isolation::Sandbox> sandbox;
    std::shared_ptr<void> mark;  // releasing it ends the activity and touches last_activity
  };
  Result<Active> BeginActivity(const std::shared_ptr<Entry>& e);
  void Touch(Entry& e);

  // ---- sandboxes that die on their own ---------------------------------------------------
  /// The sandbox's live connection. Errors: kBackend; when the sandbox turns out to be gone,
  /// it is also marked "error" (NoteIfLost).
  Result<std::shared_ptr<protocol::Connection>> ConnectionFor(Entry& e, const Active& a);
  /// After a kBackend/kCancelled failure: if the sandbox's connection is dead or the backend
  /// says it is gone, and no lifecycle change is under way, marks it "error" ("sandbox stopped
  /// unexpectedly") and frees its quota slot. It stays visible and deletable.
  void NoteIfLost(Entry& e, const std::shared_ptr<isolation::Sandbox>& sandbox);
  template <typename T>
  Result<T> Checked(Entry& e, const Active& a, Result<T> r) {
    if (!r &&
        (r.error().code() == ErrorCode::kBackend || r.error().code() == ErrorCode::kCancelled)) {
      NoteIfLost(e, a.sandbox);
    }
    return r;
  }

  // ---- reaper --------------------------------------------------------------------------------
  void ReaperLoop();
  /// See manager_recovery.cc; caller holds e.op_mu.
  bool RetryAdopt(Entry& e);
  std::function<void()> reap_fn;  // SandboxManager::ReapOnce, bound by the manager
  std::mutex reaper_mu;
  std::condition_variable reaper_cv;
  bool reaper_stop = false;
  std::thread reaper;

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // live (not destroyed)
  int64_t slots_used_ = 0;                                 // creating + running
};

}  // namespace asb::core
