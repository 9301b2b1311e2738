// A template's recipe: templates/<name>/template.toml (ADR 0012), parsed with toml11.
//
//   name = "python"                      # required; [a-z0-9][a-z0-9_-]{0,62}; = directory name
//   display_name = "Python 3.11"         # optional, defaults to name
//   description = "..."
//   version = "1"                        # free-form string
//   extends = "base"                     # optional: that template's packages, tools and env
//                                        # (from ../base/template.toml) come first
//   tools = ["python3", "pip"]           # commands the template promises (shown by the API)
//   packages = ["python3-pip"]           # Debian bookworm packages (Debian policy 5.6.1 names)
//   setup = ["pip --version"]            # shell commands run once, as root, at build time
//   smoke_test = "python3 -c 'print(1)'" # required; run as `sandbox` in a real sandbox by
//                                        # `template build`; exit 0 = the template works
//   [env]                                # environment of every command in its sandboxes
//   PYTHONUNBUFFERED = "1"
//   [resources]                          # defaults for sandboxes; 0 or absent = server default
//   cpus = 1.0                           # cores (> 0, <= 1024)
//   memory_mb = 1024                     # MiB, [16, 1048576]
//   disk_mb = 2048                       # MiB of /workspace, [16, 16777216]
//
// Unknown keys are errors (a typo must not silently drop a setting).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/template_manifest.h"

namespace asb::core {

struct TemplateSpec {
  std::string name;
  std::string display_name;
  std::string description;
  std::string version;
  std::string extends;                // "" = none
  std::vector<std::string> tools;     // after extends: parent's first, no duplicates
  std::vector<std::string> packages;  // after extends: union, sorted, no duplicates
  std::vector<std::string> setup;     // this template's own only (the parent's run too when
                                      // extends is set: parent's first)
  std::string smoke_test;
  std::map<std::string, std::string> env;  // parent's, overridden by this one's
  TemplateResources resources;
  std::string source_dir;  // directory the template.toml was read from ("" for text)
};

/// Parses the text of one template.toml, without resolving `extends`. `origin` names the file
/// in error messages. Errors: kInvalidArgument with toml11's located message for syntax and
/// type errors, or "<origin>: <key>: <rule>" for a value that breaks a rule above.
Result<TemplateSpec> ParseTemplateSpec(std::string_view text, const std::string& origin);

/// Loads NAME_OR_PATH: a directory holding template.toml, a path to a template.toml, or a bare
/// template name looked up as <templates_src_dir>/<name>/template.toml. Resolves `extends`
/// (from the parent directory of the spec's directory; at most 4 levels, no cycles). When the
/// spec sits in a directory, its name must equal the directory's name. Errors: kNotFound when
/// there is no such template (the message names the available ones), kInvalidArgument.
Result<TemplateSpec> LoadTemplateSpec(const std::string& name_or_path,
                                      const std::string& templates_src_dir);

/// The bundled template names under `templates_src_dir` (subdirectories with a template.toml),
/// sorted.
std::vector<std::string> ListTemplateSpecs(const std::string& templates_src_dir);

/// SHA-256 (hex) over a canonical form of the resolved spec and `builder_id` (bump it when the
/// builder's output changes). Equal hashes mean the installed template is current.
std::string TemplateRecipeHash(const TemplateSpec& spec, std::string_view builder_id);

/// The manifest a build of `spec` records (created_at and size_bytes are filled at install).
TemplateManifest ManifestFromSpec(const TemplateSpec& spec, std::string_view recipe_hash);

}  // namespace asb::core
