#include "core/template_spec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#define TOML11_COLORIZE_ERROR_MESSAGE 0
#include <toml.hpp>

#include "core/template_install.h"

namespace asb::core {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFileName = "template.toml";

Error Bad(const std::string& origin, const std::string& key, const std::string& rule) {
  return Error::InvalidArgument(origin + ": " + key + ": " + rule);
}

Result<std::string> GetString(const toml::value& v, const std::string& origin,
                              const std::string& key) {
  if (!v.is_string()) {
    return Fail(Error::InvalidArgument(
        toml::format_error(origin + ": " + key + " must be a string", v, "here")));
  }
  return v.as_string().str;
}

Result<std::vector<std::string>> GetStrings(const toml::value& v, const std::string& origin,
                                            const std::string& key) {
  std::vector<std::string> out;
  if (!v.is_array()) {
    return Fail(Error::InvalidArgument(
        toml::format_error(origin + ": " + key + " must be an array of strings", v, "here")));
  }
  for (const auto& e : v.as_array()) {
    if (!e.is_string()) {
      return Fail(Error::InvalidArgument(toml::format_error(
          origin + ": " + key + " must be an array of strings", e, "not a string")));
    }
    if (e.as_string().str.empty()) return Fail(Bad(origin, key, "empty string"));
    out.push_back(e.as_string().str);
  }
  return out;
}

// Debian policy 5.6.1: lowercase letters, digits, + - . ; at least two characters, starting
// with an alphanumeric. (Also keeps the names safe to pass to mmdebstrap --include.)
bool IsDebianPackageName(const std::string& p) {
  static const std::regex re("^[a-z0-9][a-z0-9+.-]+$");
  return p.size() <= 128 && std::regex_match(p, re);
}

bool IsEnvName(const std::string& k) {
  static const std::regex re("^[A-Za-z_][A-Za-z0-9_]*$");
  return k.size() <= 256 && std::regex_match(k, re);
}

Status ParseResources(const toml::value& v, const std::string& origin, TemplateResources* r) {
  if (!v.is_table()) {
    return Fail(Error::InvalidArgument(
        toml::format_error(origin + ": resources must be a table", v, "here")));
  }
  for (const auto& [key, val] : v.as_table()) {
    if (key == "cpus") {
      double c = 0;
      if (val.is_integer()) {
        c = static_cast<double>(val.as_integer());
      } else if (val.is_floating()) {
        c = val.as_floating();
      } else {
        return Fail(Error::InvalidArgument(
            toml::format_error(origin + ": resources.cpus must be a number", val, "here")));
      }
      if (!(c > 0 && c <= 1024)) return Fail(Bad(origin, "resources.cpus", "must be in (0, 1024]"));
      r->cpus = c;
    } else if (key == "memory_mb" || key == "disk_mb") {
      if (!val.is_integer()) {
        return Fail(Error::InvalidArgument(toml::format_error(
            origin + ": resources." + key + " must be an integer (MiB)", val, "here")));
      }
      int64_t n = val.as_integer();
      int64_t max = key == "memory_mb" ? (int64_t{1} << 20) : (int64_t{1} << 24);
      if (n < 16 || n > max) {
        return Fail(
            Bad(origin, "resources." + key,
                "must be in [16, " + std::to_string(max) + "] MiB, got " + std::to_string(n)));
      }
      (key == "memory_mb" ? r->memory_mb : r->workspace_mb) = n;
    } else {
      return Fail(Error::InvalidArgument(toml::format_error(
          origin + ": unknown key resources." + key + " (known: cpus, memory_mb, disk_mb)", val,
          "here")));
    }
  }
  return {};
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(Error::FromErrno(errno, "open " + path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
void AppendUnique(std::vector<T>* to, const std::vector<T>& from) {
  for (const auto& x : from) {
    if (std::find(to->begin(), to->end(), x) == to->end()) to->push_back(x);
  }
}

}  // namespace

Result<TemplateSpec> ParseTemplateSpec(std::string_view text, const std::string& origin) {
  toml::value doc;
  try {
    std::istringstream in{std::string(text)};
    doc = toml::parse(in, origin);
  } catch (const std::exception& e) {
    return Fail(Error::InvalidArgument(std::string(e.what())));
  }
  TemplateSpec s;
  bool have_smoke = false;
  for (const auto& [key, v] : doc.as_table()) {
    if (key == "name") {
      ASB_ASSIGN_OR_RETURN(s.name, GetString(v, origin, key));
    } else if (key == "display_name") {
      ASB_ASSIGN_OR_RETURN(s.display_name, GetString(v, origin, key));
    } else if (key == "description") {
      ASB_ASSIGN_OR_RETURN(s.description, GetString(v, origin, key));
    } else if (key == "version") {
      ASB_ASSIGN_OR_RETURN(s.version, GetString(v, origin, key));
    } else if (key == "extends") {
      ASB_ASSIGN_OR_RETURN(s.extends, GetString(v, origin, key));
      if (!ValidateTemplateName(s.extends)) {
        return Fail(Bad(origin, key, "'" + s.extends + "' is not a template name"));
      }
    } else if (key == "tools") {
      ASB_ASSIGN_OR_RETURN(s.tools, GetStrings(v, origin, key));
    } else if (key == "packages") {
      ASB_ASSIGN_OR_RETURN(s.packages, GetStrings(v, origin, key));
      for (const auto& p : s.packages) {
        if (!IsDebianPackageName(p)) {
          return Fail(Bad(origin, key, "'" + p + "' is not a Debian package name"));
        }
      }
    } else if (key == "setup") {
      ASB_ASSIGN_OR_RETURN(s.setup, GetStrings(v, origin, key));
    } else if (key == "smoke_test") {
      ASB_ASSIGN_OR_RETURN(s.smoke_test, GetString(v, origin, key));
      have_smoke = true;
    } else if (key == "env") {
      if (!v.is_table()) {
        return Fail(Error::InvalidArgument(
            toml::format_error(origin + ": env must be a table of strings", v, "here")));
      }
      for (const auto& [k, ev] : v.as_table()) {
        if (!IsEnvName(k)) return Fail(Bad(origin, "env." + k, "not a variable name"));
        ASB_ASSIGN_OR_RETURN(s.env[k], GetString(ev, origin, "env." + k));
      }
    } else if (key == "resources") {
      ASB_TRY(ParseResources(v, origin, &s.resources));
    } else {
      return Fail(Error::InvalidArgument(toml::format_error(
          origin + ": unknown key '" + key +
              "' (known: name, display_name, description, version, extends, tools, packages, "
              "setup, smoke_test, env, resources)",
          v, "here")));
    }
  }
  if (s.name.empty()) return Fail(Bad(origin, "name", "is required"));
  if (auto st = ValidateTemplateName(s.name); !st) {
    return Fail(Bad(origin, "name", st.error().message()));
  }
  if (!have_smoke || s.smoke_test.empty()) {
    return Fail(
        Bad(origin, "smoke_test", "is required: a shell command that proves the template works"));
  }
  if (s.extends == s.name) return Fail(Bad(origin, "extends", "a template cannot extend itself"));
  if (s.display_name.empty()) s.display_name = s.name;
  std::sort(s.packages.begin(), s.packages.end());
  s.packages.erase(std::unique(s.packages.begin(), s.packages.end()), s.packages.end());
  return s;
}

std::vector<std::string> ListTemplateSpecs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (fs::exists(it->path() / kFileName, ec)) out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

Result<TemplateSpec> LoadFile(const fs::path& file, int depth, std::set<std::string>* seen) {
  ASB_ASSIGN_OR_RETURN(std::string text, ReadText(file.string()));
  ASB_ASSIGN_OR_RETURN(TemplateSpec s, ParseTemplateSpec(text, file.string()));
  fs::path dir = file.parent_path();
  s.source_dir = dir.string();
  std::string dir_name = fs::absolute(dir).filename().string();
  if (dir_name != s.name) {
    return Fail(Bad(file.string(), "name",
                    "'" + s.name + "' must equal its directory's name '" + dir_name + "'"));
  }
  if (!seen->insert(s.name).second) {
    return Fail(Bad(file.string(), "extends", "cycle through '" + s.name + "'"));
  }
  if (s.extends.empty()) return s;
  if (depth >= 4) return Fail(Bad(file.string(), "extends", "more than 4 levels"));
  fs::path parent_file = dir.parent_path() / s.extends / kFileName;
  std::error_code ec;
  if (!fs::exists(parent_file, ec)) {
    return Fail(Bad(file.string(), "extends",
                    "no template '" + s.extends + "' (looked for " + parent_file.string() + ")"));
  }
  ASB_ASSIGN_OR_RETURN(TemplateSpec parent, LoadFile(parent_file, depth + 1, seen));
  std::vector<std::string> tools = parent.tools;
  AppendUnique(&tools, s.tools);
  s.tools = std::move(tools);
  s.packages.insert(s.packages.end(), parent.packages.begin(), parent.packages.end());
  std::sort(s.packages.begin(), s.packages.end());
  s.packages.erase(std::unique(s.packages.begin(), s.packages.end()), s.packages.end());
  std::vector<std::string> setup = parent.setup;
  setup.insert(setup.end(), s.setup.begin(), s.setup.end());
  s.setup = std::move(setup);
  for (const auto& [k, v] : parent.env) s.env.try_emplace(k, v);
  return s;
}

}  // namespace

Result<TemplateSpec> LoadTemplateSpec(const std::string& name_or_path,
                                      const std::string& templates_src_dir) {
  fs::path file;
  std::error_code ec;
  if (name_or_path.find('/') == std::string::npos && name_or_path != "." && name_or_path != "..") {
    if (!ValidateTemplateName(name_or_path)) {
      return Fail(
          Error::InvalidArgument("'" + name_or_path + "' is neither a template name nor a path"));
    }
    file = fs::path(templates_src_dir) / name_or_path / kFileName;
    if (!fs::exists(file, ec)) {
      std::string names;
      for (const auto& n : ListTemplateSpecs(templates_src_dir)) {
        names += (names.empty() ? "" : ", ") + n;
      }
      return Fail(Error::NotFound("no template '" + name_or_path + "' in " + templates_src_dir +
                                  " (available: " + (names.empty() ? "none" : names) +
                                  "); give a path to build one from elsewhere"));
    }
  } else {
    file = name_or_path;
    if (fs::is_directory(file, ec)) file /= kFileName;
    if (!fs::exists(file, ec)) return Fail(Error::NotFound("no " + file.string()));
  }
  std::set<std::string> seen;
  return LoadFile(file, 0, &seen);
}

std::string TemplateRecipeHash(const TemplateSpec& s, std::string_view builder_id) {
  namespace json = boost::json;
  json::object o;
  auto arr = [](const std::vector<std::string>& v) {
    json::array a;
    for (const auto& x : v) a.emplace_back(x);
    return a;
  };
  o["builder"] = builder_id;
  o["name"] = s.name;
  o["display_name"] = s.display_name;
  o["description"] = s.description;
  o["version"] = s.version;
  o["extends"] = s.extends;
  o["tools"] = arr(s.tools);
  o["packages"] = arr(s.packages);
  o["setup"] = arr(s.setup);
  o["smoke_test"] = s.smoke_test;
  json::object env;
  for (const auto& [k, v] : s.env) env[k] = v;  // std::map: sorted, so canonical
  o["env"] = std::move(env);
  o["cpus"] = s.resources.cpus;
  o["memory_mb"] = s.resources.memory_mb;
  o["workspace_mb"] = s.resources.workspace_mb;
  std::string text = json::serialize(o);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

TemplateManifest ManifestFromSpec(const TemplateSpec& s, std::string_view recipe_hash) {
  TemplateManifest m;
  m.name = s.name;
  m.display_name = s.display_name;
  m.description = s.description;
  m.version = s.version;
  m.base = s.extends.empty() ? "debian:bookworm" : s.extends;
  m.source = "toml";
  m.tools = s.tools;
  m.packages = s.packages;
  m.env = s.env;
  m.resources = s.resources;
  m.smoke_test = s.smoke_test;
  m.recipe_hash = std::string(recipe_hash);
  return m;
}

}  // namespace asb::core
