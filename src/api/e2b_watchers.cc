#include "api/e2b_watchers.h"

#include <chrono>
#include <vector>

#include "common/ids.h"
#include "core/sandbox_types.h"

namespace asb::api {

namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Error UnknownWatcher(const std::string& id) {
  return Error::NotFound("watcher " + id + " not found (removed, ended, or idle for 10 minutes)");
}

}  // namespace

void E2bWatchers::PruneLocked(int64_t now_ms, bool check_sandboxes) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now_ms - it->second.last_used_ms >= kIdleMs ||
        (check_sandboxes && running_ && !running_(it->second.sandbox_id))) {
      it->second.watch->Cancel();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

E2bWatchers::Entry* E2bWatchers::FindLocked(const std::string& owner, const std::string& sandbox_id,
                                            const std::string& watcher_id) {
  auto it = entries_.find(watcher_id);
  if (it == entries_.end() || it->second.sandbox_id != sandbox_id) return nullptr;
  // An admin key (kAnyOwner) reaches every tenant's watchers, as it reaches their sandboxes.
  if (owner != core::kAnyOwner && it->second.owner != owner) return nullptr;
  return &it->second;
}

Result<std::string> E2bWatchers::Add(const std::string& owner, const std::string& sandbox_id,
                                     std::shared_ptr<core::FileWatch> watch) {
  std::lock_guard lock(mu_);
  int64_t now = SteadyMs();
  PruneLocked(now, /*check_sandboxes=*/true);
  size_t owned = 0;
  for (const auto& [id, e] : entries_) owned += e.owner == owner;
  if (entries_.size() >= kMaxWatchers || owned >= kMaxWatchersPerOwner) {
    watch->Cancel();
    size_t cap = entries_.size() >= kMaxWatchers ? kMaxWatchers : kMaxWatchersPerOwner;
    return Fail(Error(ErrorCode::kLimitExceeded,
                      "at most " + std::to_string(cap) +
                          (cap == kMaxWatchers ? " watchers may exist at once"
                                               : " watchers per tenant may exist at once") +
                          "; remove some"));
  }
  std::string id = "w_" + RandomHex(16);
  entries_.emplace(id, Entry{owner, sandbox_id, std::move(watch), now});
  return id;
}

Result<E2bWatchers::Taken> E2bWatchers::Take(const std::string& owner,
                                             const std::string& sandbox_id,
                                             const std::string& watcher_id, size_t max_events) {
  std::shared_ptr<core::FileWatch> watch;
  {
    std::lock_guard lock(mu_);
    int64_t now = SteadyMs();
    PruneLocked(now, /*check_sandboxes=*/false);
    Entry* e = FindLocked(owner, sandbox_id, watcher_id);
    if (e == nullptr) return Fail(UnknownWatcher(watcher_id));
    e->last_used_ms = now;
    watch = e->watch;
  }
  // Outside the lock: taking may decode a window's worth of events.
  Taken out;
  out.batch = watch->Take(max_events, 0);
  out.path = watch->path();
  if (out.batch.ended) {
    std::lock_guard lock(mu_);
    entries_.erase(watcher_id);
  }
  return out;
}

Status E2bWatchers::Remove(const std::string& owner, const std::string& sandbox_id,
                           const std::string& watcher_id) {
  std::shared_ptr<core::FileWatch> watch;
  {
    std::lock_guard lock(mu_);
    Entry* e = FindLocked(owner, sandbox_id, watcher_id);
    if (e == nullptr) return Fail(UnknownWatcher(watcher_id));
    watch = std::move(e->watch);
    entries_.erase(watcher_id);
  }
  watch->Cancel();
  return {};
}

}  // namespace asb::api
