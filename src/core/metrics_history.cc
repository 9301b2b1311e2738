#include "core/metrics_history.h"

#include <algorithm>
#include <set>

#include "core/lifecycle.h"

namespace asb::core {

void MetricsHistory::MaybeSample() {
  {
    std::lock_guard l(mu_);
    if (clock_.NowUnixMs() - last_pass_ms_ < interval_ms_) return;
  }
  SampleAll();
}

void MetricsHistory::SampleAll() {
  auto all = lifecycle_.List(kAnyOwner);
  if (!all) return;
  std::set<std::string> live;
  for (const SandboxInfo& s : *all) {
    live.insert(s.id);
    if (s.state != SandboxState::kRunning) continue;
    // Read outside the lock: a backend's answer may take a while (a microVM's guest).
    auto u = lifecycle_.Usage(kAnyOwner, s.id);
    if (!u) continue;
    std::lock_guard l(mu_);
    Series& series = series_[s.id];
    // The first sample of a sandbox averages over its life so far.
    const int64_t since_ms = series.last_ms != 0 ? series.last_ms : s.created_at_ms;
    const uint64_t since_ns = series.last_ms != 0 ? series.last_cpu_ns : 0;
    MetricSample m;
    m.at_ms = u->sampled_at_ms;
    m.cpus = s.cpus > 0 ? s.cpus : 1;
    const double wall_ns = static_cast<double>(std::max<int64_t>(1, m.at_ms - since_ms)) * 1e6;
    const double used_ns =
        u->cpu_usage_ns > since_ns ? static_cast<double>(u->cpu_usage_ns - since_ns) : 0;
    m.cpu_used_pct = std::min(100.0, used_ns / (wall_ns * m.cpus) * 100.0);
    m.memory_bytes = u->memory_bytes;
    m.memory_limit_bytes = u->memory_limit_bytes;
    m.workspace_used_bytes = u->workspace_used_bytes;
    m.workspace_limit_bytes = u->workspace_limit_bytes;
    series.last_cpu_ns = u->cpu_usage_ns;
    series.last_ms = m.at_ms;
    series.samples.push_back(m);
    while (series.samples.size() > keep_) series.samples.pop_front();
  }
  std::lock_guard l(mu_);
  std::erase_if(series_, [&](const auto& kv) { return live.count(kv.first) == 0; });
  last_pass_ms_ = clock_.NowUnixMs();
}

Result<std::vector<MetricSample>> MetricsHistory::Samples(const std::string& owner,
                                                          const std::string& id, int64_t start_ms,
                                                          int64_t end_ms) {
  // Tenancy: another owner's sandbox is not found, as a missing one.
  if (auto s = lifecycle_.Get(owner, id); !s) return Fail(std::move(s).error());
  std::vector<MetricSample> out;
  std::lock_guard l(mu_);
  auto it = series_.find(id);
  if (it == series_.end()) return out;
  for (const MetricSample& m : it->second.samples) {
    if (m.at_ms >= start_ms && m.at_ms <= end_ms) out.push_back(m);
  }
  return out;
}

}  // namespace asb::core
