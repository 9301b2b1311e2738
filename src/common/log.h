// Host-side logging: spdlog, one line per event, text or JSON (api/json_log.h has
// the JSON form). Never log a key, a token, an env value or file contents; the formatters
// also redact what looks like a secret (LogSafeMessage), as a second line of defence.
//
// Anything a client sent (a path, a path parameter, a method) is hostile text: written
// verbatim, a "%0a" in a path forged a whole log line and "%1b[" reached the operator's
// terminal (ADR 0014). So every line the formatters write passes LogSafeMessage
// (control characters and invalid UTF-8 escaped, length bounded), and a request-derived value
// put into a key=value word goes through LogField first, which also escapes spaces and quotes
// so that it stays one word and cannot forge another field.
#pragma once

#include <spdlog/formatter.h>
#include <spdlog/spdlog.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace asb {

enum class LogFormat { kText, kJson };

/// Longest request-derived value one log field carries, in bytes of escaped text (before the
/// truncation marker).
inline constexpr size_t kLogFieldMax = 128;
/// Longest message one log line carries, in bytes of escaped text (before the marker).
inline constexpr size_t kLogMessageMax = 4096;

/// `value` as one word of a key=value log line: printable ASCII other than space, '"' and '\'
/// is kept; every other byte (controls, DEL, space, quotes, backslash, all bytes >= 0x80) is
/// written as \xHH. Output longer than `max` bytes is cut (never inside an escape) and ends
/// with "...(N bytes)", N the length of `value`. An empty value is "-".
std::string LogField(std::string_view value, size_t max = kLogFieldMax);

/// A whole message made safe for one log line: what looks like a secret is redacted first
/// (RedactSecrets, common/redact.h: a command line a caller logs keeps no token); then C0
/// controls, DEL, C1 controls (U+0080..U+009F) and bytes that are not part of well-formed
/// UTF-8 become \xHH; other text, well-formed UTF-8 included, is kept. Cut like LogField at
/// `max` bytes (the marker gives the redacted length). Idempotent on LogField output.
std::string LogSafeMessage(std::string_view msg, size_t max = kLogMessageMax);

/// The text formatter "2026-11-29T10:00:00.123Z info <LogSafeMessage(msg)>", UTC.
std::unique_ptr<spdlog::formatter> MakeTextLogFormatter();

/// Configures the default logger: writes to stderr at `level` ("trace".."off") in `format`.
/// Returns false if `level` is not a spdlog level name.
bool InitLogging(std::string_view level, LogFormat format);

}  // namespace asb
