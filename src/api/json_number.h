// Numbers in answers: Boost.JSON writes a double 1.0 as "1E0", valid JSON that reads as a typo
// to a person and as a float to a strict client. A whole number goes out as an integer.
#pragma once

#include <boost/json.hpp>
#include <cmath>

namespace asb::api {

/// `x` as a JSON number: an int64 when it is whole and within ±2^53 (exact in a double), else
/// the double. E.g. 1.0 -> 1, 0.5 -> 0.5.
inline boost::json::value JsonNumber(double x) {
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (std::isfinite(x) && std::trunc(x) == x && std::fabs(x) <= kExact) {
    return static_cast<int64_t>(x);
  }
  return x;
}

}  // namespace asb::api
