// Error: the one error value of the project, in the style of leveldb's Status and crun's
// libcrun_error: a code that says what kind of failure it is, the errno that caused it (0 when
// none), and a message to which context is prepended while the error propagates upward.
//
// The code is deliberately coarse: it is what the API layer maps onto HTTP status codes and the
// wire error codes of ADR 0007 and ADR 0016, and nothing more.
#pragma once

#include <string>
#include <string_view>

namespace asb {

/// The kinds of failure. Each maps to exactly one wire code (see ErrorCodeName) and one HTTP
/// status in api/.
enum class ErrorCode {
  kInvalidArgument,   // "invalid_request"  400: the caller's input is wrong.
  kUnauthenticated,   // "unauthorized"     401
  kPermissionDenied,  // "forbidden"        403
  kNotFound,          // "not_found"        404
  kConflict,          // "conflict"         409: wrong state for the operation.
  kTooLarge,          // "payload_too_large" 413
  kLimitExceeded,     // "limit_exceeded"   429: a quota or rate limit.
  kInternal,          // "internal"         500: a bug or an unexpected host failure.
  kBackend,           // "backend_error"    502: the isolation backend or sandboxd failed.
  kUnavailable,       // "unavailable"      503: shutting down, or not ready.
  kTimeout,           // "timeout"          504-ish: a deadline passed (mapped by api/).
  kCancelled,         // "cancelled"        the caller went away or asked to stop.
};

/// The stable wire name of a code, e.g. "not_found".
std::string_view ErrorCodeName(ErrorCode code);

/// Parses a wire name back into a code; unknown names map to kInternal.
ErrorCode ErrorCodeFromName(std::string_view name);

class Error {
 public:
  Error(ErrorCode code, std::string message, int sys_errno = 0)
      : code_(code), sys_errno_(sys_errno), message_(std::move(message)) {}

  // Named factories, one per code.
  static Error InvalidArgument(std::string msg) {
    return {ErrorCode::kInvalidArgument, std::move(msg)};
  }
  static Error Unauthenticated(std::string msg) {
    return {ErrorCode::kUnauthenticated, std::move(msg)};
  }
  static Error PermissionDenied(std::string msg) {
    return {ErrorCode::kPermissionDenied, std::move(msg)};
  }
  static Error NotFound(std::string msg) { return {ErrorCode::kNotFound, std::move(msg)}; }
  static Error Conflict(std::string msg) { return {ErrorCode::kConflict, std::move(msg)}; }
  static Error TooLarge(std::string msg) { return {ErrorCode::kTooLarge, std::move(msg)}; }
  static Error LimitExceeded(std::string msg) {
    return {ErrorCode::kLimitExceeded, std::move(msg)};
  }
  static Error Internal(std::string msg) { return {ErrorCode::kInternal, std::move(msg)}; }
  static Error Backend(std::string msg) { return {ErrorCode::kBackend, std::move(msg)}; }
  static Error Unavailable(std::string msg) { return {ErrorCode::kUnavailable, std::move(msg)}; }
  static Error Timeout(std::string msg) { return {ErrorCode::kTimeout, std::move(msg)}; }
  static Error Cancelled(std::string msg) { return {ErrorCode::kCancelled, std::move(msg)}; }

  /// An error from a failed system call: `context` names what was attempted ("open /x"), the
  /// message becomes "open /x: No such file or directory", and the code is derived from errno
  /// (ENOENT -> kNotFound, EACCES/EPERM -> kPermissionDenied, EEXIST -> kConflict,
  /// ENOSPC/EDQUOT/EAGAIN -> kLimitExceeded, EINVAL -> kInvalidArgument, else kInternal).
  static Error FromErrno(int err, std::string_view context);

  /// Same as FromErrno but with the caller's choice of code.
  static Error FromErrno(ErrorCode code, int err, std::string_view context);
  /// Both FromErrno forms mark the error as a failure of a system call made by this process
  /// (in the server: a host call, never one inside a sandbox; sandboxd's errors arrive decoded
  /// from the wire and are not marked). api/errors.cc answers a marked error as 502/500 without
  /// its host text (ADR 0016): the errno-derived code only steers the code that handles
  /// it (an ENOENT that means "not there yet", say), never the HTTP status a client sees.
  bool from_host_call() const { return host_text_bytes_ > 0; }
  /// The message without what the failed call itself said ("open /x: No such file..."): only
  /// the context prepended by WithContext above it, "" when none. For a message that is not
  /// from_host_call(), the whole message.
  std::string_view ContextOnly() const;
  /// What of this error a client may read (the rule of api::ForClient, which adds the request
  /// id): for from_host_call() the ContextOnly() operation with absolute paths replaced by
  /// "(host path)", then "a host operation failed"; for kInternal "internal error"; else the
  /// message.
  std::string ClientSafeMessage() const;
  /// The same error with another code; message, errno and from_host_call() are kept (a layer
  /// that re-tags, e.g. destroy's kBackend, must not turn host text into client text).
  Error WithCode(ErrorCode code) &&;

  ErrorCode code() const { return code_; }
  int sys_errno() const { return sys_errno_; }
  const std::string &message() const { return message_; }
  std::string_view code_name() const { return ErrorCodeName(code_); }

  /// Prepends context: Error("open x: ENOENT").WithContext("read config") -> "read config: open
  /// x: ENOENT". Code and errno are kept.
  Error WithContext(std::string_view context) const &;
  Error WithContext(std::string_view context) &&;

  /// "not_found: open /x: No such file or directory".
  std::string ToString() const;

 private:
  ErrorCode code_;
  int sys_errno_;
  std::string message_;
  /// Length of the tail of message_ that FromErrno wrote (context + strerror); 0 = not a host
  /// call's error.
  size_t host_text_bytes_ = 0;
};

/// `text` with every absolute path replaced by "(host path)", the rule ClientSafeMessage
/// applies to host calls' errors: "import /var/lib/x.tar.zst into sb_1" -> "import (host path)
/// into sb_1". A path starts at a '/' after a space, '(', quote, '=' or ',' (or at the start)
/// and runs to the next space, quote, comma, ')' or ": ". For messages that are not a host
/// call's error but may name host files all the same (a missing guest kernel).
std::string ScrubHostPaths(std::string_view text);

}  // namespace asb
