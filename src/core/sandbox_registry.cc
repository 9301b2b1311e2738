// SandboxRegistry: entries, quota slots, state writes, activity and lost-sandbox detection
// (sandbox_registry.h).
#include "core/sandbox_registry.h"

#include <algorithm>

#include "common/ids.h"
#include "common/log.h"
#include "core/sandbox_record.h"
#include "store/store.h"

namespace asb::core {

namespace {

/// Ends an activity: decrements the in-flight count and touches last_activity.
struct ActivityMark {
  ActivityMark(std::shared_ptr<Entry> e, std::function<void(Entry&)> touch, bool call)
      : entry(std::move(e)), touch(std::move(touch)), call(call) {
    entry->active_ops.fetch_add(1);
  }
  ~ActivityMark() {
    touch(*entry);
    if (call) entry->calls_in_flight.fetch_sub(1);
    entry->active_ops.fetch_sub(1);
  }
  std::shared_ptr<Entry> entry;
  std::function<void(Entry&)> touch;
  bool call;
};

}  // namespace

// ---- entries --------------------------------------------------------------------------------

namespace {

Result<isolation::Backend*> FindBackend(const isolation::BackendSet& backends,
                                        const std::string& id, const std::string& name) {
  auto b = backends.Find(name);
  if (!b && b.error().code() == ErrorCode::kInvalidArgument) {
    // Not the caller's input: a record from a server that ran a backend this one does not.
    return Fail(Error::Unavailable("sandbox " + id + " runs on the " + name +
                                   " backend, which this server does not run"));
  }
  return b;
}

}  // namespace

Result<isolation::Backend*> SandboxRegistry::BackendOf(const SandboxInfo& info) const {
  return FindBackend(backends, info.id, info.backend);
}

Result<isolation::Backend*> SandboxRegistry::BackendOf(Entry& e) const {
  std::lock_guard l(e.info_mu);
  return FindBackend(backends, e.info.id, e.info.backend);
}

Result<std::shared_ptr<Entry>> SandboxRegistry::Find(const std::string& owner,
                                                     const std::string& id) {
  std::shared_ptr<Entry> e;
  {
    std::lock_guard l(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end()) e = it->second;
  }
  if (e) {
    std::lock_guard l(e->info_mu);
    if ((owner == kAnyOwner || e->info.owner == owner) &&
        e->info.state != SandboxState::kDestroyed) {
      return e;
    }
  }
  // One message for unknown, destroyed and foreign ids: they must be indistinguishable.
  std::string shown = IsValidId(id, "sb_") ? id : "(invalid id)";
  return Fail(Error::NotFound("sandbox " + shown + " not found"));
}

std::vector<std::shared_ptr<Entry>> SandboxRegistry::AllEntries() {
  std::lock_guard l(mu_);
  std::vector<std::shared_ptr<Entry>> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  return out;
}

void SandboxRegistry::Insert(const std::shared_ptr<Entry>& e) {
  std::lock_guard l(mu_);
  entries_[e->Snapshot().id] = e;
}

void SandboxRegistry::Erase(const std::string& id) {
  std::lock_guard l(mu_);
  entries_.erase(id);
}

Status SandboxRegistry::ReserveSlot(Entry& e, bool force) {
  std::lock_guard l(mu_);
  if (e.holds_slot) return {};
  if (!force && slots_used_ >= cfg.limits.max_sandboxes) {
    return Fail(
        Error::LimitExceeded("sandbox limit reached: " + std::to_string(cfg.limits.max_sandboxes) +
                             " sandboxes are running or being created"));
  }
  ++slots_used_;
  e.holds_slot = true;
  return {};
}

bool SandboxRegistry::TransferSlot(Entry& from, Entry& to) {
  std::lock_guard l(mu_);
  if (!from.holds_slot || to.holds_slot) return false;
  from.holds_slot = false;
  to.holds_slot = true;
  return true;
}

void SandboxRegistry::ReleaseSlot(Entry& e) {
  std::lock_guard l(mu_);
  if (!e.holds_slot) return;
  --slots_used_;
  e.holds_slot = false;
}

// ---- state ----------------------------------------------------------------------------------

Status SandboxRegistry::WriteState(Entry& e, SandboxState s, std::string_view error_message) {
  const int64_t now = clock.NowUnixMs();
  const std::string id = e.Snapshot().id;
  ASB_TRY(store.SetSandboxState(id, SandboxStateName(s), error_message, now));
  std::lock_guard l(e.info_mu);
  e.info.state = s;
  e.info.error_message = std::string(error_message);
  e.info.updated_at_ms = now;
  return {};
}

Status SandboxRegistry::WriteLifecycle(Entry& e, const SandboxInfo& next) {
  ASB_TRY(store.UpdateSandbox(ToRecord(next)));
  std::lock_guard l(e.info_mu);
  e.info.state = next.state;
  e.info.paused_at_ms = next.paused_at_ms;
  e.info.paused_workspace_snapshot_id = next.paused_workspace_snapshot_id;
  e.info.timeout_seconds = next.timeout_seconds;
  e.info.expires_at_ms = next.expires_at_ms;
  e.info.last_activity_at_ms = std::max(e.info.last_activity_at_ms, next.last_activity_at_ms);
  e.info.updated_at_ms = next.updated_at_ms;
  return {};
}

namespace {

// kConflict for an operation on a sandbox that does not run; a paused one says how to go on.
Error NotRunning(const std::string& id, SandboxState state) {
  if (state == SandboxState::kPaused) {
    return Error::Conflict("sandbox " + id + " is paused: resume it first");
  }
  return Error::Conflict("sandbox " + id + " is " + std::string(SandboxStateName(state)) +
                         ", not running");
}

}  // namespace

Status SandboxRegistry::RequireRunning(const SandboxInfo& info) {
  if (info.state == SandboxState::kRunning) return {};
  return Fail(NotRunning(info.id, info.state));
}

// ---- activity -------------------------------------------------------------------------------

void SandboxRegistry::Touch(Entry& e) {
  const int64_t now = clock.NowUnixMs();
  std::string id;
  {
    std::lock_guard l(e.info_mu);
    if (e.info.state == SandboxState::kDestroyed) return;
    e.info.last_activity_at_ms = now;
    if (now - e.stored_activity_ms < kStoreActivityEveryMs) return;
    e.stored_activity_ms = now;
    id = e.info.id;
  }
  if (Status st = store.TouchSandbox(id, now); !st) {
    spdlog::debug("sandbox_id={} touch: {}", id, st.error().ToString());
  }
}

Result<SandboxRegistry::Active> SandboxRegistry::BeginActivity(const std::shared_ptr<Entry>& e,
                                                               Activity kind) {
  Active a;
  {
    std::lock_guard l(e->info_mu);
    if (e->info.state != SandboxState::kRunning || !e->sandbox) {
      return Fail(NotRunning(e->info.id, e->info.state));
    }
    a.sandbox = e->sandbox;
  }
  const bool call = kind == Activity::kCall;
  if (call) {
    // Counted first, then the flag read: a pause that set the flag before this sees the count
    // (and waits), or this sees the flag (and refuses). Both orders are seq_cst.
    e->calls_in_flight.fetch_add(1);
    if (e->pausing.load()) {
      e->calls_in_flight.fetch_sub(1);
      return Fail(NotRunning(a.sandbox->id(), SandboxState::kPaused));
    }
  }
  auto mark = std::make_shared<ActivityMark>(
      e, [this](Entry& en) { Touch(en); }, call);
  Touch(*e);
  a.mark = std::move(mark);
  return a;
}

// ---- sandboxes that die on their own -------------------------------------------------------

Result<std::shared_ptr<protocol::Connection>> SandboxRegistry::ConnectionFor(Entry& e,
                                                                             const Active& a) {
  auto conn = a.sandbox->connection();
  if (!conn || !conn->alive()) {
    NoteIfLost(e, a.sandbox);
    return Fail(Error::Backend("sandbox " + a.sandbox->id() + ": no connection to its sandboxd"));
  }
  return conn;
}

void SandboxRegistry::NoteIfLost(Entry& e, const std::shared_ptr<isolation::Sandbox>& sandbox) {
  auto conn = sandbox->connection();
  bool lost = conn != nullptr && !conn->alive();
  if (!lost) {
    auto usage = sandbox->Usage();
    lost = !usage && usage.error().code() == ErrorCode::kNotFound;
  }
  if (!lost) return;
  // A Destroy in progress holds op_mu and will finish the job; never wait for it.
  std::unique_lock op(e.op_mu, std::try_to_lock);
  if (!op.owns_lock()) return;
  {
    std::lock_guard l(e.info_mu);
    if (e.info.state != SandboxState::kRunning || e.sandbox != sandbox) return;
  }
  const std::string why = sandbox->LostReason();
  const std::string msg = why.empty() ? "sandbox stopped unexpectedly (its sandboxd is gone)"
                                      : "sandbox stopped unexpectedly: " + why;
  if (Status st = WriteState(e, SandboxState::kError, msg); !st) {
    spdlog::warn("sandbox_id={} marking lost sandbox: {}", sandbox->id(), st.error().ToString());
    return;
  }
  ReleaseSlot(e);
  spdlog::warn("sandbox_id={} {}", sandbox->id(), msg);
}

}  // namespace asb::core
