#include "core/config.h"

#include <sched.h>

#include <cmath>
#include <string>

namespace asb::core {

namespace {

std::string Num(double v) {
  std::string s = std::to_string(v);
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
    bool dot = s.back() == '.';
    s.pop_back();
    if (dot) break;
  }
  return s;
}

Status CheckRange(std::string_view name, int64_t min, int64_t def, int64_t max) {
  if (min > max) {
    return Fail(Error::InvalidArgument("max of " + std::string(name) + " (" + std::to_string(max) +
                                       ") is below its minimum " + std::to_string(min)));
  }
  if (def < min || def > max) {
    return Fail(Error::InvalidArgument("default " + std::string(name) + " (" + std::to_string(def) +
                                       ") must be within [" + std::to_string(min) + ", " +
                                       std::to_string(max) + "]"));
  }
  return {};
}

}  // namespace

double DefaultMaxCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

Limits Limits::Defaults() {
  Limits l;
  l.max_cpus = DefaultMaxCpus();
  return l;
}

Status ManagerConfig::Validate() const {
  const Limits& l = limits;
  if (l.max_sandboxes < 1) {
    return Fail(Error::InvalidArgument("max_sandboxes (" + std::to_string(l.max_sandboxes) +
                                       ") must be at least 1"));
  }
  for (const WarmPoolTarget& w : warm_pools) {
    if (w.template_name.empty() || w.size < 0 || w.size > l.max_sandboxes) {
      return Fail(Error::InvalidArgument("warm pool \"" + w.template_name +
                                         "\": a template name and a size within [0, " +
                                         std::to_string(l.max_sandboxes) + "]"));
    }
  }
  if (warm_pool_refill_per_second < 1) {
    return Fail(Error::InvalidArgument("warm_pool_refill_per_second must be at least 1"));
  }
  if (l.min_timeout_seconds < 1) {
    return Fail(Error::InvalidArgument("min_timeout_seconds must be at least 1"));
  }
  ASB_TRY(CheckRange("timeout_seconds", l.min_timeout_seconds, l.default_timeout_seconds,
                     l.max_timeout_seconds));
  if (metrics_interval_seconds < 1) {
    return Fail(Error::InvalidArgument("metrics_interval_seconds must be at least 1"));
  }
  if (metrics_samples_kept < 1 || metrics_samples_kept > 100000) {
    return Fail(Error::InvalidArgument("metrics_samples_kept must be within [1, 100000]"));
  }
  if (l.paused_timeout_seconds < 1) {
    return Fail(Error::InvalidArgument("paused_timeout_seconds must be at least 1"));
  }
  if (!(l.max_cpus > 0) || !std::isfinite(l.max_cpus)) {
    return Fail(Error::InvalidArgument("max_cpus (" + Num(l.max_cpus) + ") must be > 0"));
  }
  if (!(l.default_cpus > 0) || l.default_cpus > l.max_cpus) {
    return Fail(Error::InvalidArgument("default cpus (" + Num(l.default_cpus) +
                                       ") must be within (0, " + Num(l.max_cpus) + "]"));
  }
  ASB_TRY(CheckRange("memory_mb", l.min_memory_mb, l.default_memory_mb, l.max_memory_mb));
  ASB_TRY(CheckRange("pids_limit", l.min_pids_limit, l.default_pids_limit, l.max_pids_limit));
  ASB_TRY(
      CheckRange("workspace_mb", l.min_workspace_mb, l.default_workspace_mb, l.max_workspace_mb));
  if (l.min_memory_mb < 1 || l.min_pids_limit < 1 || l.min_workspace_mb < 1) {
    return Fail(
        Error::InvalidArgument("minimum memory_mb, pids_limit and workspace_mb must be "
                               "at least 1"));
  }
  if (l.tmp_size_mb < 1) {
    return Fail(Error::InvalidArgument("tmp_size_mb (" + std::to_string(l.tmp_size_mb) +
                                       ") must be at least 1"));
  }
  ASB_TRY(CheckRange("exec timeout_seconds", 1, l.default_exec_timeout_seconds,
                     l.max_exec_timeout_seconds));
  if (l.max_exec_output_bytes < 1) {
    return Fail(Error::InvalidArgument("max_exec_output_bytes must be at least 1"));
  }
  if (l.max_file_bytes < 1) {
    return Fail(Error::InvalidArgument("max_file_bytes must be at least 1"));
  }
  ASB_TRY(
      CheckRange("idle_timeout_seconds", 0, l.default_idle_timeout_seconds, l.max_timeout_seconds));
  if (snapshots.max_snapshot_bytes < 1 || snapshots.max_per_sandbox < 1 ||
      snapshots.max_per_owner < 1 || snapshots.max_total_bytes_per_owner < 1) {
    return Fail(Error::InvalidArgument("snapshot limits must be at least 1"));
  }
  if (reap_interval_seconds < 1) {
    return Fail(Error::InvalidArgument("reap_interval_seconds (" +
                                       std::to_string(reap_interval_seconds) +
                                       ") must be at least 1"));
  }
  if (data_dir.empty() || data_dir[0] != '/') {
    return Fail(Error::InvalidArgument("data_dir (" + data_dir + ") must be an absolute path"));
  }
  if (default_template.empty() || default_template.find('/') != std::string::npos) {
    return Fail(Error::InvalidArgument("default_template must be a plain name"));
  }
  return {};
}

std::string ManagerConfig::DatabasePath() const { return data_dir + "/agent-sandbox.db"; }
std::string ManagerConfig::TemplatesDir() const { return data_dir + "/templates"; }

}  // namespace asb::core
