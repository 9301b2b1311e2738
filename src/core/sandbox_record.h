// Private to core/: a sandbox's store record <-> SandboxInfo (core owns the spec JSON's shape),
// and the env rule shared by create and exec.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "core/sandbox_types.h"
#include "store/store.h"

namespace asb::core {

/// Spec JSON of the store record <-> SandboxInfo.
std::string EncodeSpecJson(const SandboxInfo& info);
/// Fills info's spec fields from JSON; unknown or malformed members are ignored.
void DecodeSpecJson(std::string_view json, SandboxInfo* info);
store::SandboxRecord ToRecord(const SandboxInfo& info);
SandboxInfo FromRecord(const store::SandboxRecord& r);

/// Checks an env map (sandbox or exec): keys non-empty without '=' or NUL, values without NUL.
/// `field` names it in the error ("env").
Status ValidateEnv(const std::map<std::string, std::string>& env, std::string_view field);
/// CreateRequest::metadata within its limits (sandbox_types.h). Errors: kInvalidArgument.
Status ValidateMetadata(const std::map<std::string, std::string>& metadata);

}  // namespace asb::core
