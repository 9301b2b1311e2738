#include "common/error.h"

#include <cerrno>
#include <cstring>

#include "common/result.h"

namespace asb {

namespace {
struct CodeName {
  ErrorCode code;
  std::string_view name;
};
constexpr CodeName kCodeNames[] = {
    {ErrorCode::kInvalidArgument, "invalid_request"},
    {ErrorCode::kUnauthenticated, "unauthorized"},
    {ErrorCode::kPermissionDenied, "forbidden"},
    {ErrorCode::kNotFound, "not_found"},
    {ErrorCode::kConflict, "conflict"},
    {ErrorCode::kTooLarge, "payload_too_large"},
    {ErrorCode::kLimitExceeded, "limit_exceeded"},
    {ErrorCode::kInternal, "internal"},
    {ErrorCode::kBackend, "backend_error"},
    {ErrorCode::kUnavailable, "unavailable"},
    {ErrorCode::kTimeout, "timeout"},
    {ErrorCode::kCancelled, "cancelled"},
};

ErrorCode CodeForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ESRCH:
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return ErrorCode::kPermissionDenied;
    case EEXIST:
    case ENOTEMPTY:
    case EBUSY:
      return ErrorCode::kConflict;
    case ENOSPC:
    case EDQUOT:
    case EAGAIN:
    case EMFILE:
    case ENFILE:
      return ErrorCode::kLimitExceeded;
    case EINVAL:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
    case EXDEV:
      return ErrorCode::kInvalidArgument;
    case EFBIG:
      return ErrorCode::kTooLarge;
    case ETIMEDOUT:
      return ErrorCode::kTimeout;
    default:
      return ErrorCode::kInternal;
  }
}
}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& c : kCodeNames) {
    if (c.code == code) return c.name;
  }
  return "internal";
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (const auto& c : kCodeNames) {
    if (c.name == name) return c.code;
  }
  return ErrorCode::kInternal;
}

Error Error::FromErrno(int err, std::string_view context) {
  return FromErrno(CodeForErrno(err), err, context);
}

Error Error::FromErrno(ErrorCode code, int err, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  return Error(code, std::move(msg), err);
}

Error Error::WithContext(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).WithContext(context);
}

Error Error::WithContext(std::string_view context) && {
  std::string msg(context);
  msg += ": ";
  msg += message_;
  message_ = std::move(msg);
  return std::move(*this);
}

std::string Error::ToString() const {
  std::string s(code_name());
  s += ": ";
  s += message_;
  return s;
}

tl::unexpected<Error> FailErrno(std::string_view context) {
  return Fail(Error::FromErrno(errno, context));
}

}  // namespace asb
