#include "cli/local_sandbox.h"

#include <cstdio>

namespace asb::cli {

void AddResourceFlags(CLI::App* cmd, ResourceFlags* f, bool with_workspace) {
  const core::Limits d = core::Limits::Defaults();
  cmd->add_option("--memory-mb,-m", f->memory_mb,
                  "Memory limit in MiB, no swap (default " + std::to_string(d.default_memory_mb) +
                      " or the template's; " + std::to_string(d.min_memory_mb) + " to " +
                      std::to_string(d.max_memory_mb) + ")");
  cmd->add_option("--cpus", f->cpus,
                  "CPU limit in cores, 0.5 = half a core (default " +
                      std::to_string(static_cast<int>(d.default_cpus)) +
                      " or the template's; at most this host's CPUs)");
  cmd->add_option("--pids-limit", f->pids_limit,
                  "Most processes and threads (default " + std::to_string(d.default_pids_limit) +
                      "; " + std::to_string(d.min_pids_limit) + " to " +
                      std::to_string(d.max_pids_limit) + ")");
  if (with_workspace) {
    cmd->add_option("--workspace-mb", f->workspace_mb,
                    "Size quota of /workspace in MiB (default " +
                        std::to_string(d.default_workspace_mb) + " or the template's; " +
                        std::to_string(d.min_workspace_mb) + " to " +
                        std::to_string(d.max_workspace_mb) + ")");
  }
}

Result<core::SandboxResources> LocalResources(const core::TemplateResources& tmpl,
                                              const ResourceFlags& f, const core::Limits& limits) {
  return core::ResolveResources(limits, tmpl, {f.cpus, f.memory_mb, f.pids_limit, f.workspace_mb});
}

SandboxGuard::~SandboxGuard() {
  if (sandbox_) sandbox_->connection()->Close();
  sandbox_.reset();
  if (released_) return;
  auto st = backend_.Destroy(id_);
  if (!st) {
    std::fprintf(stderr, "agent-sandbox: destroy %s: %s\n", id_.c_str(),
                 st.error().detail().c_str());
  }
}

}  // namespace asb::cli
