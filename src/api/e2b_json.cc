// The JSON helpers of the E2B handlers (e2b_envd.h): tolerant of unknown fields, as protobuf's
// JSON mapping and E2B's API are (new SDKs add fields), strict about the types of known ones.
#include <boost/json.hpp>

#include "api/e2b_envd.h"

namespace asb::api {

namespace json = boost::json;

namespace {

std::string Label(std::string_view name, std::string_view label) {
  return std::string(label.empty() ? name : label);
}

}  // namespace

Result<json::object> JsonObject(std::string_view text) {
  if (text.empty()) return json::object();
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Fail(Error::InvalidArgument("the message is not a JSON object"));
  return std::move(v.as_object());
}

const json::value* FieldOf(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && !v->is_null() ? v : nullptr;
}

Result<std::optional<std::string>> StringOf(const json::object& o, std::string_view name,
                                            std::string_view label) {
  const json::value* v = FieldOf(o, name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string())
    return Fail(Error::InvalidArgument(Label(name, label) + ": must be a string"));
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<const json::object*> ObjectOf(const json::object& o, std::string_view name,
                                     std::string_view label) {
  const json::value* v = FieldOf(o, name);
  if (v == nullptr) return static_cast<const json::object*>(nullptr);
  if (!v->is_object())
    return Fail(Error::InvalidArgument(Label(name, label) + ": must be an object"));
  return &v->as_object();
}

Result<std::map<std::string, std::string>> StringMapOf(const json::object& o, std::string_view name,
                                                       std::string_view label) {
  std::map<std::string, std::string> out;
  ASB_ASSIGN_OR_RETURN(const json::object* m, ObjectOf(o, name, label));
  if (m == nullptr) return out;
  for (const auto& kv : *m) {
    if (!kv.value().is_string()) {
      return Fail(Error::InvalidArgument(Label(name, label) + ": values must be strings"));
    }
    out[std::string(kv.key())] = std::string(kv.value().as_string());
  }
  return out;
}

}  // namespace asb::api
