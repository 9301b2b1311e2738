#include "core/sandbox_resources.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "isolation/backend.h"

namespace asb::core {

namespace {

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

Error RangeError(std::string_view field, int64_t min, int64_t max, int64_t got) {
  return Error::InvalidArgument(std::string(field) + " must be between " + std::to_string(min) +
                                " and " + std::to_string(max) + ", got " + std::to_string(got));
}

Result<int64_t> CheckInt(std::string_view field, const std::optional<int64_t>& v, int64_t def,
                         int64_t min, int64_t max) {
  if (!v) return def;
  if (*v < min || *v > max) return Fail(RangeError(field, min, max, *v));
  return *v;
}

Result<SandboxResources> ResolveResources(const Limits& lim, const TemplateResources& tr,
                                          const ResourceRequest& req) {
  // The template's default resources take the place of the server's defaults, brought within
  // the server's limits; the request's own values still win.
  const double default_cpus = tr.cpus > 0 ? std::min(tr.cpus, lim.max_cpus) : lim.default_cpus;
  const int64_t default_memory_mb =
      tr.memory_mb > 0 ? std::clamp(tr.memory_mb, lim.min_memory_mb, lim.max_memory_mb)
                       : lim.default_memory_mb;
  const int64_t default_workspace_mb =
      tr.workspace_mb > 0 ? std::clamp(tr.workspace_mb, lim.min_workspace_mb, lim.max_workspace_mb)
                          : lim.default_workspace_mb;
  SandboxResources r;
  if (req.cpus) {
    double c = *req.cpus;
    if (!std::isfinite(c) || c <= 0 || c > lim.max_cpus) {
      return Fail(Error::InvalidArgument("cpus must be greater than 0 and at most " +
                                         FormatNumber(lim.max_cpus) + ", got " + FormatNumber(c)));
    }
  }
  r.cpus = req.cpus.value_or(default_cpus);
  ASB_ASSIGN_OR_RETURN(r.memory_mb, CheckInt("memory_mb", req.memory_mb, default_memory_mb,
                                             lim.min_memory_mb, lim.max_memory_mb));
  ASB_ASSIGN_OR_RETURN(r.pids_limit, CheckInt("pids_limit", req.pids_limit, lim.default_pids_limit,
                                              lim.min_pids_limit, lim.max_pids_limit));
  ASB_ASSIGN_OR_RETURN(r.workspace_mb,
                       CheckInt("workspace_mb", req.workspace_mb, default_workspace_mb,
                                lim.min_workspace_mb, lim.max_workspace_mb));
  r.tmp_size_mb = lim.tmp_size_mb;
  return r;
}

SandboxResources DefaultResources(const Limits& lim) {
  // An empty request holds no value to refuse: this never fails.
  return *ResolveResources(lim, TemplateResources{}, ResourceRequest{});
}

void ApplyResources(const SandboxResources& r, isolation::SandboxSpec* spec) {
  spec->cpus = r.cpus;
  spec->memory_bytes = static_cast<uint64_t>(r.memory_mb) << 20;
  spec->pids_limit = static_cast<uint32_t>(r.pids_limit);
  spec->workspace_bytes = static_cast<uint64_t>(r.workspace_mb) << 20;
  spec->tmp_bytes = static_cast<uint64_t>(r.tmp_size_mb) << 20;
}

}  // namespace asb::core
