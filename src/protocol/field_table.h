// Internal to protocol/: the field tables that drive every message codec (messages.cc,
// proc_messages.cc) in both directions, so that a member is named once and the encoder and the
// decoder cannot disagree about it (docs/design/sandbox-protocol.md, section 7).
//
// A message struct S gets a specialization of MessageSchema<S> in the codec's file:
//
//   template <> struct MessageSchema<TarResult> {
//     static constexpr std::string_view kWhat = "tar result";   // names it in errors
//     static constexpr auto kFields = std::tuple(Field("entries", &TarResult::entries),
//                                                Field("bytes", &TarResult::bytes));
//   };
//
// and, for an OPEN body, `static constexpr std::string_view kOp = "tar.export";`, which the
// encoder writes first as "op" and the decoder checks when present.
//
// Encoding writes the members in table order (boost::json::object keeps insertion order, so the
// bytes are deterministic). Decoding reads them in the same order with Reader's strict types;
// an absent member keeps the struct's default, unknown members are ignored. Member kinds:
// std::string, bool, any integer, std::vector<std::string>, std::map<std::string, std::string>,
// a struct with its own MessageSchema (a nested object named by the key; absent or null keeps
// the default), and std::optional of a string or of such a struct (omitted when empty; null
// reads as empty).
#pragma once

#include <boost/json.hpp>
#include <concepts>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/result.h"
#include "protocol/json_util.h"

namespace asb::protocol::internal {

/// Specialized per message struct (see the file comment); the primary template is undefined.
template <typename S>
struct MessageSchema;

template <typename T>
concept HasSchema = requires {
  MessageSchema<T>::kFields;
};

template <typename T>
concept HasOp = requires {
  MessageSchema<T>::kOp;
};

/// Whether an encoder writes a member.
enum class Emit {
  kAlways,
  kUnlessDefault,  // omitted while equal to the default-constructed struct's value
};

/// One row of a field table: the JSON key, the member it maps to, when it is written.
template <typename S, typename M>
struct FieldDef {
  std::string_view key;
  M S::*member;
  Emit emit = Emit::kAlways;
};

/// A field table row; `key` is the member's name on the wire.
template <typename S, typename M>
constexpr FieldDef<S, M> Field(std::string_view key, M S::*member, Emit emit = Emit::kAlways) {
  return FieldDef<S, M>{key, member, emit};
}

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <HasSchema S>
void PutFields(const S& m, json::object* o);
template <HasSchema S>
Status ReadFields(const Reader& r, S* m);

// ---- one value -------------------------------------------------------------------------------

template <typename M>
json::value ToValue(const M& v) {
  if constexpr (std::is_same_v<M, std::string>) {
    return json::value(Sv(v));
  } else if constexpr (std::is_same_v<M, std::vector<std::string>>) {
    return json::value(StringArray(v));
  } else if constexpr (std::is_same_v<M, std::map<std::string, std::string>>) {
    json::object obj;
    for (const auto& [k, x] : v) obj[Sv(k)] = Sv(x);
    return json::value(std::move(obj));
  } else if constexpr (HasSchema<M>) {
    json::object obj;
    PutFields(v, &obj);
    return json::value(std::move(obj));
  } else {
    static_assert(std::is_integral_v<M>, "no JSON encoding for this member type");
    return json::value(v);
  }
}

// Reads member `key` of `r` into *out (unchanged when absent). Errors: kBackend
// "protocol: malformed ..." for a wrong type or an out-of-range number.
template <typename M>
Status FromValue(const Reader& r, std::string_view key, M* out) {
  if constexpr (IsOptional<M>::value) {
    using T = typename M::value_type;
    if constexpr (std::is_same_v<T, std::string>) {
      return ReadOptionalString(r, key, out);
    } else {
      static_assert(HasSchema<T>, "optional members are strings or nested messages");
      ASB_ASSIGN_OR_RETURN(const json::object* obj, r.Object(key));
      if (obj == nullptr) return {};
      T v;
      ASB_TRY(ReadFields(Reader(*obj, key), &v));
      *out = std::move(v);
      return {};
    }
  } else if constexpr (HasSchema<M>) {
    ASB_ASSIGN_OR_RETURN(const json::object* obj, r.Object(key));
    if (obj == nullptr) return {};
    return ReadFields(Reader(*obj, key), out);
  } else {
    return r.Get(key, out);
  }
}

// ---- one row ---------------------------------------------------------------------------------

template <typename S, typename M>
void PutField(const FieldDef<S, M>& f, const S& m, json::object* o) {
  const M& v = m.*f.member;
  if constexpr (IsOptional<M>::value) {
    if (v) (*o)[f.key] = ToValue(*v);
  } else {
    if constexpr (std::equality_comparable<M>) {
      if (f.emit == Emit::kUnlessDefault && v == S{}.*f.member) return;
    }
    (*o)[f.key] = ToValue(v);
  }
}

// ---- a whole table ---------------------------------------------------------------------------

/// Appends the members of `m` to `o` in table order.
template <HasSchema S>
void PutFields(const S& m, json::object* o) {
  std::apply([&](const auto&... f) { (PutField(f, m, o), ...); }, MessageSchema<S>::kFields);
}

/// Reads the members of the table from `r` into *m, in table order, stopping at the first error.
template <HasSchema S>
Status ReadFields(const Reader& r, S* m) {
  Status st;
  std::apply(
      [&](const auto&... f) {
        ((st = FromValue(r, f.key, &(m->*f.member)), st.has_value()) && ...);
      },
      MessageSchema<S>::kFields);
  return st;
}

/// The JSON object of `m`: "op" first for an OPEN body, then the table's members.
template <HasSchema S>
json::object ToObject(const S& m) {
  json::object o;
  if constexpr (HasOp<S>) o["op"] = MessageSchema<S>::kOp;
  PutFields(m, &o);
  return o;
}

/// Decodes an already parsed object; an OPEN body's "op", when present, must be the table's.
template <HasSchema S>
Result<S> FromObject(const json::object& obj) {
  Reader r(obj, MessageSchema<S>::kWhat);
  if constexpr (HasOp<S>) ASB_TRY(CheckOp(r, MessageSchema<S>::kOp));
  S m;
  ASB_TRY(ReadFields(r, &m));
  return m;
}

/// Compact JSON of `m`.
template <HasSchema S>
std::string Encode(const S& m) {
  return Serialize(ToObject(m));
}

/// Parses and decodes JSON text. Errors: kBackend "protocol: malformed <what>: ...".
template <HasSchema S>
Result<S> Decode(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, MessageSchema<S>::kWhat));
  return FromObject<S>(obj);
}

// ---- lists -----------------------------------------------------------------------------------

/// {"<key>": [object...]}: the INFO payload of a listing operation.
template <HasSchema S>
std::string EncodeList(std::string_view key, const std::vector<S>& items) {
  json::array arr;
  arr.reserve(items.size());
  for (const S& m : items) arr.emplace_back(ToObject(m));
  json::object o;
  o[key] = std::move(arr);
  return Serialize(o);
}

/// The items of {"<key>": [...]} (none when the key is absent); `what` names the listing in
/// errors. Errors: kBackend for a non-array, a non-object item or a malformed item.
template <HasSchema S>
Result<std::vector<S>> DecodeList(std::string_view text, std::string_view what,
                                  std::string_view key) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, what));
  std::vector<S> out;
  const json::value* v = obj.if_contains(key);
  if (v == nullptr) return out;
  if (!v->is_array()) {
    return Fail(Malformed(what, "\"" + std::string(key) + "\" must be an array"));
  }
  out.reserve(v->get_array().size());
  for (const json::value& e : v->get_array()) {
    if (!e.is_object()) return Fail(Malformed(what, "entries must be objects"));
    ASB_ASSIGN_OR_RETURN(S m, FromObject<S>(e.get_object()));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace asb::protocol::internal
