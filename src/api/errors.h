// The one function that turns an Error into an HTTP response (STYLE.md, the firecracker row:
// "one function that turns outcomes into HTTP responses"). Every failure the API answers —
// validation, routing, the manager, the backend — leaves through here, so every error has the
// shape {"error":{"code":"not_found","message":"..."}} of ARCHITECTURE.md "API conventions".
#pragma once

#include <string_view>

#include "api/http_types.h"
#include "common/error.h"

namespace asb::api {

/// The HTTP status of an error code: kInvalidArgument 400, kUnauthenticated 401,
/// kPermissionDenied 403, kNotFound 404, kConflict 409, kTooLarge 413, kLimitExceeded 429,
/// kInternal 500, kBackend 502, kUnavailable and kCancelled 503, kTimeout 504.
int HttpStatusOf(ErrorCode code);

/// The wire code of an error code: ErrorCodeName(), except kCancelled which answers
/// "unavailable" (the only party that can see it is a client of a stopping server).
std::string_view WireCodeOf(ErrorCode code);

/// The response for `error`. Internal errors (500) carry a generic message naming the request
/// id; the full message goes to the log only (it may name host paths). Never a stack trace.
HttpResponse ErrorResponse(const Error& error, std::string_view request_id = {});

/// An error response with an explicit status and code, for the router's 404 and 405
/// ("method_not_allowed") and the session's protocol errors (400, 413, 431).
HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message);

/// The JSON text {"error":{"code":...,"message":...}}.
std::string ErrorJson(std::string_view code, std::string_view message);

}  // namespace asb::api
