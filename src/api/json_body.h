// Strict reading of JSON request bodies (ADR 0007: one shape everywhere,
// validation included). A handler names every field it accepts; a field of the wrong type answers
// invalid_request naming the field, and Finish() rejects any field nobody asked for. Boost.JSON
// stays inside json_body.cc; exceptions from parsing are converted to Error here.
//
//   ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
//   ASB_ASSIGN_OR_RETURN(std::optional<double> cpus, body.Number("cpus"));
//   ASB_TRY(body.Finish());
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace asb::api {

class JsonBody {
 public:
  /// Parses `text` as one JSON object. An empty or all-whitespace body counts as {}.
  /// Errors: kInvalidArgument ("request body is not valid JSON: ...", "... must be a JSON
  /// object").
  static Result<JsonBody> Parse(std::string_view text);

  JsonBody(JsonBody&&) noexcept;
  JsonBody& operator=(JsonBody&&) noexcept;
  ~JsonBody();

  /// Each getter marks `name` as known and returns nullopt when the field is absent or null.
  /// Errors: kInvalidArgument "<name>: must be a string" (and so on) for a wrong type.
  Result<std::optional<std::string>> String(std::string_view name);
  Result<std::optional<bool>> Bool(std::string_view name);
  /// Any JSON number.
  Result<std::optional<double>> Number(std::string_view name);
  /// An integral number (5 or 5.0) in [min, max]. Errors name the field and the range.
  Result<std::optional<int64_t>> Integer(std::string_view name, int64_t min, int64_t max);
  Result<std::optional<std::vector<std::string>>> StringArray(std::string_view name);
  /// A field that is a string or an array of strings (seed B's exec "command"): at most one
  /// member is set, neither when the field is absent or null.
  struct StringOrList {
    std::optional<std::string> string;
    std::optional<std::vector<std::string>> list;
  };
  /// Errors: kInvalidArgument "<name>: must be a string or an array of strings".
  Result<StringOrList> StringOrStringArray(std::string_view name);
  /// An object whose values are all strings.
  Result<std::optional<std::map<std::string, std::string>>> StringMap(std::string_view name);

  /// An object field, re-serialised as JSON text (for a nested shape parsed by its owner).
  /// Errors: kInvalidArgument "<name>: must be an object".
  Result<std::optional<std::string>> ObjectJson(std::string_view name);

  /// Errors: kInvalidArgument "unknown field: x" when the body holds a field that no getter
  /// asked for.
  Status Finish() const;

 private:
  struct Impl;
  explicit JsonBody(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The one value of a field and its alias, each read with the same getter (e.g. "template"
/// and seed B's "image"): either may be given, or both with equal values.
/// Errors: kInvalidArgument "<name> and <alias>: both given with different values (they are
/// aliases)".
template <typename T>
Result<std::optional<T>> MergeAlias(std::string_view name, std::optional<T> value,
                                    std::string_view alias, std::optional<T> alias_value) {
  if (value && alias_value && !(*value == *alias_value)) {
    return Fail(Error::InvalidArgument(std::string(name) + " and " + std::string(alias) +
                                       ": both given with different values (they are aliases)"));
  }
  return value ? std::move(value) : std::move(alias_value);
}

}  // namespace asb::api
