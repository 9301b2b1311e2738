// SandboxLifecycle: pause and resume (lifecycle.h; ADR 0024). The reaper's auto-pause and the
// recovery of paused sandboxes are in lifecycle_recovery.cc.
#include <algorithm>
#include <chrono>
#include <thread>

#include "common/log.h"
#include "core/lifecycle.h"
#include "core/sandbox_registry.h"
#include "core/sandbox_resources.h"
#include "protocol/client.h"

namespace asb::core {

namespace {

// A backend's failure as the caller sees it: a sandbox the backend no longer finds, or a write
// it refused, is the host's trouble (kBackend); "cannot" and "not in time" keep their codes.
Error BackendFailure(Error e, const std::string& what) {
  const ErrorCode c = e.code();
  if (c != ErrorCode::kUnavailable && c != ErrorCode::kTimeout)
    e = std::move(e).WithCode(ErrorCode::kBackend);
  return std::move(e).WithContext(what);
}

// How long a pause waits for calls in flight (SandboxRegistry::Activity::kCall) to finish.
// A call frozen mid-answer would hold its server thread, and its tenant's request slot, for as
// long as the sandbox stays paused (found by a breaker: 496 of 512 blocking threads held by five
// tenants' paused sandboxes).
constexpr auto kPauseDrain = std::chrono::seconds(2);

// Sets e.pausing (new calls are refused) and waits for the calls in flight to finish. Returns
// false, with the flag cleared again, when some did not within kPauseDrain.
bool DrainCalls(Entry& e) {
  e.pausing.store(true);
  const auto deadline = std::chrono::steady_clock::now() + kPauseDrain;
  while (e.calls_in_flight.load() != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      e.pausing.store(false);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// A pause that found calls still running after kPauseDrain.
Error Busy(const std::string& id) {
  return Error::Conflict("sandbox " + id +
                         " is busy: calls still wait for it (file operations or commands "
                         "run to completion); a pause waits 2 s for them, retry when they end "
                         "(streams and background processes do not hold a pause back)");
}

// Clears Entry::pausing when the pause that set it is over, however it ended.
struct ClearPausing {
  Entry& e;
  ~ClearPausing() { e.pausing.store(false); }
};

}  // namespace

Result<SandboxInfo> SandboxLifecycle::Pause(const std::string& owner, const std::string& id,
                                            bool keep_memory) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::lock_guard op(e->op_mu);
  return PauseLocked(e, "requested", keep_memory);
}

Result<SandboxInfo> SandboxLifecycle::PauseLocked(const std::shared_ptr<Entry>& entry,
                                                  std::string_view why, bool keep_memory) {
  Entry& e = *entry;
  const SandboxInfo info = e.Snapshot();
  if (info.state == SandboxState::kPaused) {
    return Fail(Error::Conflict("sandbox " + info.id + " is already paused"));
  }
  ASB_TRY(SandboxRegistry::RequireRunning(info));
  if (!keep_memory) return PauseFilesOnlyLocked(entry, why);
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  if (!backend->Capabilities().pause) {
    return Fail(Error::Unavailable("the " + std::string(backend->name()) +
                                   " backend cannot pause sandboxes on this host"));
  }
  if (!DrainCalls(e)) return Fail(Busy(info.id));
  // From here new calls are refused until the record says paused (or the pause failed).
  ClearPausing clear{e};
  // The side effect first, then the record (lifecycle.h): a crash in between leaves a running
  // record of a frozen sandbox, which Recover thaws.
  if (Status st = backend->Pause(info.id); !st) {
    return Fail(BackendFailure(std::move(st).error(), "pause sandbox " + info.id));
  }
  const int64_t now = reg_.clock.NowUnixMs();
  SandboxInfo paused = info;
  paused.state = SandboxState::kPaused;
  paused.paused_at_ms = now;
  paused.expires_at_ms = now + reg_.cfg.limits.paused_timeout_seconds * 1000;
  paused.updated_at_ms = now;
  if (Status st = reg_.WriteLifecycle(e, paused); !st) {
    (void)backend->Resume(info.id);  // the record still says running, and so must it
    return Fail(std::move(st).error().WithContext("pause sandbox " + info.id));
  }
  spdlog::info("sandbox_id={} paused ({})", info.id, why);
  return e.Snapshot();
}

Status SandboxLifecycle::WakeIfAutoResume(const std::string& owner, const std::string& id) {
  auto entry = reg_.Find(owner, id);
  if (!entry) return Fail(std::move(entry).error());
  {
    // On every exec and file call: two fields under the lock, not a copy of the record.
    std::lock_guard l((*entry)->info_mu);
    if ((*entry)->info.state != SandboxState::kPaused || !(*entry)->info.auto_resume) return {};
  }
  auto resumed = Resume(owner, id, std::nullopt);
  if (!resumed && resumed.error().code() != ErrorCode::kConflict) {
    return Fail(std::move(resumed).error());
  }
  if (resumed) spdlog::info("sandbox_id={} resumed by a request (auto_resume)", id);
  return {};
}

Result<SandboxInfo> SandboxLifecycle::Resume(const std::string& owner, const std::string& id,
                                             std::optional<int64_t> timeout_seconds,
                                             bool keep_memory) {
  const Limits& lim = reg_.cfg.limits;
  if (timeout_seconds && *timeout_seconds < lim.min_timeout_seconds) {
    return Fail(RangeError("timeout_seconds", lim.min_timeout_seconds, lim.max_timeout_seconds,
                           *timeout_seconds));
  }
  ASB_ASSIGN_OR_RETURN(auto entry, reg_.Find(owner, id));
  Entry& e = *entry;
  std::lock_guard op(e.op_mu);
  const SandboxInfo info = e.Snapshot();
  if (info.state != SandboxState::kPaused) {
    return Fail(Error::Conflict("sandbox " + info.id + " is " +
                                std::string(SandboxStateName(info.state)) + ", not paused"));
  }
  int64_t seconds = timeout_seconds.value_or(info.timeout_seconds);
  if (seconds < lim.min_timeout_seconds) seconds = lim.default_timeout_seconds;
  seconds = std::min(seconds, lim.max_timeout_seconds);
  if (info.paused_workspace_snapshot_id) return ResumeFilesOnlyLocked(entry, seconds);
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  if (Status st = backend->Resume(info.id); !st) {
    return Fail(BackendFailure(std::move(st).error(), "resume sandbox " + info.id));
  }
  const int64_t now = reg_.clock.NowUnixMs();
  SandboxInfo running = info;
  running.state = SandboxState::kRunning;
  running.paused_at_ms = 0;
  running.timeout_seconds = seconds;
  running.expires_at_ms = now + seconds * 1000;
  running.last_activity_at_ms = now;
  running.updated_at_ms = now;
  if (Status st = reg_.WriteLifecycle(e, running); !st) {
    (void)backend->Pause(info.id);  // the record still says paused, and so must it
    return Fail(std::move(st).error().WithContext("resume sandbox " + info.id));
  }
  spdlog::info("sandbox_id={} resumed (ttl {} s)", info.id, seconds);
  if (!keep_memory) {
    // A reboot: what ran when it paused does not run on.
    ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                         reg_.BeginActivity(entry, SandboxRegistry::Activity::kStream));
    ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(e, act));
    ASB_ASSIGN_OR_RETURN(const uint64_t ended, reg_.Checked(e, act, protocol::KillAll(*conn)));
    spdlog::info("sandbox_id={} resumed by a reboot: {} process(es) ended", info.id, ended);
  }
  return e.Snapshot();
}

// ---- files-only pause -------------------------------------------------------------------------

Result<SandboxInfo> SandboxLifecycle::PauseFilesOnlyLocked(const std::shared_ptr<Entry>& entry,
                                                           std::string_view why) {
  Entry& e = *entry;
  const SandboxInfo info = e.Snapshot();
  if (keeper_ == nullptr) {
    return Fail(Error::Unavailable("this server cannot keep a paused sandbox's files"));
  }
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  if (!DrainCalls(e)) return Fail(Busy(info.id));
  ClearPausing clear{e};
  // The workspace first, as a snapshot nobody sees (a crash from here until the record names
  // it leaves an unnamed snapshot, which recovery removes, and the sandbox running).
  auto kept = keeper_->KeepWorkspace(entry);
  if (!kept) return Fail(std::move(kept).error().WithContext("pause sandbox " + info.id));
  const std::string snapshot_id = *kept;
  const int64_t now = reg_.clock.NowUnixMs();
  SandboxInfo paused = info;
  paused.state = SandboxState::kPaused;
  paused.paused_at_ms = now;
  paused.paused_workspace_snapshot_id = snapshot_id;
  paused.expires_at_ms = now + reg_.cfg.limits.paused_timeout_seconds * 1000;
  paused.updated_at_ms = now;
  // Then the record, and only then the runtime goes: a crash after the record leaves a paused
  // record that names its files, and Recover destroys whatever runtime is left.
  if (Status st = reg_.WriteLifecycle(e, paused); !st) {
    keeper_->ReleaseWorkspace(snapshot_id);
    return Fail(std::move(st).error().WithContext("pause sandbox " + info.id));
  }
  reg_.ReleaseSlot(e);  // it costs disk only now
  std::shared_ptr<isolation::Sandbox> sandbox;
  {
    std::lock_guard l(e.info_mu);
    sandbox = std::move(e.sandbox);
  }
  if (Status st = backend->Destroy(info.id); !st) {
    // The record is right (paused); Resume and Recover remove what is left before making it.
    spdlog::warn("sandbox_id={} files-only pause: removing the runtime: {}", info.id,
                 st.error().ToString());
  }
  if (sandbox) {
    // Streams still open on it end (their channels see an error event).
    if (auto conn = sandbox->connection()) conn->Close();
  }
  spdlog::info("sandbox_id={} paused, files only ({}; workspace kept as {})", info.id, why,
               snapshot_id);
  return e.Snapshot();
}

Result<SandboxInfo> SandboxLifecycle::ResumeFilesOnlyLocked(const std::shared_ptr<Entry>& entry,
                                                            int64_t seconds) {
  Entry& e = *entry;
  const SandboxInfo info = e.Snapshot();
  const std::string snapshot_id = info.paused_workspace_snapshot_id.value_or("");
  if (keeper_ == nullptr) {
    return Fail(Error::Unavailable("this server cannot keep a paused sandbox's files"));
  }
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  ASB_TRY_CTX(reg_.ReserveSlot(e), "resume sandbox " + info.id);
  // Undoes a half-made resume: the record still says paused, so nothing may run.
  auto undo = [&](Error err) -> Error {
    std::shared_ptr<isolation::Sandbox> sandbox;
    {
      std::lock_guard l(e.info_mu);
      sandbox = std::move(e.sandbox);
    }
    if (Status st = backend->Destroy(info.id); !st) {
      spdlog::warn("sandbox_id={} cleanup after a failed resume: {}", info.id,
                   st.error().ToString());
    }
    if (sandbox) {
      if (auto conn = sandbox->connection()) conn->Close();
    }
    reg_.ReleaseSlot(e);
    return BackendFailure(std::move(err), "resume sandbox " + info.id);
  };
  // A runtime the pause could not remove would stand in the way of the new one.
  (void)backend->Destroy(info.id);
  const std::string image = keeper_->KeptImage(snapshot_id);
  auto made = RecreateRuntime(info, image);
  if (!made) return Fail(undo(std::move(made).error()));
  {
    std::lock_guard l(e.info_mu);
    e.sandbox = *made;
  }
  if (image.empty()) {
    if (Status st = keeper_->RestoreWorkspace(entry, snapshot_id); !st) {
      return Fail(undo(std::move(st).error()));
    }
  }
  const int64_t now = reg_.clock.NowUnixMs();
  SandboxInfo running = info;
  running.state = SandboxState::kRunning;
  running.paused_at_ms = 0;
  running.paused_workspace_snapshot_id.reset();
  running.timeout_seconds = seconds;
  running.expires_at_ms = now + seconds * 1000;
  running.last_activity_at_ms = now;
  running.updated_at_ms = now;
  if (Status st = reg_.WriteLifecycle(e, running); !st) {
    return Fail(undo(std::move(st).error()));
  }
  // After the record: a crash before this leaves a snapshot no record names (recovery drops it).
  keeper_->ReleaseWorkspace(snapshot_id);
  spdlog::info("sandbox_id={} resumed from its files (ttl {} s)", info.id, seconds);
  return e.Snapshot();
}

}  // namespace asb::core
