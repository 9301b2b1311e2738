// Request-target parsing for the router: percent-decoding (RFC 3986 section 2.1) and query
// strings in the application/x-www-form-urlencoded style ('+' is a space in queries only).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace asb::api {

/// Decodes %XX escapes (and '+' as space when `plus_is_space`). Returns nullopt for a
/// malformed escape.
std::optional<std::string> PercentDecode(std::string_view in, bool plus_is_space);

/// Encodes everything except RFC 3986 unreserved characters and '/' (for building targets in
/// the client).
std::string PercentEncode(std::string_view in);

/// Splits "/a/b?x=1&y=%20" into a decoded path and decoded query parameters (the last value of
/// a repeated name wins; a name without '=' has the value ""). A malformed escape keeps the
/// raw text, so that the path simply matches no route.
void SplitTarget(std::string_view target, std::string* path,
                 std::map<std::string, std::string>* query);

}  // namespace asb::api
