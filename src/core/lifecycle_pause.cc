// SandboxLifecycle: pause and resume (lifecycle.h; ADR 0024). The reaper's auto-pause and the
// recovery of paused sandboxes are in lifecycle_recovery.cc.
#include <algorithm>
#include <chrono>
#include <thread>

#include "common/log.h"
#include "core/lifecycle.h"
#include "core/sandbox_registry.h"
#include "core/sandbox_resources.h"

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

}  // namespace

Result<SandboxInfo> SandboxLifecycle::Pause(const std::string& owner, const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::lock_guard op(e->op_mu);
  return PauseLocked(*e, "requested");
}

Result<SandboxInfo> SandboxLifecycle::PauseLocked(Entry& e, std::string_view why) {
  const SandboxInfo info = e.Snapshot();
  if (info.state == SandboxState::kPaused) {
    return Fail(Error::Conflict("sandbox " + info.id + " is already paused"));
  }
  ASB_TRY(SandboxRegistry::RequireRunning(info));
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  if (!backend->Capabilities().pause) {
    return Fail(Error::Unavailable("the " + std::string(backend->name()) +
                                   " backend cannot pause sandboxes on this host"));
  }
  if (!DrainCalls(e)) {
    return Fail(Error::Conflict(
        "sandbox " + info.id +
        " is busy: calls still wait for it (file operations or commands "
        "run to completion); a pause waits 2 s for them, retry when they end (streams and "
        "background processes do not hold a pause back)"));
  }
  // From here new calls are refused until the record says paused (or the pause failed).
  struct ClearPausing {
    Entry& e;
    ~ClearPausing() { e.pausing.store(false); }
  } clear{e};
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
                                             std::optional<int64_t> timeout_seconds) {
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
  return e.Snapshot();
}

}  // namespace asb::core
