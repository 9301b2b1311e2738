// Text encodings of command output on the wire (ADR 0007: output as UTF-8 text
// with invalid bytes replaced, or base64 when the request asks for it), and RFC 3339 timestamps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::api {

/// Returns `in` as valid UTF-8: every byte that does not start a well-formed sequence (RFC 3629
/// section 4: no overlongs, no surrogates, nothing above U+10FFFF) becomes U+FFFD.
std::string SanitizeUtf8(std::string_view in);

/// Incremental SanitizeUtf8 for a stream of chunks: a character split across two chunks comes
/// out whole. Feed() returns the text of the complete characters so far and holds back an
/// incomplete trailing sequence (at most 3 bytes); Flush() returns what is held back (an
/// incomplete sequence at the end of the stream becomes U+FFFD).
class Utf8Stream {
 public:
  std::string Feed(std::string_view chunk);
  std::string Flush();

 private:
  std::string pending_;
};

/// Standard base64 (RFC 4648 section 4) with padding.
std::string Base64Encode(std::string_view in);
/// Decodes RFC 4648 section 4 base64, padding optional, no whitespace. Errors:
/// kInvalidArgument "<field>: not valid base64".
Result<std::string> Base64Decode(std::string_view in, std::string_view field);

/// Formats Unix epoch milliseconds as RFC 3339 UTC with milliseconds: "2026-11-29T10:15:00.123Z".
std::string FormatRfc3339(int64_t unix_ms);

/// `s` with ASCII letters lower-cased (header and host names); other bytes as they are.
std::string AsciiLower(std::string_view s);

/// Octal text of a permission mode, four digits: 0755 -> "0755".
std::string FormatMode(uint32_t mode);

}  // namespace asb::api
