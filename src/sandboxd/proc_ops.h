// The proc.* operations (protocol section 7; proc_messages.h) over sandboxd's ProcTable.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "common/result.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

/// The operation for OPEN op `op` (one starting with "proc."), decoded from `json`. Errors:
/// kInvalidArgument (malformed body, unknown proc op).
Result<std::unique_ptr<Operation>> MakeProcOperation(Daemon& d, Connection& c, uint32_t ch,
                                                     std::string_view op, std::string_view json);

}  // namespace asb::sandboxd
