// Idempotency-Key on POST /v1/sandboxes, as Stripe defines it: the same key
// from the same tenant within 24 hours answers the first request's status and body again
// (with `Idempotent-Replayed: true`), so a client cut off mid-create can retry without making
// a second sandbox. The key with a different body is 409 conflict; a request with the key while
// the first one still runs is 409 conflict too (it does not wait: retry it). A failed create is
// not remembered. Keys live in agent-sandbox.db (store/idempotency.h) and survive a restart.
#pragma once

#include <functional>
#include <string_view>

#include "api/http_types.h"
#include "common/result.h"

namespace asb::store {
class Store;
}  // namespace asb::store

namespace asb::api {

/// The tenant a key belongs to: the request's owner (a key's lineage), or "key:<id>" for an
/// admin key (whose owner is every tenant), so no two callers share a key space.
std::string IdempotencyScope(const HttpRequest& req);

/// A canonical form of a JSON body (object members sorted by name, no blanks; "" = "{}"), so
/// the same request written differently counts as the same. Errors: kInvalidArgument.
Result<std::string> CanonicalJson(std::string_view body);

/// Runs `create` at most once per (tenant, key): see above. `key` is the header's value.
Result<HttpResponse> RunIdempotent(store::Store* store, const HttpRequest& req,
                                   std::string_view key,
                                   const std::function<Result<HttpResponse>()>& create);

}  // namespace asb::api
