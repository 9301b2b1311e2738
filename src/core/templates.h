// Templates: named read-only root filesystems a sandbox starts from (ADR 0004:
// <data_dir>/templates/<name>/rootfs). The manager asks a TemplateCatalog to turn
// the name in a create request into a host path; tests supply their own catalog.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/template_manifest.h"

namespace asb::core {

/// What a template offers (GET /v1/templates; ADR 0012). Fields other than name/rootfs come from
/// its manifest.json (core/template_manifest.h), or the older template.json, when present.
struct TemplateInfo {
  std::string name;          // directory name, e.g. "base"
  std::string rootfs;        // absolute host path of its root filesystem
  std::string display_name;  // "Debian base"; defaults to name
  std::string description;
  std::vector<std::string> tools;  // "python3", "bash", ...
  /// The whole manifest (name, display_name, description and tools equal the fields above;
  /// everything else empty/zero when the template has none): version, base, env, default
  /// resources, created_at, ...
  TemplateManifest manifest;
};

class TemplateCatalog {
 public:
  virtual ~TemplateCatalog() = default;
  /// Every available template, sorted by name.
  virtual std::vector<TemplateInfo> List() const = 0;
  /// The template called `name`. Errors: kInvalidArgument "unknown template 'x'; available:
  /// base, python" when there is none (ADR 0012); names with '/' or starting with '.'
  /// are never valid.
  virtual Result<TemplateInfo> Find(std::string_view name) const = 0;
};

/// A catalog backed by a directory: each subdirectory <dir>/<name> that holds a directory
/// `rootfs` is a template. The directory is read on every call (templates may be added while
/// the server runs). Metadata comes from <dir>/<name>/manifest.json (ADR 0012), else from an
/// older <dir>/<name>/template.json {"display_name", "description", "tools"}; a malformed one
/// is ignored (the template is listed with its name only).
class DirTemplateCatalog final : public TemplateCatalog {
 public:
  explicit DirTemplateCatalog(std::string templates_dir) : dir_(std::move(templates_dir)) {}
  std::vector<TemplateInfo> List() const override;
  Result<TemplateInfo> Find(std::string_view name) const override;

 private:
  std::string dir_;
};

}  // namespace asb::core
