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

/// An error in two texts (docs/design/error-handling.md): message(), which a client may read,
/// and detail(), the operator's whole account for the server's log. An error made from its
/// parts has one text for both. A failed host call (FromErrno) or another host facility's
/// failure (FromHost) puts its host text (paths, errno words, SQLite's words) in the detail
/// only, so no re-wrapping, `Error::Backend("attach: " + e.message())` included, can carry it
/// to a client.
class Error {
 public:
  /// An error whose `message` a client may read as written (say what was wrong and what is
  /// allowed; no host path).
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

  /// An error from a failed system call of this process: `context` names what was attempted
  /// ("open /x"). The detail is "open /x: No such file or directory"; the message is only
  /// kHostFailure, since the context itself is host text. The code is derived from errno
  /// (ENOENT -> kNotFound, EACCES/EPERM -> kPermissionDenied, EEXIST -> kConflict,
  /// ENOSPC/EDQUOT/EAGAIN -> kLimitExceeded, EINVAL -> kInvalidArgument, else kInternal).
  static Error FromErrno(int err, std::string_view context);

  /// Same as FromErrno but with the caller's choice of code.
  static Error FromErrno(ErrorCode code, int err, std::string_view context);

  /// A failure of a host facility without an errno of its own (SQLite, a library, a helper
  /// process): the detail is "context: host_text", the message kHostFailure; marked as
  /// from_host_call() like FromErrno.
  static Error FromHost(ErrorCode code, std::string_view context, std::string_view host_text,
                        int sys_errno = 0);

  /// An error whose client text and operator text differ but that is no host call's failure
  /// (its code is answered as it is): `message` for the client, `detail` for the log.
  static Error WithOperatorDetail(ErrorCode code, std::string message, std::string detail,
                                  int sys_errno = 0);

  /// What a client reads in place of a host call's own words.
  static constexpr std::string_view kHostFailure = "a host operation failed";

  /// True for FromErrno and FromHost errors (in the server: a host call, never one inside a
  /// sandbox; sandboxd's errors arrive decoded from the wire and are not marked). api/errors.cc
  /// answers a marked error as 502/500 (ADR 0016): the errno-derived code only steers the code
  /// that handles it (an ENOENT that means "not there yet", say), never the HTTP status a
  /// client sees.
  bool from_host_call() const { return from_host_call_; }
  /// What of this error a client may read (the rule of api::ForClient, which adds the request
  /// id): message(), but "internal error" for a kInternal error without an operator detail (a
  /// bug's words may be anything).
  std::string ClientSafeMessage() const;
  /// The same error with another code; message, detail, errno and from_host_call() are kept.
  Error WithCode(ErrorCode code) &&;

  ErrorCode code() const { return code_; }
  int sys_errno() const { return sys_errno_; }
  /// The client's text: "create sb_1: a host operation failed", "ttl_seconds must be ...".
  const std::string &message() const { return message_; }
  /// The operator's text, for logs and for a local CLI whose user is the operator: "create
  /// sb_1: mkdir /var/lib/...: No such file or directory". Equal to message() when the error
  /// has nothing more to say.
  const std::string &detail() const { return detail_.empty() ? message_ : detail_; }
  std::string_view code_name() const { return ErrorCodeName(code_); }

  /// Prepends context to both texts: Error::FromErrno(ENOENT, "open x").WithContext("read
  /// config") has the detail "read config: open x: No such file or directory" and the message
  /// "read config: a host operation failed". Where the error has an operator detail, the
  /// message gets the context with absolute paths replaced (ScrubHostPaths): a context names
  /// what the server was doing, in its words. Code and errno are kept.
  Error WithContext(std::string_view context) const &;
  Error WithContext(std::string_view context) &&;

  /// "not_found: " + detail(): for logs.
  std::string ToString() const;

 private:
  ErrorCode code_;
  int sys_errno_;
  std::string message_;  // the client's text
  std::string detail_;   // the operator's text; "" = the same as message_
  bool from_host_call_ = false;
};

/// `text` with every absolute path replaced by "(host path)", the rule ClientSafeMessage
/// applies to host calls' errors: "import /var/lib/x.tar.zst into sb_1" -> "import (host path)
/// into sb_1". A path starts at a '/' after a space, '(', quote, '=' or ',' (or at the start)
/// and runs to the next space, quote, comma, ')' or ": ". For messages that are not a host
/// call's error but may name host files all the same (a missing guest kernel).
std::string ScrubHostPaths(std::string_view text);

}  // namespace asb
