// The code interpreter's values as core hands them to the layers above (ADR 0019): contexts,
// execution requests and the events of one execution. api/ and mcp/ turn them into JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace asb::core {

/// Largest code text of one execution, bytes.
inline constexpr uint64_t kMaxCodeBytes = 512 * 1024;
/// Default and largest output kept of one execution, bytes: stdout, stderr and results (every
/// MIME value and chart) share it. Past it stdout and stderr are cut, a result that does not fit
/// is dropped whole (a cut image is no image), and the end says truncated and which outputs
/// lost something (ADR 0014, round 3: results were uncapped, and 100 displays of 10 MB made a 1 GB
/// answer).
inline constexpr uint64_t kDefaultCodeOutputBytes = 1 << 20;
/// Largest environment of one execution (CodeRequest::env): keys and values together, bytes.
inline constexpr uint64_t kMaxCodeEnvBytes = 64 * 1024;
/// Running code contexts per sandbox.
inline constexpr int kMaxCodeContexts = 16;

/// A request to start a code context.
struct CodeContextOptions {
  /// "python" (aliases "python3", "py"), "javascript" ("js", "node") or "bash" ("sh", "shell").
  std::string language = "python";
  /// Working directory in the sandbox; "" = the sandbox's default (/workspace). Relative paths
  /// are under /workspace (NormalizeWorkdir).
  std::string cwd{};
};

/// A code context: one kernel process in the sandbox.
struct CodeContextInfo {
  std::string id;        // "ctx_" + 16 hex
  std::string language;  // "python", "javascript" or "bash"
  std::string cwd;
  int pid = 0;              // the driver process (a background process of the sandbox)
  std::string state;        // "running", or "dead" once its kernel exited (restart revives it)
  bool is_default = false;  // the context /code uses for its language when none is named
  int64_t created_at_ms = 0;
};

/// One execution of code.
struct CodeRequest {
  std::string code;
  std::optional<std::string> context_id{};  // absent: the language's default context
  std::optional<std::string> language{};    // used (and checked) when context_id is absent
  std::optional<double> timeout_seconds{};  // > 0; absent: the exec default; clamped to max
  /// stdout + stderr + results kept, bytes, [1, kDefaultCodeOutputBytes].
  uint64_t max_output_bytes = kDefaultCodeOutputBytes;
  /// Environment variables set for this execution only, then put back as they were (E2B's
  /// runCode envs): os.environ in Python, process.env in JavaScript, exported variables in
  /// bash. Keys non-empty without '=' or NUL (bash: shell names), values without NUL, at most
  /// kMaxCodeEnvBytes in all.
  std::map<std::string, std::string> env{};
};

/// One display or the value of the last expression: its MIME bundle.
struct CodeResult {
  bool is_main_result = false;
  /// MIME type -> value for every textual type ("text/plain", "text/html", "image/png" as
  /// base64, "image/svg+xml", "text/markdown", "text/latex", ...).
  std::map<std::string, std::string> data;
  /// "application/json" (and other JSON-valued types) as serialized JSON, by MIME type.
  std::map<std::string, std::string> json_data;
  /// Chart data of a matplotlib figure as serialized JSON ({"type": "line"|"bar"|"scatter"|
  /// "pie"|"superchart", "title", "elements", axes...}); "" when none.
  std::string chart_json;

  /// The bytes it counts against CodeRequest::max_output_bytes: every value and the chart.
  uint64_t OutputBytes() const {
    uint64_t n = chart_json.size();
    for (const auto& [mime, value] : data) n += value.size();
    for (const auto& [mime, value] : json_data) n += value.size();
    return n;
  }
};

struct CodeError {
  std::string name;   // "ZeroDivisionError", "KernelDied", "TimeoutError", ...
  std::string value;  // the message
  std::vector<std::string> traceback;
};

struct CodeEnd {
  std::string status = "ok";  // "ok", "error", "timeout", "dead" (the kernel exited)
  std::optional<int64_t> execution_count{};
  int64_t duration_ms = 0;
  bool timed_out = false;
  bool truncated = false;  // output was cut at max_output_bytes
  /// Which outputs lost something, a sorted subset of "results", "stderr", "stdout" (empty
  /// when nothing was cut); `dropped_results` counts the results left out.
  std::vector<std::string> truncated_outputs{};
  int64_t dropped_results = 0;
  std::optional<int> exit_code{};  // bash: the last command's exit status
};

/// An event of an execution, in the order the kernel produced them; kEnd is last.
struct CodeEvent {
  enum class Kind { kStdout, kStderr, kResult, kError, kEnd };
  Kind kind = Kind::kStdout;
  std::string text;  // kStdout / kStderr (UTF-8)
  CodeResult result;
  CodeError error;
  CodeEnd end;
};

}  // namespace asb::core
