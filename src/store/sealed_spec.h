// The secrets inside a record's spec JSON (sandboxes.spec_json, snapshots.spec_json), sealed
// at rest with the server's SecretBox (ADR 0014, round 3). The spec is core's JSON object and
// the store does not otherwise look inside it; only its "env" member (variables given on
// create: API keys, tokens) is replaced by "env_sealed" on the way in and put back on the way
// out, so everything above the store sees the spec it wrote.
#pragma once

#include <string>
#include <string_view>

#include "store/secret_box.h"

namespace asb::store {

/// `spec_json` with a non-empty "env" object replaced by "env_sealed": box.Seal(<env as JSON>).
/// Text that is not a JSON object, or has no env, comes back as it was.
std::string SealSpecEnv(const SecretBox& box, std::string_view spec_json);

/// The inverse: "env_sealed" opened back into "env". A value that does not open (sealed under
/// another key: secrets.key was deleted) leaves the spec without env, so the sandbox runs
/// without those variables rather than not at all; plain "env" (records written before
/// sealing) comes back as it is.
std::string OpenSpecEnv(const SecretBox& box, std::string_view spec_json);

/// Whether `spec_json` holds env values in plain text (a record to seal).
bool HasPlainEnv(std::string_view spec_json);

}  // namespace asb::store
