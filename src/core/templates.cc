#include "core/templates.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace asb::core {

namespace {

bool IsPlainName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
  });
}

/// Fills the optional metadata from template.json; ignores a missing or malformed file.
void ReadMetadata(const std::filesystem::path& file, TemplateInfo* info) {
  std::ifstream in(file);
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(ss.str(), ec);
  if (ec || !v.is_object()) return;
  const auto& o = v.get_object();
  if (auto* d = o.if_contains("display_name"); d && d->is_string()) {
    info->display_name = std::string(d->get_string());
  }
  if (auto* d = o.if_contains("description"); d && d->is_string()) {
    info->description = std::string(d->get_string());
  }
  if (auto* t = o.if_contains("tools"); t && t->is_array()) {
    for (const auto& e : t->get_array()) {
      if (e.is_string()) info->tools.emplace_back(e.get_string());
    }
  }
}

std::optional<TemplateInfo> Load(const std::filesystem::path& dir, std::string_view name) {
  if (!IsPlainName(name)) return std::nullopt;
  std::error_code ec;
  std::filesystem::path root = dir / std::string(name);
  if (!std::filesystem::is_directory(root / "rootfs", ec)) return std::nullopt;
  TemplateInfo info;
  info.name = std::string(name);
  info.rootfs = (root / "rootfs").string();
  info.display_name = info.name;
  if (auto m = ReadManifest((root / "manifest.json").string()); m && m->name == info.name) {
    info.manifest = std::move(*m);
    info.display_name = info.manifest.display_name;
    info.description = info.manifest.description;
    info.tools = info.manifest.tools;
  } else {
    ReadMetadata(root / "template.json", &info);
    info.manifest.name = info.name;
    info.manifest.display_name = info.display_name;
    info.manifest.description = info.description;
    info.manifest.tools = info.tools;
  }
  return info;
}

}  // namespace

std::vector<TemplateInfo> DirTemplateCatalog::List() const {
  std::vector<TemplateInfo> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (auto t = Load(dir_, it->path().filename().string())) out.push_back(std::move(*t));
  }
  std::sort(out.begin(), out.end(),
            [](const TemplateInfo& a, const TemplateInfo& b) { return a.name < b.name; });
  return out;
}

Result<TemplateInfo> DirTemplateCatalog::Find(std::string_view name) const {
  if (auto t = Load(dir_, name)) return std::move(*t);
  std::string names;
  for (const auto& t : List()) names += (names.empty() ? "" : ", ") + t.name;
  std::string shown(name.substr(0, 64));
  // A bundled template (templates/NAME) or one of the user's is built on the host, not
  // fetched: say how, since "unknown" reads as a typo.
  return Fail(Error::InvalidArgument(
      "template '" + shown + "' is not built here; available: " +
      (names.empty() ? "(none installed)" : names) + " (build it with `sudo agent-sandbox " +
      "template build " + shown + "`, from templates/" + shown + " or a directory of yours)"));
}

}  // namespace asb::core
