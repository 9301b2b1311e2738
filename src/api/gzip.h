// Gzip request bodies (RFC 1952), as E2B's SDKs send uploads with `gzip: true`
// (Content-Encoding: gzip; docs/e2b.md). zlib does the inflating; this bounds it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::api {

/// The bytes gzip data `in` decompresses to, at most `max_bytes` of them. Concatenated gzip
/// members are joined (RFC 1952 section 2.2). Errors: kInvalidArgument "gzip: ..." for data
/// that is not gzip, is corrupt or ends early; kTooLarge when it would inflate beyond
/// max_bytes (checked while inflating, so a small "zip bomb" never takes more memory).
Result<std::string> GunzipBounded(std::string_view in, uint64_t max_bytes);

}  // namespace asb::api
