// Host-side logging: spdlog, one line per event, text or JSON (see ARCHITECTURE.md and
// STYLE.md "Logs"). Never log a key, a token, an env value or file contents.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace asb {

enum class LogFormat { kText, kJson };

/// Configures the default logger: writes to stderr at `level` ("trace".."off") in `format`.
/// Returns false if `level` is not a spdlog level name.
bool InitLogging(std::string_view level, LogFormat format);

}  // namespace asb
