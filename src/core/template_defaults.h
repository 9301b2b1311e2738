// The defaults a template gives its sandboxes' commands: its manifest's `workdir` and `user`
// (a Dockerfile's final WORKDIR and USER, an OCI image config's WorkingDir and User; ADR 0012,
// "Update"). Every exec, background process and PTY that names no workdir or user of its own
// gets them (core/exec_request.h).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "core/template_manifest.h"

namespace asb::core {

/// The effective defaults: `workdir` an absolute, lexically clean directory ("/workspace" when
/// the template names none); `user` one of the users sandboxd can run commands as,
/// protocol::kUserSandbox ("sandbox", uid 1000) or protocol::kUserRoot ("root", uid 0).
struct CommandDefaults {
  std::string workdir = "/workspace";
  std::string user = "sandbox";
};

/// Maps a template's `user` onto a user sandboxes have: "", "sandbox", "1000",
/// "sandbox:sandbox", "1000:1000" -> "sandbox"; "root", "0", "root:root", "0:0" -> "root"
/// (Dockerfile USER syntax: user[:group], names or numeric ids). Sandboxes have only these two
/// users (FinishRootfs, protocol/messages.h), so anything else — another name, another uid, a
/// group other than the user's own — is kInvalidArgument naming the value and what is accepted.
Result<std::string> ResolveTemplateUser(std::string_view user);

/// Checks a template's `workdir`: "" -> "/workspace"; otherwise it must be absolute, without
/// NUL, at most 4096 bytes, and is cleaned lexically ("/srv//app/" -> "/srv/app").
/// Errors: kInvalidArgument naming the value and the rule.
Result<std::string> ResolveTemplateWorkdir(std::string_view workdir);

/// Both of the above for `m`; errors name the template ("template 'x': user ...").
/// Builders call it before installing (a template the server cannot honour is refused at
/// build time); the manager calls it at create (a manifest installed before this check, or
/// edited by hand, fails the create with the same message).
Result<CommandDefaults> ResolveTemplateDefaults(const TemplateManifest& m);

}  // namespace asb::core
