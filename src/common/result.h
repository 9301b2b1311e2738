// Result<T>: a value or an Error (tl::expected), and the macros that propagate errors.
//
//   Result<int> ParsePort(std::string_view s);
//   Status Bind() {
//     ASB_ASSIGN_OR_RETURN(int port, ParsePort(text));
//     ASB_TRY(DoBind(port));
//     return {};
//   }
#pragma once

#include <tl/expected.hpp>

#include "common/error.h"

namespace asb {

template <typename T>
using Result = tl::expected<T, Error>;

/// A Result without a value: success, or an Error.
using Status = Result<void>;

/// Wraps an Error for returning from a function whose type is Result<T>.
inline tl::unexpected<Error> Fail(Error e) { return tl::unexpected<Error>(std::move(e)); }

/// Shorthand for Fail(Error::FromErrno(errno, context)); call it right after the failing call.
tl::unexpected<Error> FailErrno(std::string_view context);

}  // namespace asb

#define ASB_CONCAT_INNER_(a, b) a##b
#define ASB_CONCAT_(a, b) ASB_CONCAT_INNER_(a, b)

/// Evaluates a Result/Status expression; on error returns the error from the current function.
#define ASB_TRY(expr)                                                             \
  do {                                                                            \
    auto&& asb_try_result_ = (expr);                                              \
    if (!asb_try_result_) return ::asb::Fail(std::move(asb_try_result_).error()); \
  } while (0)

/// Like ASB_TRY, but prepends context to the error: ASB_TRY_CTX(Mount(x), "mount /proc").
#define ASB_TRY_CTX(expr, ctx)                                                                     \
  do {                                                                                             \
    auto&& asb_try_result_ = (expr);                                                               \
    if (!asb_try_result_) return ::asb::Fail(std::move(asb_try_result_).error().WithContext(ctx)); \
  } while (0)

#define ASB_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)      \
  auto tmp = (expr);                                    \
  if (!tmp) return ::asb::Fail(std::move(tmp).error()); \
  lhs = std::move(*tmp)

/// Evaluates a Result<T> expression; on success assigns its value to `lhs` (which may be a
/// declaration), on error returns the error from the current function.
#define ASB_ASSIGN_OR_RETURN(lhs, expr) \
  ASB_ASSIGN_OR_RETURN_IMPL_(ASB_CONCAT_(asb_result_, __LINE__), lhs, expr)
