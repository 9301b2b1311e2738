// SandboxLifecycle: reconciliation at start (Recover) and the TTL/idle reaper (lifecycle.h).
#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "common/ids.h"
#include "common/log.h"
#include "core/lifecycle.h"
#include "core/sandbox_record.h"
#include "core/sandbox_registry.h"
#include "store/store.h"

namespace asb::core {

namespace {

/// Adopt, retried for about a second while the answer is neither success nor kNotFound: a
/// sandbox whose PID 1 was just killed exists for a moment while its namespace is torn down,
/// refusing connections, and would otherwise be kept as an error instead of being dropped.
Result<std::shared_ptr<isolation::Sandbox>> AdoptPatiently(isolation::Backend& backend,
                                                           const std::string& id) {
  auto sb = backend.Adopt(id);
  for (int attempt = 1; attempt <= 4 && !sb && sb.error().code() != ErrorCode::kNotFound;
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    sb = backend.Adopt(id);
  }
  return sb;
}

/// Reaper passes (about a second each) that keep retrying Adopt after Recover failed to.
constexpr int kAdoptRetryPasses = 30;

}  // namespace

void SandboxLifecycle::MatchPauseToRecord(Entry& e) {
  const SandboxInfo info = e.Snapshot();
  auto found = reg_.BackendOf(info);
  if (!found || !(*found)->Capabilities().pause) return;
  isolation::Backend& backend = **found;
  if (info.state != SandboxState::kPaused) {
    // A crash between a freeze and its record (or a thaw and its record) is undone here.
    if (Status st = backend.Resume(info.id); !st) {
      spdlog::warn("sandbox_id={} thaw after restart: {}", info.id, st.error().ToString());
    }
    return;
  }
  if (Status st = backend.Pause(info.id); !st) {
    // It runs, so the record says so: its TTL restarts from now.
    spdlog::warn("sandbox_id={} could not be paused again after restart, left running: {}", info.id,
                 st.error().ToString());
    SandboxInfo running = info;
    running.state = SandboxState::kRunning;
    running.paused_at_ms = 0;
    running.expires_at_ms =
        reg_.clock.NowUnixMs() + std::max<int64_t>(info.timeout_seconds, 1) * 1000;
    if (Status st = reg_.WriteLifecycle(e, running); !st) {
      spdlog::warn("sandbox_id={} record after restart: {}", info.id, st.error().ToString());
    }
  }
}

bool SandboxLifecycle::RetryAdopt(Entry& e) {
  const SandboxInfo info = e.Snapshot();
  if (info.state != SandboxState::kError || e.adopt_retries_left <= 0) return false;
  --e.adopt_retries_left;
  auto backend = reg_.BackendOf(info);
  if (!backend) {
    e.adopt_retries_left = 0;  // this server does not run its backend: no retry can reach it
    return false;
  }
  auto sb = (*backend)->Adopt(info.id);
  if (sb) {
    {
      std::lock_guard l(e.info_mu);
      e.sandbox = *sb;
    }
    // Adopt leaves a frozen sandbox frozen; the record now says running, and so must it.
    if ((*backend)->Capabilities().pause) (void)(*backend)->Resume(info.id);
    if (!reg_.WriteState(e, SandboxState::kRunning)) return false;
    (void)reg_.ReserveSlot(e, /*force=*/true);
    e.adopt_retries_left = 0;
    spdlog::info("sandbox_id={} adopted on retry", info.id);
    return false;
  }
  if (sb.error().code() != ErrorCode::kNotFound) return false;
  e.adopt_retries_left = 0;
  return static_cast<bool>(DestroyLocked(e, "gone after restart"));
}

Status SandboxLifecycle::Recover() {
  SandboxRegistry& m = reg_;
  ASB_ASSIGN_OR_RETURN(auto records, m.store.ListSandboxes(
                                         {.owner = std::nullopt, .states = {}, .live_only = true}));
  std::set<std::string> live;
  int adopted = 0, dropped = 0, finished = 0;
  for (const auto& rec : records) {
    if (m.Find(kAnyOwner, rec.id)) {  // already known (Recover called twice)
      live.insert(rec.id);
      continue;
    }
    SandboxInfo info = FromRecord(rec);
    auto entry = std::make_shared<Entry>(info);
    std::lock_guard op(entry->op_mu);
    m.Insert(entry);
    if (info.state == SandboxState::kPaused && info.paused_workspace_snapshot_id) {
      // Paused with its files only: it has no runtime, and holds no slot. One a crash left
      // (mid-pause or mid-resume) is not in `live`, so the pass below destroys it.
      ++adopted;
      spdlog::info("sandbox_id={} kept paused (files only, in {})", info.id,
                   *info.paused_workspace_snapshot_id);
      continue;
    }
    switch (info.state) {
      case SandboxState::kRunning:
      case SandboxState::kPaused: {
        // A backend whose sandboxes end with the server: the record's sandbox is gone. One
        // this server does not run: kUnavailable, so the record stays as an error.
        auto backend = m.BackendOf(info);
        auto sb = !backend ? Result<std::shared_ptr<isolation::Sandbox>>(Fail(backend.error()))
                  : (*backend)->Capabilities().adopt
                      ? AdoptPatiently(**backend, info.id)
                      : Result<std::shared_ptr<isolation::Sandbox>>(Fail(Error::NotFound(
                            "the " + std::string((*backend)->name()) + " backend cannot adopt")));
        if (sb) {
          {
            std::lock_guard l(entry->info_mu);
            entry->sandbox = *sb;
          }
          (void)m.ReserveSlot(*entry, /*force=*/true);
          live.insert(info.id);
          ++adopted;
          MatchPauseToRecord(*entry);
          spdlog::info("sandbox_id={} adopted {} (expires_at={})", info.id,
                       SandboxStateName(entry->Snapshot().state), info.expires_at_ms);
        } else if (sb.error().code() == ErrorCode::kNotFound) {
          // Its sandbox is gone: drop the record (destroy also clears any remnant we own).
          Status st = DestroyLocked(*entry, "gone after restart");
          if (!st) live.insert(info.id);  // stays "stopping"; the reaper retries
          ++dropped;
        } else {
          // Still there but unusable: keep it visible as an error (deletable, reaped at TTL),
          // and keep its resources (they are named by this live record).
          spdlog::warn("sandbox_id={} adopt failed: {}", info.id, sb.error().ToString());
          (void)m.WriteState(
              *entry, SandboxState::kError,
              "could not be adopted after restart: " + sb.error().ClientSafeMessage());
          entry->adopt_retries_left = backend ? kAdoptRetryPasses : 0;
          live.insert(info.id);
        }
        break;
      }
      case SandboxState::kCreating:
      case SandboxState::kStopping: {
        // An interrupted transition: finish it by destroying.
        Status st = DestroyLocked(*entry, "interrupted " + rec.state + " finished at restart");
        if (!st) live.insert(info.id);
        ++finished;
        break;
      }
      case SandboxState::kError:
        live.insert(info.id);
        break;
      case SandboxState::kDestroyed:
        m.Erase(info.id);
        break;
    }
  }

  // Resources we own that no live record names: destroy them. Each backend lists only what it
  // made itself, so nothing foreign is touched.
  int orphans = 0;
  for (isolation::Backend* backend : m.backends.Running()) {
    auto owned = backend->ListOwned();
    if (!owned) {
      spdlog::warn("recover: cannot list {} backend resources: {}", backend->name(),
                   owned.error().ToString());
      continue;
    }
    for (const auto& id : *owned) {
      if (live.count(id) != 0) continue;
      if (!IsValidId(id, "sb_")) {
        spdlog::warn("recover: backend listed a malformed id, left alone");
        continue;
      }
      if (Status st = backend->Destroy(id); !st) {
        spdlog::warn("sandbox_id={} orphan destroy failed: {}", id, st.error().ToString());
      } else {
        ++orphans;
        spdlog::info("sandbox_id={} orphan destroyed at restart ({} backend)", id, backend->name());
      }
    }
  }
  spdlog::info("recover: {} adopted, {} dropped, {} interrupted finished, {} orphans destroyed",
               adopted, dropped, finished, orphans);
  adopted_total_ += adopted;
  dropped_total_ += dropped;
  orphans_total_ += orphans;
  return {};
}

SandboxLifecycle::MaintenanceCounts SandboxLifecycle::Counts() const {
  return {reaped_total_.load(), adopted_total_.load(), dropped_total_.load(), orphans_total_.load(),
          auto_paused_total_.load()};
}

int SandboxLifecycle::ReapOnce() {
  SandboxRegistry& m = reg_;
  const int64_t now = m.clock.NowUnixMs();
  int reaped = 0;
  for (const auto& e : m.AllEntries()) {
    const SandboxInfo info = e->Snapshot();
    std::string why;
    switch (info.state) {
      case SandboxState::kPaused:
        if (info.expires_at_ms <= now) why = "paused longer than paused_timeout_seconds";
        break;
      case SandboxState::kRunning:
      case SandboxState::kError:
        if (info.expires_at_ms <= now) {
          why = "ttl expired";
        } else if (info.state == SandboxState::kError) {
          why = "retry adopt";  // a no-op unless Recover left adoption retries
        } else if (info.state == SandboxState::kRunning && info.idle_timeout_seconds > 0 &&
                   e->active_ops.load() == 0 &&
                   info.last_activity_at_ms + info.idle_timeout_seconds * 1000 <= now) {
          why = "idle timeout";
        }
        break;
      case SandboxState::kStopping:
        why = "retrying stuck stop";
        break;
      case SandboxState::kCreating:
      case SandboxState::kDestroyed:
        break;
    }
    if (why.empty()) continue;
    // Never wait for a sandbox busy with a lifecycle change; the next pass looks again.
    std::unique_lock op(e->op_mu, std::try_to_lock);
    if (!op.owns_lock()) continue;
    // Re-check under the lock: a SetTimeout may have extended it meanwhile.
    const SandboxInfo now_info = e->Snapshot();
    if (now_info.state == SandboxState::kDestroyed) continue;
    if (why == "retry adopt") {
      if (RetryAdopt(*e)) ++reaped;
      continue;
    }
    if (why == "ttl expired" && now_info.expires_at_ms > now) continue;
    if (why == "idle timeout" &&
        (e->active_ops.load() != 0 ||
         now_info.last_activity_at_ms + now_info.idle_timeout_seconds * 1000 > now)) {
      continue;
    }
    if (now_info.state == SandboxState::kPaused && now_info.expires_at_ms > now) continue;
    if (info.state == SandboxState::kPaused && now_info.state != SandboxState::kPaused) continue;
    if (now_info.state == SandboxState::kRunning && now_info.auto_pause &&
        (why == "ttl expired" || why == "idle timeout")) {
      // E2B's autoPause: the timeout pauses it. One that cannot be paused ends as its TTL says.
      auto paused = PauseLocked(e, "auto-pause: " + why, now_info.auto_pause_keep_memory);
      if (paused) {
        ++auto_paused_total_;
        continue;
      }
      spdlog::warn("sandbox_id={} auto-pause failed, destroying it: {}", now_info.id,
                   paused.error().ToString());
    }
    if (DestroyLocked(*e, why)) {
      ++reaped;
      ++reaped_total_;
    }
  }
  return reaped;
}

}  // namespace asb::core
