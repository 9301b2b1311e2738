#include "common/error.h"

#include <algorithm>
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
  return FromHost(code, context, std::strerror(err), err);
}

Error Error::FromHost(ErrorCode code, std::string_view context, std::string_view host_text,
                      int sys_errno) {
  std::string detail(context);
  if (!detail.empty()) detail += ": ";
  detail += host_text;
  Error e = WithOperatorDetail(code, std::string(kHostFailure), std::move(detail), sys_errno);
  e.from_host_call_ = true;
  return e;
}

Error Error::WithOperatorDetail(ErrorCode code, std::string message, std::string detail,
                                int sys_errno) {
  Error e(code, std::move(message), sys_errno);
  if (detail != e.message_) e.detail_ = std::move(detail);
  return e;
}

Error Error::WithContext(std::string_view context) const& {
  Error copy = *this;
  return std::move(copy).WithContext(context);
}

Error Error::WithContext(std::string_view context) && {
  const bool has_detail = !detail_.empty();
  std::string msg = has_detail ? ScrubHostPaths(context) : std::string(context);
  msg += ": ";
  msg += message_;
  message_ = std::move(msg);
  if (has_detail) {
    std::string detail(context);
    detail += ": ";
    detail += detail_;
    detail_ = std::move(detail);
  }
  return std::move(*this);
}

namespace {

bool StartsAPath(std::string_view text, size_t i) {
  if (text[i] != '/') return false;
  if (i == 0) return true;
  char before = text[i - 1];
  return before == ' ' || before == '(' || before == '\'' || before == '"' || before == '=' ||
         before == ',';
}

}  // namespace

std::string ScrubHostPaths(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (!StartsAPath(text, i)) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size()) {
      char c = text[j];
      if (c == ' ' || c == '\'' || c == '"' || c == ',' || c == ')') break;
      if (c == ':' && (j + 1 == text.size() || text[j + 1] == ' ')) break;
      ++j;
    }
    out += "(host path)";
    i = j;
  }
  return out;
}

std::string Error::ClientSafeMessage() const {
  // A bug's own words may be anything; an internal error with an operator detail (a host
  // call's, say) has a message made for clients already.
  if (code_ == ErrorCode::kInternal && detail_.empty()) return "internal error";
  return message_;
}

Error Error::WithCode(ErrorCode code) && {
  code_ = code;
  return std::move(*this);
}

std::string Error::ToString() const {
  std::string s(code_name());
  s += ": ";
  s += detail();
  return s;
}

tl::unexpected<Error> FailErrno(std::string_view context) {
  return Fail(Error::FromErrno(errno, context));
}

}  // namespace asb
