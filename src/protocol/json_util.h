// Internal to protocol/: the JSON helpers behind every message codec (messages.cc,
// proc_messages.cc): strict typed member reads, the "protocol: malformed ..." error, and
// deterministic compact serialization (docs/design/sandbox-protocol.md, section 7).
#pragma once

#include <boost/json.hpp>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/result.h"

namespace asb::protocol::internal {

namespace json = boost::json;

inline Error Malformed(std::string_view what, std::string_view detail) {
  std::string msg = "protocol: malformed ";
  msg += what;
  msg += ": ";
  msg += detail;
  return Error::Backend(std::move(msg));
}

inline Result<json::object> ParseObject(std::string_view text, std::string_view what) {
  json::parse_options opts;
  opts.allow_invalid_utf8 = true;
  opts.max_depth = 16;
  boost::system::error_code ec;
  json::value v;
  try {
    v = json::parse(text, ec, {}, opts);
  } catch (const std::exception& e) {  // bad_alloc and friends; parse() reports via ec otherwise
    return Fail(Malformed(what, e.what()));
  }
  if (ec) return Fail(Malformed(what, ec.message()));
  if (!v.is_object()) return Fail(Malformed(what, "not a JSON object"));
  return std::move(v.as_object());
}

// Reads an optional member into *out, leaving the default when absent. Each overload checks the
// JSON type and range strictly.
class Reader {
 public:
  Reader(const json::object& obj, std::string_view what) : obj_(obj), what_(what) {}

  Status Get(std::string_view key, std::string* out) const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr) return {};
    if (!v->is_string()) return Fail(TypeError(key, "a string"));
    const json::string& s = v->get_string();
    out->assign(s.data(), s.size());
    return {};
  }

  Status Get(std::string_view key, bool* out) const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr) return {};
    if (!v->is_bool()) return Fail(TypeError(key, "a boolean"));
    *out = v->get_bool();
    return {};
  }

  template <typename Int>
  requires std::is_integral_v<Int> Status Get(std::string_view key, Int* out)
  const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr) return {};
    using Lim = std::numeric_limits<Int>;
    if (v->is_int64()) {
      int64_t x = v->get_int64();
      if constexpr (std::is_unsigned_v<Int>) {
        if (x < 0 || static_cast<uint64_t>(x) > uint64_t{Lim::max()}) return Fail(Range(key));
      } else {
        if (x < int64_t{Lim::min()} || x > int64_t{Lim::max()}) return Fail(Range(key));
      }
      *out = static_cast<Int>(x);
      return {};
    }
    if (v->is_uint64()) {
      uint64_t x = v->get_uint64();
      if (x > static_cast<uint64_t>(Lim::max())) return Fail(Range(key));
      *out = static_cast<Int>(x);
      return {};
    }
    return Fail(TypeError(key, "an integer"));
  }

  Status Get(std::string_view key, std::vector<std::string>* out) const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr) return {};
    if (!v->is_array()) return Fail(TypeError(key, "an array of strings"));
    out->clear();
    for (const json::value& e : v->get_array()) {
      if (!e.is_string()) return Fail(TypeError(key, "an array of strings"));
      out->emplace_back(e.get_string().data(), e.get_string().size());
    }
    return {};
  }

  Status Get(std::string_view key, std::map<std::string, std::string>* out) const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr) return {};
    if (!v->is_object()) return Fail(TypeError(key, "an object of strings"));
    out->clear();
    for (const auto& kv : v->get_object()) {
      if (!kv.value().is_string()) return Fail(TypeError(key, "an object of strings"));
      (*out)[std::string(kv.key())] =
          std::string(kv.value().get_string().data(), kv.value().get_string().size());
    }
    return {};
  }

  /// The member `key` as an object, nullptr when absent or null; error for another type.
  Result<const json::object*> Object(std::string_view key) const {
    const json::value* v = obj_.if_contains(key);
    if (v == nullptr || v->is_null()) return nullptr;
    if (!v->is_object()) return Fail(TypeError(key, "an object"));
    return &v->get_object();
  }

  /// True if `key` is present and not null.
  bool Has(std::string_view key) const {
    const json::value* v = obj_.if_contains(key);
    return v != nullptr && !v->is_null();
  }

  std::string_view what() const { return what_; }

 private:
  Error TypeError(std::string_view key, std::string_view expected) const {
    return Malformed(what_, "\"" + std::string(key) + "\" must be " + std::string(expected));
  }
  Error Range(std::string_view key) const {
    return Malformed(what_, "\"" + std::string(key) + "\" is out of range");
  }

  const json::object& obj_;
  std::string_view what_;
};

// Checks that an OPEN body, if it names an op, names `op`.
inline Status CheckOp(const Reader& r, std::string_view op) {
  std::string got;
  ASB_TRY(r.Get("op", &got));
  if (!got.empty() && got != op) {
    return Fail(Malformed(r.what(), "op is \"" + got + "\", expected \"" + std::string(op) + "\""));
  }
  return {};
}

inline std::string Serialize(const json::object& o) { return json::serialize(o); }

inline json::string_view Sv(const std::string& s) { return json::string_view(s.data(), s.size()); }

// A JSON array of the strings in `v`, in order.
inline json::array StringArray(const std::vector<std::string>& v) {
  json::array a;
  for (const auto& s : v) a.emplace_back(Sv(s));
  return a;
}

// Reads string member `key` into *out when present and not null; leaves *out as it is otherwise.
inline Status ReadOptionalString(const Reader& r, std::string_view key,
                                 std::optional<std::string>* out) {
  if (!r.Has(key)) return {};
  std::string s;
  ASB_TRY(r.Get(key, &s));
  *out = std::move(s);
  return {};
}

inline json::object WithOp(std::string_view op) {
  json::object o;
  o["op"] = op;
  return o;
}

}  // namespace asb::protocol::internal
