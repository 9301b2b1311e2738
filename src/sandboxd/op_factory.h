// Maps an OPEN frame's "op" name to the Operation that implements it.
#pragma once

#include <memory>
#include <string_view>

#include "common/result.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

/// Decodes the OPEN body `json` and builds its operation (not started). Errors:
/// kInvalidArgument for an unknown op ("unknown op x") or a malformed body.
Result<std::unique_ptr<Operation>> MakeOperation(Daemon& daemon, Connection& conn, uint32_t channel,
                                                 std::string_view json);

}  // namespace asb::sandboxd
