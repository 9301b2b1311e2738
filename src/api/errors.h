// The one function that turns an Error into an HTTP response (ADR 0007,
// "One error shape"; as firecracker's API server does). Every failure the API answers —
// validation, routing, the manager, the backend — leaves through here, so every error has the
// shape {"error":{"code":"not_found","message":"..."}} of ADR 0007 and ADR 0016.
#pragma once

#include <string>
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

/// What a client may be told of an error: the code it sees and a message safe to show.
struct ClientError {
  ErrorCode code;
  std::string message;
};

/// The one rule for what of an Error leaves the server (ADR 0016), used by every answer:
/// JSON errors, NDJSON stream and WebSocket error events, MCP tool errors.
///  - A failed host call (Error::from_host_call(): a FromErrno made in this process, never one
///    sandboxd made about a path inside the sandbox) is `backend_error` (502), or `internal`,
///    `unavailable`, `timeout` where FromErrno was told so, whatever its errno suggested: a host
///    EBUSY is no client conflict, a full host disk no client quota. Its message keeps only the
///    operation named by the context above the call, with host paths replaced by "(host path)",
///    then "a host operation failed", and the request id when given.
///  - Any other kInternal: "internal error", and the request id when given.
///  - Everything else: its code and message as written by the code that knew the cause.
/// The full error of the first two kinds is logged (warn / error) with the request id.
ClientError ForClient(const Error& error, std::string_view request_id = {});

/// The response for `error`, as ForClient says (so 500s carry a generic message naming the
/// request id, and host failures no host text). Never a stack trace.
HttpResponse ErrorResponse(const Error& error, std::string_view request_id = {});

/// An error response with an explicit status and code, for the router's 404 and 405
/// ("method_not_allowed") and the session's protocol errors (400, 413, 431).
HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message);

/// The JSON text {"error":{"code":...,"message":...}}.
std::string ErrorJson(std::string_view code, std::string_view message);

}  // namespace asb::api
