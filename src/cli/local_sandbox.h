// What the local commands share so that the sandboxes they start without a server are the
// server's sandboxes (ADR 0017): `agent-sandbox run`, the smoke test of `template build`, and
// the RUN steps of `template build --dockerfile`.
//  - Resource flags (--cpus, --memory-mb, --pids-limit, --workspace-mb): unset takes the
//    default, every value is checked by core's rules (core/sandbox_resources.h) against the
//    server's built-in limits (core::Limits::Defaults()), with the API's messages; there is no
//    table of defaults or ranges in cli/.
//  - The guard that destroys a local sandbox however the command ends.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "core/sandbox_resources.h"
#include "core/template_manifest.h"
#include "isolation/backend.h"

namespace asb::cli {

/// The values given on the command line; nullopt = not given (the default applies).
struct ResourceFlags {
  std::optional<double> cpus{};
  std::optional<int64_t> memory_mb{};
  std::optional<int64_t> pids_limit{};
  std::optional<int64_t> workspace_mb{};
};

/// Adds --cpus, --memory-mb/-m and --pids-limit (and --workspace-mb when `with_workspace`) to
/// `cmd`, filling `*flags`, which must outlive the parse. Their help names the defaults.
void AddResourceFlags(CLI::App* cmd, ResourceFlags* flags, bool with_workspace);

/// The resources of a local sandbox: the flags, else `tmpl`'s defaults (a template's manifest)
/// within the limits, else the limits' defaults; `limits` is the server's built-in
/// configuration unless given. Errors: kInvalidArgument exactly as a create request's
/// ("memory_mb must be between 64 and 8192, got 8193").
Result<core::SandboxResources> LocalResources(
    const core::TemplateResources& tmpl, const ResourceFlags& flags,
    const core::Limits& limits = core::Limits::Defaults());

/// Destroys the sandbox `id` of `backend` (closing its connection first) when it goes out of
/// scope; a failure is printed on stderr.
class SandboxGuard {
 public:
  SandboxGuard(isolation::Backend& backend, std::string id)
      : backend_(backend), id_(std::move(id)) {}
  ~SandboxGuard();
  SandboxGuard(const SandboxGuard&) = delete;
  SandboxGuard& operator=(const SandboxGuard&) = delete;
  void set(std::shared_ptr<isolation::Sandbox> sandbox) { sandbox_ = std::move(sandbox); }
  /// Leaves the sandbox to someone else (run's watcher): the destructor then destroys nothing.
  void Release() { released_ = true; }
  isolation::Sandbox& sandbox() { return *sandbox_; }

 private:
  isolation::Backend& backend_;
  std::string id_;
  std::shared_ptr<isolation::Sandbox> sandbox_;
  bool released_ = false;
};

}  // namespace asb::cli
