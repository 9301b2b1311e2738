#include "api/errors.h"

#include <boost/json.hpp>
#include <string>

#include "api/text.h"
#include "common/log.h"

namespace asb::api {

int HttpStatusOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kPermissionDenied:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kTooLarge:
      return 413;
    case ErrorCode::kLimitExceeded:
      return 429;
    case ErrorCode::kInternal:
      return 500;
    case ErrorCode::kBackend:
      return 502;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kCancelled:
      return 503;
    case ErrorCode::kTimeout:
      return 504;
  }
  return 500;
}

std::string_view WireCodeOf(ErrorCode code) {
  if (code == ErrorCode::kCancelled) return "unavailable";
  return ErrorCodeName(code);
}

std::string ErrorJson(std::string_view code, std::string_view message) {
  boost::json::object inner;
  inner["code"] = code;
  // Messages quote what the client sent (a path, a header, a query value), which may be any
  // bytes; JSON text must be UTF-8 (RFC 8259 section 8.1), and Boost.JSON copies strings
  // verbatim, so invalid sequences become U+FFFD here. Found by fuzz/fuzz_http.cc.
  inner["message"] = SanitizeUtf8(message);
  boost::json::object outer;
  outer["error"] = std::move(inner);
  return boost::json::serialize(outer);
}

HttpResponse ErrorResponse(int status, std::string_view code, std::string_view message) {
  return JsonResponse(status, ErrorJson(code, message));
}

namespace {

std::string WithRequestId(std::string message, std::string_view request_id) {
  if (!request_id.empty()) message += " (request id " + std::string(request_id) + ")";
  return message;
}

}  // namespace

ClientError ForClient(const Error& error, std::string_view request_id) {
  if (error.from_host_call()) {
    ErrorCode code = error.code();
    if (code != ErrorCode::kInternal && code != ErrorCode::kUnavailable &&
        code != ErrorCode::kTimeout && code != ErrorCode::kCancelled) {
      code = ErrorCode::kBackend;
    }
    spdlog::warn("request_id={} host failure answered as {}: {}", request_id, ErrorCodeName(code),
                 error.ToString());
    return {code, WithRequestId(error.ClientSafeMessage(), request_id)};
  }
  if (error.code() == ErrorCode::kInternal) {
    spdlog::error("request_id={} internal error: {}", request_id, error.ToString());
    return {ErrorCode::kInternal, WithRequestId(error.ClientSafeMessage(), request_id)};
  }
  return {error.code(), error.message()};
}

HttpResponse ErrorResponse(const Error& error, std::string_view request_id) {
  ClientError c = ForClient(error, request_id);
  HttpResponse r = ErrorResponse(HttpStatusOf(c.code), WireCodeOf(c.code), c.message);
  // A resource that frees itself (a spent budget, a full queue): RFC 9110 section 10.2.3.
  if (c.code == ErrorCode::kUnavailable) r.headers.emplace_back("Retry-After", "1");
  return r;
}

}  // namespace asb::api
