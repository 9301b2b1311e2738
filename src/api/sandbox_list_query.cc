#include "api/sandbox_list_query.h"

#include <algorithm>

#include "api/auth.h"
#include "api/config.h"

namespace asb::api {

namespace {

// A point in time as a list filter takes it: RFC 3339 UTC, or Unix milliseconds.
Result<std::optional<int64_t>> TimeParam(const HttpRequest& req, const char* name) {
  const std::string* v = req.Query(name);
  if (v == nullptr || v->empty()) return std::optional<int64_t>();
  if (v->find_first_not_of("0123456789") == std::string::npos) {
    auto n = ParseInteger(*v, 0, INT64_MAX / 2);
    if (!n) return Fail(Error::InvalidArgument(std::string(name) + ": " + n.error().message()));
    return std::optional<int64_t>(*n);
  }
  auto t = ParseRfc3339Ms(*v);
  if (!t) {
    return Fail(
        Error::InvalidArgument(std::string(name) + ": an RFC 3339 UTC time or Unix milliseconds"));
  }
  return std::optional<int64_t>(*t);
}

}  // namespace

Result<SandboxListQuery> ParseSandboxListQuery(const HttpRequest& req, const SandboxListParams& p) {
  SandboxListQuery q;
  q.newest_first = p.newest_first_default;
  if (const std::string* order = req.Query("order"); order != nullptr && !order->empty()) {
    if (*order != "asc" && *order != "desc") {
      return Fail(Error::InvalidArgument("order: asc or desc"));
    }
    q.newest_first = *order == "desc";
  }
  if (const std::string* t = req.Query(p.template_name); t != nullptr && !t->empty()) {
    q.template_name = *t;
  }
  ASB_ASSIGN_OR_RETURN(q.started_after_ms, TimeParam(req, p.started_after));
  ASB_ASSIGN_OR_RETURN(q.started_before_ms, TimeParam(req, p.started_before));
  if (q.started_after_ms && q.started_before_ms && *q.started_before_ms <= *q.started_after_ms) {
    return Fail(Error::InvalidArgument(std::string(p.started_before) + ": must be after " +
                                       p.started_after));
  }
  return q;
}

bool Matches(const SandboxListQuery& q, const core::SandboxInfo& s) {
  if (q.template_name && s.template_name != *q.template_name) return false;
  if (q.started_after_ms && s.created_at_ms < *q.started_after_ms) return false;
  if (q.started_before_ms && s.created_at_ms >= *q.started_before_ms) return false;
  return true;
}

void FilterAndOrder(const SandboxListQuery& q, std::vector<core::SandboxInfo>* all) {
  std::erase_if(*all, [&](const core::SandboxInfo& s) { return !Matches(q, s); });
  std::stable_sort(all->begin(), all->end(),
                   [&](const core::SandboxInfo& a, const core::SandboxInfo& b) {
                     if (a.created_at_ms != b.created_at_ms) {
                       return q.newest_first ? a.created_at_ms > b.created_at_ms
                                             : a.created_at_ms < b.created_at_ms;
                     }
                     return q.newest_first ? a.id > b.id : a.id < b.id;
                   });
}

}  // namespace asb::api
