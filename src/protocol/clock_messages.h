// The "clock.set" operation (docs/design/sandbox-protocol.md, section 7): the host sets a
// microVM guest's wall clock. A guest's clock does not run while its VM is paused (its cgroups
// frozen), so it is behind by the pause after a resume until the host sets it again, as E2B's
// envd is told the time after a resume.
//
//   clock.set   OPEN ClockSetRequest; RESULT {}. Only where sandboxd is a VM's PID 1 (with
//               --port); elsewhere it would be the host's clock: invalid_request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::protocol {

struct ClockSetRequest {
  int64_t unix_ns = 0;  // CLOCK_REALTIME to set, nanoseconds since the Unix epoch
};

std::string EncodeClockSetRequest(const ClockSetRequest& m);  // op "clock.set"
/// Errors: kBackend on malformed JSON or a member of the wrong type.
Result<ClockSetRequest> DecodeClockSetRequest(std::string_view json);

}  // namespace asb::protocol
