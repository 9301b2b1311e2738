#include "api/json_body.h"

#include <boost/json.hpp>
#include <cmath>
#include <set>

namespace asb::api {

namespace json = boost::json;

struct JsonBody::Impl {
  json::object object;
  std::set<std::string, std::less<>> known;

  // Returns the value of `name` or nullptr when absent or null, and remembers the name.
  const json::value* Find(std::string_view name) {
    known.emplace(name);
    const json::value* v = object.if_contains(name);
    if (v == nullptr || v->is_null()) return nullptr;
    return v;
  }
};

namespace {
Error TypeError(std::string_view name, std::string_view what) {
  return Error::InvalidArgument(std::string(name) + ": must be " + std::string(what));
}
}  // namespace

JsonBody::JsonBody(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JsonBody::JsonBody(JsonBody&&) noexcept = default;
JsonBody& JsonBody::operator=(JsonBody&&) noexcept = default;
JsonBody::~JsonBody() = default;

Result<JsonBody> JsonBody::Parse(std::string_view text) {
  auto impl = std::make_unique<Impl>();
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return JsonBody(std::move(impl));
  }
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) {
    return Fail(Error::InvalidArgument("request body is not valid JSON: " + ec.message()));
  }
  if (!v.is_object()) {
    return Fail(Error::InvalidArgument("request body must be a JSON object"));
  }
  impl->object = std::move(v.as_object());
  return JsonBody(std::move(impl));
}

Result<std::optional<std::string>> JsonBody::String(std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Fail(TypeError(name, "a string"));
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::optional<bool>> JsonBody::Bool(std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_bool()) return Fail(TypeError(name, "a boolean"));
  return std::optional<bool>(v->as_bool());
}

Result<std::optional<double>> JsonBody::Number(std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<double>();
  if (v->is_int64()) return std::optional<double>(static_cast<double>(v->as_int64()));
  if (v->is_uint64()) return std::optional<double>(static_cast<double>(v->as_uint64()));
  if (v->is_double()) return std::optional<double>(v->as_double());
  return Fail(TypeError(name, "a number"));
}

Result<std::optional<int64_t>> JsonBody::Integer(std::string_view name, int64_t min, int64_t max) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<int64_t>();
  std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_uint64()) {
    if (v->as_uint64() > static_cast<uint64_t>(max)) return Fail(TypeError(name, range));
    n = static_cast<int64_t>(v->as_uint64());
  } else if (v->is_double()) {
    double d = v->as_double();
    // Only doubles in [-2^63, 2^63) convert to int64_t; [min, max] is checked below on the
    // integer. (Comparing with double(max) let 2^63 through when max is INT64_MAX, since
    // double(INT64_MAX) rounds up to 2^63: an undefined conversion found by fuzz_api_bodies.)
    constexpr double kTwo63 = 9223372036854775808.0;
    if (!std::isfinite(d) || d != std::floor(d) || d < -kTwo63 || d >= kTwo63) {
      return Fail(TypeError(name, range));
    }
    n = static_cast<int64_t>(d);
  } else {
    return Fail(TypeError(name, range));
  }
  if (n < min || n > max) return Fail(TypeError(name, range));
  return std::optional<int64_t>(n);
}

Result<std::optional<std::vector<std::string>>> JsonBody::StringArray(std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<std::vector<std::string>>();
  if (!v->is_array()) return Fail(TypeError(name, "an array of strings"));
  std::vector<std::string> out;
  for (const json::value& e : v->as_array()) {
    if (!e.is_string()) return Fail(TypeError(name, "an array of strings"));
    out.emplace_back(e.as_string());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<JsonBody::StringOrList> JsonBody::StringOrStringArray(std::string_view name) {
  const json::value* v = impl_->Find(name);
  StringOrList out;
  if (v == nullptr) return out;
  if (v->is_string()) {
    out.string = std::string(v->as_string());
    return out;
  }
  if (!v->is_array()) return Fail(TypeError(name, "a string or an array of strings"));
  out.list.emplace();
  for (const json::value& e : v->as_array()) {
    if (!e.is_string()) return Fail(TypeError(name, "a string or an array of strings"));
    out.list->emplace_back(e.as_string());
  }
  return out;
}

Result<std::optional<std::map<std::string, std::string>>> JsonBody::StringMap(
    std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<std::map<std::string, std::string>>();
  if (!v->is_object()) return Fail(TypeError(name, "an object of strings"));
  std::map<std::string, std::string> out;
  for (const auto& kv : v->as_object()) {
    if (!kv.value().is_string()) {
      return Fail(Error::InvalidArgument(std::string(name) + "." + std::string(kv.key()) +
                                         ": must be a string"));
    }
    out.emplace(std::string(kv.key()), std::string(kv.value().as_string()));
  }
  return std::optional<std::map<std::string, std::string>>(std::move(out));
}

Result<std::optional<std::string>> JsonBody::ObjectJson(std::string_view name) {
  const json::value* v = impl_->Find(name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_object()) return Fail(TypeError(name, "an object"));
  return std::optional<std::string>(json::serialize(*v));
}

Status JsonBody::Finish() const {
  for (const auto& kv : impl_->object) {
    if (impl_->known.find(std::string_view(kv.key())) == impl_->known.end()) {
      return Fail(Error::InvalidArgument("unknown field: " + std::string(kv.key())));
    }
  }
  return {};
}

}  // namespace asb::api
