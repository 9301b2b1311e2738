// MetricsHistory: a short history of every running sandbox's use (CPU, memory, workspace disk),
// sampled every ManagerConfig::metrics_interval_seconds by the manager's maintenance thread and
// kept for the last metrics_samples_kept samples per sandbox, in memory only (a restart starts
// it again). It answers E2B's getMetrics({start, end}), which reads samples taken every few
// seconds over a window; a sandbox that is paused or gone has no new samples.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "core/sandbox_types.h"

namespace asb::core {

class SandboxLifecycle;

/// One sample of a sandbox's use.
struct MetricSample {
  int64_t at_ms = 0;          // Unix epoch milliseconds
  double cpu_used_pct = 0;    // of its CPU limit, since the sample before (0..100)
  double cpus = 0;            // its CPU limit, cores
  uint64_t memory_bytes = 0;  // memory charged to it then
  uint64_t memory_limit_bytes = 0;
  uint64_t workspace_used_bytes = 0;
  uint64_t workspace_limit_bytes = 0;
};

class MetricsHistory {
 public:
  /// `lifecycle` and `clock` must outlive it. `interval_ms` > 0; `keep` >= 1 samples a sandbox.
  MetricsHistory(SandboxLifecycle& lifecycle, Clock& clock, int64_t interval_ms, size_t keep)
      : lifecycle_(lifecycle), clock_(clock), interval_ms_(interval_ms), keep_(keep) {}

  /// Samples every running sandbox when interval_ms passed since the last pass (the
  /// maintenance thread calls it every second), and forgets sandboxes that are gone.
  void MaybeSample();
  /// One pass now, whatever the interval.
  void SampleAll();
  /// The samples of sandbox `id` (visible to `owner`) taken within [start_ms, end_ms], oldest
  /// first; empty when none was. Errors: kNotFound (unknown, destroyed, another owner's).
  Result<std::vector<MetricSample>> Samples(const std::string& owner, const std::string& id,
                                            int64_t start_ms, int64_t end_ms);

 private:
  struct Series {
    std::deque<MetricSample> samples;
    uint64_t last_cpu_ns = 0;
    int64_t last_ms = 0;  // when last_cpu_ns was read
  };

  SandboxLifecycle& lifecycle_;
  Clock& clock_;
  const int64_t interval_ms_;
  const size_t keep_;
  std::mutex mu_;  // guards series_ and last_pass_ms_
  std::map<std::string, Series> series_;
  int64_t last_pass_ms_ = 0;
};

}  // namespace asb::core
