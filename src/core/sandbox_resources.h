// The resources of one sandbox (CPU, memory, processes, workspace, /tmp), resolved from a
// request against the configured Limits: the one place where their defaults and ranges are
// applied. Every path that starts contained processes goes through it: the manager's create,
// `agent-sandbox run` and its smoke-test sibling (cli/local_sandbox.h), and the RUN steps of a
// Dockerfile build (templates/build_sandbox.h), so none keeps a table of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "core/config.h"
#include "core/template_manifest.h"

namespace asb::isolation {
struct SandboxSpec;
}

namespace asb::core {

/// What a request asks for; an absent value takes the default. Integers are signed so that
/// negative input reaches validation (and is rejected there).
struct ResourceRequest {
  std::optional<double> cpus{};           // cores, (0, max_cpus]
  std::optional<int64_t> memory_mb{};     // [min_memory_mb, max_memory_mb]
  std::optional<int64_t> pids_limit{};    // [min_pids_limit, max_pids_limit]
  std::optional<int64_t> workspace_mb{};  // [min_workspace_mb, max_workspace_mb]
};

/// Validated resources, in the units of core (cores, MiB, processes + threads).
struct SandboxResources {
  double cpus = 0;
  int64_t memory_mb = 0;
  int64_t pids_limit = 0;
  int64_t workspace_mb = 0;
  int64_t tmp_size_mb = 0;  // not per request: Limits::tmp_size_mb
};

/// The request's values, else the template's default resources (its manifest, ADR 0012)
/// brought within the limits, else the configured defaults. Errors: kInvalidArgument naming
/// the field and the range: "memory_mb must be between 64 and 8192, got 8193"; for cpus
/// "cpus must be greater than 0 and at most N, got X".
Result<SandboxResources> ResolveResources(const Limits& limits, const TemplateResources& tmpl,
                                          const ResourceRequest& req);

/// ResolveResources of an empty request with no template resources: the configured defaults.
SandboxResources DefaultResources(const Limits& limits);

/// Copies the resources into a backend spec (bytes for MiB).
void ApplyResources(const SandboxResources& r, isolation::SandboxSpec* spec);

/// The error of a value outside [min, max]: kInvalidArgument "<field> must be between <min>
/// and <max>, got <got>".
Error RangeError(std::string_view field, int64_t min, int64_t max, int64_t got);

/// `v` if present and within [min, max], `def` if absent. Errors: RangeError.
Result<int64_t> CheckInt(std::string_view field, const std::optional<int64_t>& v, int64_t def,
                         int64_t min, int64_t max);

}  // namespace asb::core
