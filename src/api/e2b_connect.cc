#include "api/e2b_connect.h"

#include <boost/json.hpp>

#include "api/errors.h"

namespace asb::api {

namespace json = boost::json;

std::string ConnectEnvelope(uint8_t flags, std::string_view payload) {
  std::string out;
  out.reserve(kConnectEnvelopeHeaderBytes + payload.size());
  const auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(payload);
  return out;
}

Result<std::string> ParseConnectRequestEnvelope(std::string_view body, size_t max_bytes) {
  if (body.size() < kConnectEnvelopeHeaderBytes) {
    return Fail(Error::InvalidArgument("connect: the request is not one enveloped message"));
  }
  const auto flags = static_cast<uint8_t>(body[0]);
  if (flags & kConnectFlagCompressed) {
    return Fail(Error::InvalidArgument("connect: compressed messages are not supported"));
  }
  if (flags != 0) return Fail(Error::InvalidArgument("connect: unexpected envelope flags"));
  uint32_t n = 0;
  for (size_t i = 1; i < kConnectEnvelopeHeaderBytes; ++i) {
    n = (n << 8) | static_cast<uint8_t>(body[i]);
  }
  if (n > max_bytes) {
    return Fail(Error(ErrorCode::kTooLarge, "connect: message of " + std::to_string(n) +
                                                " bytes is over the limit of " +
                                                std::to_string(max_bytes)));
  }
  if (body.size() - kConnectEnvelopeHeaderBytes != n) {
    return Fail(Error::InvalidArgument(
        "connect: the envelope's length does not match the body (one message expected)"));
  }
  return std::string(body.substr(kConnectEnvelopeHeaderBytes));
}

std::string_view ConnectCodeOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kUnauthenticated:
      return "unauthenticated";
    case ErrorCode::kPermissionDenied:
      return "permission_denied";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kConflict:
      return "failed_precondition";
    case ErrorCode::kTooLarge:
    case ErrorCode::kLimitExceeded:
      return "resource_exhausted";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kBackend:
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kTimeout:
      return "deadline_exceeded";
    case ErrorCode::kCancelled:
      return "canceled";
  }
  return "unknown";
}

int ConnectHttpStatus(std::string_view c) {
  // Connect protocol, "Error Codes": the HTTP status of each code for unary calls.
  if (c == "canceled") return 499;
  if (c == "invalid_argument" || c == "failed_precondition" || c == "out_of_range") return 400;
  if (c == "deadline_exceeded") return 504;
  if (c == "not_found") return 404;
  if (c == "already_exists" || c == "aborted") return 409;
  if (c == "permission_denied") return 403;
  if (c == "resource_exhausted") return 429;
  if (c == "unimplemented") return 501;
  if (c == "unavailable") return 503;
  if (c == "unauthenticated") return 401;
  return 500;  // unknown, internal, data_loss
}

std::string ConnectErrorJson(std::string_view connect_code, std::string_view message) {
  json::object o;
  o["code"] = connect_code;
  o["message"] = message;
  return json::serialize(o);
}

HttpResponse ConnectUnaryError(std::string_view connect_code, std::string_view message) {
  return JsonResponse(ConnectHttpStatus(connect_code), ConnectErrorJson(connect_code, message));
}

HttpResponse ConnectUnaryError(const Error& error) {
  ClientError c = ForClient(error);  // the one rule of what a client is told (ADR 0016)
  HttpResponse r = ConnectUnaryError(ConnectCodeOf(c.code), c.message);
  if (c.code == ErrorCode::kUnavailable) r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpResponse E2bHttpError(int status, std::string_view message) {
  json::object o;
  o["code"] = status;
  o["message"] = message;
  return JsonResponse(status, json::serialize(o));
}

HttpResponse E2bHttpError(const Error& error) {
  ClientError c = ForClient(error);
  HttpResponse r = E2bHttpError(HttpStatusOf(c.code), c.message);
  if (c.code == ErrorCode::kUnavailable) r.headers.emplace_back("Retry-After", "1");
  return r;
}

std::string ConnectEndStream(std::string_view connect_code, std::string_view message) {
  json::object err;
  err["code"] = connect_code;
  err["message"] = message;
  json::object o;
  o["error"] = std::move(err);
  return ConnectEnvelope(kConnectFlagEndStream, json::serialize(o));
}

std::string ConnectEndStream(const Error* error) {
  if (error == nullptr) return ConnectEnvelope(kConnectFlagEndStream, "{}");
  ClientError c = ForClient(*error);
  return ConnectEndStream(ConnectCodeOf(c.code), c.message);
}

HttpResponse ConnectStreamResponse(std::shared_ptr<StreamBody> body,
                                   const std::string& sandbox_id) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/connect+json";
  r.stream = std::move(body);
  r.sandbox_id = sandbox_id;
  return r;
}

HttpResponse ConnectStreamError(const Error& error, const std::string& sandbox_id) {
  HttpResponse r;
  r.status = 200;
  r.content_type = "application/connect+json";
  r.body = ConnectEndStream(&error);
  r.sandbox_id = sandbox_id;
  return r;
}

}  // namespace asb::api
