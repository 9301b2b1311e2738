// JSON log lines for `serve --log-format json` (api/AUTH.md): one object per line,
// {"ts":"2026-11-29T10:00:00.123Z","level":"info","msg":"...", "request_id":"...",
//  "key_id":"...", "sandbox_id":"...", ...}. The message is JSON-escaped, and the key=value
// words our log lines carry (request_id, key_id, sandbox_id, method, route, status, ms) are
// lifted into fields of their own. Like every log line, these never hold keys, tokens, env
// values or file contents: callers never log them (common/log.h).
#pragma once

#include <string>
#include <string_view>

namespace asb::api {

/// Switches the default spdlog logger to JSON lines.
void UseJsonLogFormat();

/// The JSON line for one message (without the newline), for tests. The message first passes
/// asb::LogSafeMessage (controls and invalid UTF-8 as \xHH, at most kLogMessageMax bytes).
std::string JsonLogLine(std::string_view ts, std::string_view level, std::string_view msg);

}  // namespace asb::api
