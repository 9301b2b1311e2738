#include "store/sealed_spec.h"

#include <boost/json.hpp>

namespace asb::store {

namespace json = boost::json;

namespace {

constexpr std::string_view kEnv = "env";
constexpr std::string_view kSealedEnv = "env_sealed";

json::object* ParseObject(std::string_view text, json::value& holder) {
  boost::system::error_code ec;
  holder = json::parse(text, ec);
  if (ec || !holder.is_object()) return nullptr;
  return &holder.as_object();
}

}  // namespace

std::string SealSpecEnv(const SecretBox& box, std::string_view spec_json) {
  json::value v;
  json::object* o = ParseObject(spec_json, v);
  if (o == nullptr) return std::string(spec_json);
  const json::value* env = o->if_contains(kEnv);
  if (env == nullptr || !env->is_object() || env->as_object().empty()) {
    return std::string(spec_json);
  }
  (*o)[kSealedEnv] = box.Seal(json::serialize(*env));
  o->erase(kEnv);
  return json::serialize(*o);
}

std::string OpenSpecEnv(const SecretBox& box, std::string_view spec_json) {
  if (spec_json.find(kSealedEnv) == std::string_view::npos) return std::string(spec_json);
  json::value v;
  json::object* o = ParseObject(spec_json, v);
  if (o == nullptr) return std::string(spec_json);
  const json::value* sealed = o->if_contains(kSealedEnv);
  if (sealed == nullptr || !sealed->is_string()) return std::string(spec_json);
  auto plain = box.Open(sealed->as_string());
  o->erase(kSealedEnv);
  if (plain) {
    boost::system::error_code ec;
    json::value env = json::parse(*plain, ec);
    if (!ec && env.is_object()) (*o)[kEnv] = std::move(env);
  }
  return json::serialize(*o);
}

bool HasPlainEnv(std::string_view spec_json) {
  if (spec_json.find("\"env\"") == std::string_view::npos) return false;
  json::value v;
  json::object* o = ParseObject(spec_json, v);
  if (o == nullptr) return false;
  const json::value* env = o->if_contains(kEnv);
  return env != nullptr && env->is_object() && !env->as_object().empty();
}

}  // namespace asb::store
