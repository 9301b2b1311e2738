// JSON codec of the clock.set request (clock_messages.h), driven by a field table
// (field_table.h) as every other message.
#include "protocol/clock_messages.h"

#include <tuple>

#include "protocol/field_table.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<ClockSetRequest> {
  static constexpr std::string_view kWhat = "clock.set request";
  static constexpr std::string_view kOp = "clock.set";
  static constexpr auto kFields = std::tuple(Field("unix_ns", &ClockSetRequest::unix_ns));
};

}  // namespace internal

std::string EncodeClockSetRequest(const ClockSetRequest& m) { return internal::Encode(m); }
Result<ClockSetRequest> DecodeClockSetRequest(std::string_view json) {
  return internal::Decode<ClockSetRequest>(json);
}

}  // namespace asb::protocol
