// `agent-sandbox template build --dockerfile PATH`: runs a parsed Dockerfile into a staged
// rootfs and installs it as a template (ADR 0012, "Dockerfile builds").
//
// FROM <template> starts from a copy of that installed template (its manifest's env, workdir
// and labels are inherited); FROM scratch starts empty (an ADDed rootfs archive fills it). RUN
// steps run in the build sandbox (build_sandbox.h), COPY/ADD read the context directory, and
// the result is finished for sandboxes (sandbox user, mount points) and swapped in atomically:
// a failed step leaves the previously installed template of that name untouched.
//
// LABELs seed A reads become manifest fields: template.displayName -> display_name,
// template.tools ("a,b,c") -> tools, template.description -> description, template.version
// -> version; template.name names the template when no --name is given. All labels are kept.
#pragma once

#include <functional>
#include <string>

#include "common/result.h"
#include "core/sandbox_resources.h"
#include "core/template_manifest.h"

namespace asb::templates {

struct DockerfileBuildOptions {
  std::string dockerfile;     // path of the Dockerfile
  std::string context;        // build context directory; empty -> the Dockerfile's directory
  std::string name;           // template name; empty -> LABEL template.name
  std::string templates_dir;  // <data_dir>/templates
  /// One line per step ("Step 2/7 : RUN make"), and the outcome. Never null.
  std::function<void(const std::string&)> progress = [](const std::string&) {};
  int output_fd = 1;  // where RUN steps' stdout and stderr go
  /// The limits of every RUN step (build_sandbox.h): a sandbox's, resolved by the caller
  /// against the configured Limits (core/sandbox_resources.h).
  core::SandboxResources resources = core::DefaultResources(core::Limits::Defaults());
};

/// Builds and installs; returns the installed manifest. Errors: the parser's kInvalidArgument
/// ("Dockerfile line N: ..."), kNotFound for an unknown FROM template or a missing COPY source,
/// kInvalidArgument "Dockerfile line N: RUN ...: exit status S" for a failing step, kConflict
/// from FinishRootfs, errno errors.
Result<core::TemplateManifest> BuildFromDockerfile(const DockerfileBuildOptions& opts);

}  // namespace asb::templates
