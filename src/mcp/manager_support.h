// What the two files of the manager back end share (manager_backend.cc,
// manager_backend_procs.cc): core Errors as the REST API's wire codes and messages, the id
// check, and list answers.
#pragma once

#include <boost/json.hpp>
#include <string_view>

#include "common/error.h"
#include "mcp/backend.h"

namespace asb::mcp {

/// `e` as a ToolError: its wire code (api/errors.h) and message; internal errors say only
/// "internal error" (the details stay in the log).
tl::unexpected<ToolError> FromError(const Error& e);

/// not_found "<what> not found" unless `id` is `prefix` + 16 hex (before it reaches a path).
ToolResult<void> CheckId(std::string_view id, std::string_view prefix, std::string_view what);

/// A list call's answer `all` as {key: [to_json(item)...]}, or its error.
template <typename List, typename ToJson>
ToolResult<boost::json::object> ListJson(const List& all, std::string_view key, ToJson to_json) {
  if (!all) return FromError(all.error());
  boost::json::array list;
  for (const auto& item : *all) list.emplace_back(to_json(item));
  boost::json::object o;
  o[key] = std::move(list);
  return o;
}

}  // namespace asb::mcp
