// `agent-sandbox template build`: turns a template.toml (core/template_spec.h) into an installed
// template (core/template_install.h) — ADR 0012.
//
//  1. up to date? the recipe hash of the resolved spec equals the installed .stamp -> done
//     (unless force);
//  2. mmdebstrap --variant=minbase --mode=root of the spec's packages from Debian bookworm into
//     a staging directory beside the installed template, with a .deb cache in
//     <data_dir>/cache/debs; a failed run is retried once (the mirror may drop a connection);
//     the spec's setup commands run as root in the new rootfs (a customize hook, with network);
//  3. FinishRootfs (sandbox user, mount points, no caches);
//  4. the smoke test runs as `sandbox` in a real sandbox (ns backend) over the staged rootfs,
//     with the template's env and the resources its sandboxes get; non-zero exit fails the build;
//  5. InstallTemplate swaps it in atomically with its manifest.
// Any failure before 5 leaves the installed template as it was.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/result.h"
#include "core/template_manifest.h"
#include "core/template_spec.h"

namespace asb::cli {

struct TemplateBuildOptions {
  std::string data_dir;  // templates go to <data_dir>/templates/<name>
  bool force = false;    // rebuild even when the recipe hash is unchanged
  std::string mirror = "http://deb.debian.org/debian";
  std::string security_mirror = "http://deb.debian.org/debian-security";
  int mirror_attempts = 2;  // mmdebstrap runs at most this often
  double smoke_timeout_seconds = 300;
  std::string sandboxd;  // for the smoke test's sandbox (FindSandboxd())
};

struct TemplateBuildResult {
  bool built = false;  // false: it was up to date
  double seconds = 0;
  core::TemplateManifest manifest;  // as installed (or as found when up to date)
};

/// Progress lines ("mmdebstrap: I: downloading packages with apt...") as the build goes.
using ProgressFn = std::function<void(const std::string&)>;

/// The recipe's builder id: part of every recipe hash, bump it when the output changes.
inline constexpr const char* kTemplateBuilderId = "asb-template-builder/3 bookworm";

/// Builds `spec` as described above. Must run as root. Errors: kPermissionDenied (not root),
/// kBackend (mmdebstrap or a setup command failed: the message names it and the log file),
/// kInvalidArgument (smoke test failed: its exit code and output tail), install errors.
Result<TemplateBuildResult> BuildTemplate(const core::TemplateSpec& spec,
                                          const TemplateBuildOptions& options,
                                          const ProgressFn& progress);

/// Runs `command` with /bin/sh -c as user sandbox in /workspace of a fresh sandbox over
/// `rootfs`, with `env` and the resources a sandbox of the template gets (`resources`, the
/// template's defaults, within the server's limits: cli/local_sandbox.h); output goes to
/// `output` (merged, capped at 64 KiB). Returns the exit code (124 on timeout). Used for the
/// smoke test.
Result<int> RunInRootfs(const std::string& rootfs, const std::string& template_name,
                        const std::map<std::string, std::string>& env,
                        const core::TemplateResources& resources, const std::string& command,
                        const TemplateBuildOptions& options, std::string* output);

}  // namespace asb::cli
