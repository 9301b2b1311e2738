// What the tool files share (tools.cc, tools_procs.cc, tools_ports.cc, tools_code.cc): JSON
// Schema builders for the definitions, CallToolResult builders, argument readers, and the
// tool groups' entry points. Internal to mcp/; tools.h is the interface.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "mcp/backend.h"
#include "mcp/tools.h"

namespace asb::mcp::tools_internal {

// ---- schemas ------------------------------------------------------------------------------

/// {"type": type, "description": description} (no description when empty).
boost::json::object Prop(std::string_view type, std::string_view description);
/// An integer property with "minimum" and "maximum".
boost::json::object IntProp(std::string_view description, int64_t min, int64_t max);
/// {"type":"object","properties":props,"required":[...]}.
boost::json::object ObjectSchema(boost::json::object props,
                                 std::initializer_list<std::string_view> required);
/// An object of string values, name to value.
boost::json::object StringMapProp(std::string_view description);
/// A string that is "utf8" or "base64" (the encoding of a content field).
boost::json::object EncodingProp(std::string_view description);
/// The env argument of exec-like tools.
boost::json::object EnvProp();
boost::json::object ArrayOf(boost::json::object item, std::string_view description);
/// A tool definition.
boost::json::object Tool(std::string_view name, std::string_view title,
                         std::string_view description, boost::json::object input,
                         boost::json::object output);
/// The Process object (REST shape), as an output schema.
boost::json::object ProcessSchema();
/// The exit and output of a command (sandbox_exec, sandbox_run_code), as an output schema.
boost::json::object ExecResultSchema();

// ---- results ------------------------------------------------------------------------------

/// The first `max` bytes of `text`, never splitting a UTF-8 character; *cut set when shorter.
std::string Cut(std::string_view text, size_t max, bool* cut);
/// {content:[{type:"text", text:"<code>: <message>"}], isError:true}.
boost::json::object ErrorResult(std::string_view code, std::string_view message);
boost::json::object ErrorResult(const ToolError& e);
/// {content:[text, cut near kMaxTextBytes], structuredContent}.
boost::json::object OkResult(boost::json::object structured, std::string text);

/// Runs an exec `body` (the REST exec body) in sandbox `id` and renders sandbox_exec's result:
/// exit code, both streams (each cut at kMaxTextBytes), truncation flags, progress
/// notifications for output as it arrives.
boost::json::object ExecToolResult(ToolBackend& b, const std::string& id,
                                   const boost::json::object& body, const CallContext& ctx);

// ---- arguments ----------------------------------------------------------------------------

/// Reads tool arguments; the first bad one leaves its isError result in error().
class Args {
 public:
  explicit Args(const boost::json::object& a) : a_(a) {}

  /// A required non-empty string; nullopt (and error()) when missing or not a string.
  std::optional<std::string> Need(std::string_view key);
  /// An optional string; nullopt when absent; error() when present but not a string.
  std::optional<std::string> Opt(std::string_view key);
  /// An optional integer in [min, max] (JSON integers, or numbers with no fraction);
  /// `def` when absent; nullopt and error() when wrong.
  std::optional<int64_t> Int(std::string_view key, int64_t min, int64_t max, int64_t def);
  /// A required integer in [min, max].
  std::optional<int64_t> NeedInt(std::string_view key, int64_t min, int64_t max);
  /// An optional number in (0, max] or [0, max] (`zero_ok`); `def` when absent.
  std::optional<double> Number(std::string_view key, double max, bool zero_ok, double def);
  /// An optional boolean; `def` when absent.
  std::optional<bool> Bool(std::string_view key, bool def);
  /// The raw value, or nullptr when absent or null.
  const boost::json::value* Raw(std::string_view key) const;

  /// All the arguments.
  const boost::json::object& all() const { return a_; }
  bool failed() const { return failed_; }
  const boost::json::object& error() const { return error_; }
  /// Records a failure of `key` (the first one wins); returns nullopt for convenience.
  std::nullopt_t Fail(std::string_view key, std::string_view message);

 private:
  const boost::json::object& a_;
  bool failed_ = false;
  boost::json::object error_;
};

/// Copies the listed fields of `a` that are present and not null into `o` unchanged.
void CopyFields(const boost::json::object& a, boost::json::object& o,
                std::initializer_list<std::string_view> keys);

// ---- tool groups --------------------------------------------------------------------------
// Each group appends its definitions, and answers a call of one of its tools (nullopt for
// another name).

void AddProcessTools(boost::json::array& defs);
std::optional<boost::json::object> CallProcessTool(std::string_view name,
                                                   const boost::json::object& args, ToolBackend& b,
                                                   const CallContext& ctx);
void AddPortTools(boost::json::array& defs);
std::optional<boost::json::object> CallPortTool(std::string_view name,
                                                const boost::json::object& args, ToolBackend& b,
                                                const CallContext& ctx);
void AddCodeTools(boost::json::array& defs);
std::optional<boost::json::object> CallCodeTool(std::string_view name,
                                                const boost::json::object& args, ToolBackend& b,
                                                const CallContext& ctx);

/// sandbox_watch_files (tools_watch.cc).
void AddWatchTools(boost::json::array& defs);
std::optional<boost::json::object> CallWatchTool(std::string_view name,
                                                 const boost::json::object& args, ToolBackend& b,
                                                 const CallContext& ctx);

/// The stateful code tools (tools_code_contexts.cc): sandbox_code_run, sandbox_code_context_*.
void AddCodeContextTools(boost::json::array& defs);
std::optional<boost::json::object> CallCodeContextTool(std::string_view name,
                                                       const boost::json::object& args,
                                                       ToolBackend& b, const CallContext& ctx);

}  // namespace asb::mcp::tools_internal
