// A template's manifest: what <data_dir>/templates/<name>/manifest.json records about an
// installed template (ADR 0012). Every builder (template.toml, Dockerfile, OCI import) writes
// one through InstallTemplate (core/template_install.h); the catalog and GET /v1/templates read
// it. Field names follow seed A's template.json where it has one (name, display_name, version,
// description, tools, base, resources, created_at).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::core {

/// Default resources of a sandbox created from the template. 0 means "the server's default";
/// a create request's own values win, and every value is still checked against the server's
/// limits (core/config.h).
struct TemplateResources {
  double cpus = 0;           // cores, fractions allowed
  int64_t memory_mb = 0;     // MiB
  int64_t workspace_mb = 0;  // MiB of /workspace ("disk" in template.toml)
};

struct TemplateManifest {
  std::string name;          // directory name, [a-z0-9][a-z0-9_-]{0,62}
  std::string display_name;  // "Python 3.11"; empty -> name
  std::string description;
  std::string version;             // the spec's own version string, "1", "2024.1"; may be empty
  std::string base;                // what it was built from: "debian:bookworm", or a template name
  std::string source;              // builder: "toml", "dockerfile", "oci", "script"
  std::vector<std::string> tools;  // commands it promises: "python3", "pip", ...
  std::vector<std::string> packages;          // Debian packages installed (sorted), if known
  std::map<std::string, std::string> env;     // environment every command gets
  std::map<std::string, std::string> labels;  // free-form (Dockerfile LABELs)
  TemplateResources resources;
  std::string smoke_test;   // shell command run by `template build` to prove it works
  std::string workdir;      // default cwd of commands; empty -> /workspace
  std::string user;         // default user; empty -> "sandbox" (uid 1000)
  std::string created_at;   // RFC 3339 UTC, "2026-11-29T12:00:00Z"
  int64_t size_bytes = 0;   // of rootfs/
  std::string recipe_hash;  // what the .stamp holds (builder-defined hash of the inputs)
};

/// Serialises to pretty JSON (2-space indent, trailing newline). Empty/zero optional fields
/// are still written, so readers see every key.
std::string ManifestToJson(const TemplateManifest& m);

/// Parses manifest JSON. Unknown keys are ignored (newer writers); a key of the wrong type is
/// kInvalidArgument naming it. `name` is required. Also accepts the pre-0012 manifest written
/// by scripts/build-template.sh (built_at instead of created_at).
Result<TemplateManifest> ParseManifest(std::string_view json);

/// ReadFile + ParseManifest. kNotFound if the file is missing; errors carry the path.
Result<TemplateManifest> ReadManifest(const std::string& path);

/// The current time as RFC 3339 UTC with seconds ("2026-11-29T12:00:00Z").
std::string NowRfc3339();

}  // namespace asb::core
