// JSON codec of the env.set request (env_messages.h), driven by a field table (field_table.h)
// as every other message.
#include "protocol/env_messages.h"

#include <tuple>

#include "protocol/field_table.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<EnvSetRequest> {
  static constexpr std::string_view kWhat = "env.set request";
  static constexpr std::string_view kOp = "env.set";
  static constexpr auto kFields = std::tuple(Field("env", &EnvSetRequest::env));
};

}  // namespace internal

std::string EncodeEnvSetRequest(const EnvSetRequest& m) { return internal::Encode(m); }
Result<EnvSetRequest> DecodeEnvSetRequest(std::string_view json) {
  return internal::Decode<EnvSetRequest>(json);
}

}  // namespace asb::protocol
