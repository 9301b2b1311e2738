// The JSON lines spoken between the server and a code-context driver in the sandbox (ADR 0019;
// the drivers are src/core/code/driver.py and driver.js). Everything a driver says is treated as
// untrusted: code in the sandbox can write to the driver's stdout, so a line that does not parse
// or has the wrong shape is ignored, never trusted further.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/code_types.h"

namespace asb::core {

/// A decoded line of a driver's stdout.
struct DriverLine {
  enum class Kind {
    kIgnored,  // not JSON, not an object, an unknown type, or a field of the wrong type
    kReady,    // the kernel is up
    kFatal,    // the driver cannot start; `message` says why; it exits next
    kEvent,    // an event of execution `id`
  };
  Kind kind = Kind::kIgnored;
  std::string id;
  std::string message;
  CodeEvent event;
};

/// Decodes one line (without its newline).
DriverLine ParseDriverLine(std::string_view line);

/// The execute request line for a driver, newline included. timeout_ms 0 = none. `env` (only
/// sent when not empty) is set for this execution and restored after it.
std::string EncodeExecuteRequest(std::string_view exec_id, std::string_view code,
                                 int64_t timeout_ms, uint64_t max_output_bytes,
                                 const std::map<std::string, std::string>& env = {});

/// A driver's source as the first stdin line its bootstrap reads: a JSON string and "\n".
std::string EncodeDriverSource(std::string_view source);

/// The embedded driver sources (generated from src/core/code/ at build time).
std::string_view PythonDriverSource();
std::string_view JavaScriptDriverSource();

}  // namespace asb::core
