// WarmPool: ready sandboxes waiting for a create (warm_pool.h).
#include "core/warm_pool.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "core/lifecycle.h"
#include "core/sandbox_registry.h"

namespace asb::core {

namespace {

int64_t SteadyMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SandboxShape ShapeOf(const SandboxInfo& info, bool live_limits) {
  SandboxShape s;
  s.template_name = info.template_name;
  s.backend = info.backend;
  s.cpus = live_limits ? 0 : info.cpus;
  s.memory_mb = live_limits ? 0 : info.memory_mb;
  s.pids_limit = info.pids_limit;
  s.workspace_mb = info.workspace_mb;
  s.tmp_size_mb = info.tmp_size_mb;
  s.network = info.network;
  if (info.network) s.network_policy = info.network_policy;
  s.default_workdir = info.default_workdir;
  s.default_user = info.default_user;
  return s;
}

WarmPool::WarmPool(SandboxLifecycle& lifecycle, int64_t refill_per_second)
    : lifecycle_(lifecycle), refill_interval_ms_(1000 / std::max<int64_t>(1, refill_per_second)) {}

WarmPool::~WarmPool() { Stop(); }

Status WarmPool::Resize(const std::string& template_name, bool network, int64_t size) {
  if (template_name.empty()) return Fail(Error::InvalidArgument("template: required"));
  if (size < 0) return Fail(Error::InvalidArgument("size: must be 0 or more"));
  std::vector<std::shared_ptr<Entry>> extra;
  {
    std::lock_guard l(mu_);
    Pool& p = pools_[Key{template_name, network}];
    p.size = size;
    p.retry_at_ms = 0;  // a new size is worth a new try
    while (static_cast<int64_t>(p.ready.size()) > size) {
      extra.push_back(std::move(p.ready.back()));
      p.ready.pop_back();
    }
  }
  cv_.notify_all();
  Destroy(std::move(extra));
  return {};
}

std::vector<WarmPoolStatus> WarmPool::Pools() const {
  std::lock_guard l(mu_);
  std::vector<WarmPoolStatus> out;
  for (const auto& [k, p] : pools_) {
    if (p.size == 0 && p.ready.empty() && p.hits == 0 && p.misses == 0) continue;
    out.push_back({k.template_name, k.network, p.size, static_cast<int64_t>(p.ready.size()), p.hits,
                   p.misses, p.last_error});
  }
  return out;
}

std::shared_ptr<Entry> WarmPool::Take(const SandboxShape& shape, bool live_limits) {
  std::shared_ptr<Entry> taken;
  {
    std::lock_guard l(mu_);
    auto it = pools_.find(Key{shape.template_name, shape.network});
    if (it == pools_.end() || it->second.size == 0) return nullptr;
    Pool& p = it->second;
    for (auto e = p.ready.begin(); e != p.ready.end(); ++e) {
      if (ShapeOf((*e)->Snapshot(), live_limits) == shape) {
        taken = std::move(*e);
        p.ready.erase(e);
        break;
      }
    }
    ++(taken ? p.hits : p.misses);
    if (taken) last_claim_ms_ = SteadyMs();
  }
  if (taken) cv_.notify_all();  // make its successor
  return taken;
}

std::shared_ptr<Entry> WarmPool::TakeAny() {
  std::lock_guard l(mu_);
  for (auto& [k, p] : pools_) {
    if (!p.ready.empty()) {
      std::shared_ptr<Entry> e = std::move(p.ready.front());
      p.ready.pop_front();
      return e;
    }
  }
  return nullptr;
}

void WarmPool::Start() {
  std::lock_guard l(mu_);
  if (refill_.joinable()) return;
  stop_ = false;
  refill_ = std::thread([this] { RefillLoop(); });
}

void WarmPool::Stop() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (refill_.joinable()) refill_.join();
  std::vector<std::shared_ptr<Entry>> all;
  {
    std::lock_guard l(mu_);
    for (auto& [k, p] : pools_) {
      for (auto& e : p.ready) all.push_back(std::move(e));
      p.ready.clear();
    }
  }
  Destroy(std::move(all));
}

void WarmPool::Destroy(std::vector<std::shared_ptr<Entry>> entries) {
  for (const auto& e : entries) lifecycle_.DestroyPooled(*e);
}

void WarmPool::RefillLoop() {
  using namespace std::chrono;
  std::unique_lock l(mu_);
  while (!stop_) {
    // The pool furthest below its size that may be tried now.
    const int64_t now = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    Pool* want = nullptr;
    Key key;
    int64_t most_missing = 0;
    for (auto& [k, p] : pools_) {
      const int64_t missing = p.size - static_cast<int64_t>(p.ready.size()) - p.making;
      if (missing > most_missing && p.retry_at_ms <= now) {
        most_missing = missing;
        want = &p;
        key = k;
      }
    }
    if (want == nullptr) {
      cv_.wait_for(l, seconds(1));
      continue;
    }
    // Let the sandbox just claimed have the cores for its first commands.
    if (const int64_t quiet = last_claim_ms_ + kQuietAfterClaimMs - SteadyMs(); quiet > 0) {
      cv_.wait_for(l, milliseconds(quiet), [this] { return stop_; });
      continue;
    }
    ++want->making;
    l.unlock();
    auto made = lifecycle_.MakePooled(key.template_name, key.network);
    l.lock();
    Pool& p = pools_[key];  // (entries of a std::map stay where they are)
    --p.making;
    if (made) {
      p.last_error.clear();
      if (static_cast<int64_t>(p.ready.size()) < p.size && !stop_) {
        p.ready.push_back(std::move(*made));
      } else {
        l.unlock();
        lifecycle_.DestroyPooled(**made);  // resized down, or stopping, meanwhile
        l.lock();
      }
    } else {
      // A template that is gone or a full server: try again in a while, not in a loop.
      p.last_error = made.error().ClientSafeMessage();
      p.retry_at_ms = now + 5000;
      spdlog::warn("warm pool {}{}: {}", key.template_name, key.network ? " (network)" : "",
                   made.error().ToString());
    }
    cv_.wait_for(l, milliseconds(refill_interval_ms_), [this] { return stop_; });
  }
}

}  // namespace asb::core
