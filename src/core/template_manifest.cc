#include "core/template_manifest.h"

#include <boost/json.hpp>
#include <ctime>
#include <fstream>
#include <sstream>

namespace asb::core {

namespace json = boost::json;

namespace {

json::array StringArray(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(s);
  return a;
}

json::object StringMap(const std::map<std::string, std::string>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

void Pretty(std::ostream& os, const json::value& v, int indent) {
  std::string pad(indent * 2, ' ');
  std::string inner((indent + 1) * 2, ' ');
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.empty()) {
      os << "{}";
      return;
    }
    os << "{\n";
    bool first = true;
    for (const auto& kv : o) {
      if (!first) os << ",\n";
      first = false;
      os << inner << json::serialize(json::value(kv.key())) << ": ";
      Pretty(os, kv.value(), indent + 1);
    }
    os << "\n" << pad << "}";
  } else if (v.is_array()) {
    const auto& a = v.get_array();
    if (a.empty()) {
      os << "[]";
      return;
    }
    os << "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      if (i) os << ",\n";
      os << inner;
      Pretty(os, a[i], indent + 1);
    }
    os << "\n" << pad << "]";
  } else {
    os << json::serialize(v);
  }
}

class Reader {
 public:
  explicit Reader(const json::object& o) : o_(o) {}

  Status String(const char* key, std::string* out) {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_string()) return Bad(key, "a string");
    *out = std::string(v->get_string());
    return {};
  }
  Status Strings(const char* key, std::vector<std::string>* out) {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_array()) return Bad(key, "an array of strings");
    for (const auto& e : v->get_array()) {
      if (!e.is_string()) return Bad(key, "an array of strings");
      out->emplace_back(e.get_string());
    }
    return {};
  }
  Status Map(const char* key, std::map<std::string, std::string>* out) {
    const json::value* v = o_.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_object()) return Bad(key, "an object of strings");
    for (const auto& kv : v->get_object()) {
      if (!kv.value().is_string()) return Bad(key, "an object of strings");
      (*out)[std::string(kv.key())] = std::string(kv.value().get_string());
    }
    return {};
  }
  Status Int(const json::object& o, const char* key, int64_t* out) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (v->is_int64()) {
      *out = v->get_int64();
    } else if (v->is_uint64() && v->get_uint64() <= INT64_MAX) {
      *out = static_cast<int64_t>(v->get_uint64());
    } else {
      return Bad(key, "an integer");
    }
    return {};
  }
  Status Double(const json::object& o, const char* key, double* out) {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return {};
    if (!v->is_number()) return Bad(key, "a number");
    *out = v->to_number<double>();
    return {};
  }

 private:
  static Status Bad(const char* key, const char* what) {
    return Fail(Error::InvalidArgument(std::string("manifest: '") + key + "' must be " + what));
  }
  const json::object& o_;
};

}  // namespace

std::string ManifestToJson(const TemplateManifest& m) {
  json::object o;
  o["name"] = m.name;
  o["display_name"] = m.display_name;
  o["description"] = m.description;
  o["version"] = m.version;
  o["base"] = m.base;
  o["source"] = m.source;
  o["tools"] = StringArray(m.tools);
  o["packages"] = StringArray(m.packages);
  o["env"] = StringMap(m.env);
  o["labels"] = StringMap(m.labels);
  json::object r;
  r["cpus"] = m.resources.cpus;
  r["memory_mb"] = m.resources.memory_mb;
  r["workspace_mb"] = m.resources.workspace_mb;
  o["resources"] = std::move(r);
  o["smoke_test"] = m.smoke_test;
  o["workdir"] = m.workdir;
  o["user"] = m.user;
  o["created_at"] = m.created_at;
  o["size_bytes"] = m.size_bytes;
  o["recipe_hash"] = m.recipe_hash;
  std::ostringstream os;
  Pretty(os, o, 0);
  os << "\n";
  return os.str();
}

Result<TemplateManifest> ParseManifest(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Fail(Error::InvalidArgument("manifest: not JSON: " + ec.message()));
  if (!v.is_object()) return Fail(Error::InvalidArgument("manifest: not a JSON object"));
  const json::object& o = v.get_object();
  Reader r(o);
  TemplateManifest m;
  ASB_TRY(r.String("name", &m.name));
  if (m.name.empty()) return Fail(Error::InvalidArgument("manifest: 'name' is required"));
  ASB_TRY(r.String("display_name", &m.display_name));
  ASB_TRY(r.String("description", &m.description));
  ASB_TRY(r.String("version", &m.version));
  ASB_TRY(r.String("base", &m.base));
  ASB_TRY(r.String("source", &m.source));
  ASB_TRY(r.Strings("tools", &m.tools));
  ASB_TRY(r.Strings("packages", &m.packages));
  ASB_TRY(r.Map("env", &m.env));
  ASB_TRY(r.Map("labels", &m.labels));
  if (const json::value* res = o.if_contains("resources"); res && !res->is_null()) {
    if (!res->is_object()) {
      return Fail(Error::InvalidArgument("manifest: 'resources' must be an object"));
    }
    const json::object& ro = res->get_object();
    ASB_TRY(r.Double(ro, "cpus", &m.resources.cpus));
    ASB_TRY(r.Int(ro, "memory_mb", &m.resources.memory_mb));
    ASB_TRY(r.Int(ro, "workspace_mb", &m.resources.workspace_mb));
  }
  ASB_TRY(r.String("smoke_test", &m.smoke_test));
  ASB_TRY(r.String("workdir", &m.workdir));
  ASB_TRY(r.String("user", &m.user));
  ASB_TRY(r.String("created_at", &m.created_at));
  if (m.created_at.empty()) ASB_TRY(r.String("built_at", &m.created_at));  // pre-0012 script
  ASB_TRY(r.Int(o, "size_bytes", &m.size_bytes));
  ASB_TRY(r.String("recipe_hash", &m.recipe_hash));
  if (m.display_name.empty()) m.display_name = m.name;
  return m;
}

Result<TemplateManifest> ReadManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(Error::FromErrno(errno, "open " + path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = ParseManifest(ss.str());
  if (!m) return Fail(std::move(m).error().WithContext(path));
  return m;
}

std::string NowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace asb::core
