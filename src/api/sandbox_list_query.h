// The filters and order of a sandbox list, as /v1 (GET /v1/sandboxes) and E2B (GET
// /v2/sandboxes, /sandboxes) ask for them: the template, a window of start times, and
// newest-first or oldest-first. The two surfaces spell the query parameters differently
// (started_after / startedAfter), so each names its own; the rules are one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/http_types.h"
#include "common/result.h"
#include "core/sandbox_types.h"

namespace asb::api {

/// What a list keeps, and in which order.
struct SandboxListQuery {
  std::optional<std::string> template_name{};  // only sandboxes of this template
  std::optional<int64_t> started_after_ms{};   // created at or after (Unix ms)
  std::optional<int64_t> started_before_ms{};  // created before (Unix ms)
  bool newest_first = false;
};

/// The query parameter names of one surface.
struct SandboxListParams {
  const char* template_name;   // "template"
  const char* started_after;   // "started_after" or E2B's "startedAfter"
  const char* started_before;  // "started_before" or E2B's "startedBefore"
  bool newest_first_default;   // E2B lists newest first; /v1 oldest first
};

/// Reads `order` (asc | desc; absent: the surface's default), the template and the start-time
/// window (RFC 3339 UTC, or Unix milliseconds) from `req`'s query. An empty value is no filter.
/// Errors: kInvalidArgument naming the parameter (an unknown order, a malformed time, a window
/// whose end is not after its start): a filter is never silently ignored.
Result<SandboxListQuery> ParseSandboxListQuery(const HttpRequest& req, const SandboxListParams& p);

/// Whether `s` passes q's filters.
bool Matches(const SandboxListQuery& q, const core::SandboxInfo& s);

/// Sorts `all` by start time (then id) in q's order, dropping those that do not match.
void FilterAndOrder(const SandboxListQuery& q, std::vector<core::SandboxInfo>* all);

}  // namespace asb::api
