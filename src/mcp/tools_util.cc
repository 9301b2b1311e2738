// Shared parts of the tools; see tools_util.h.
#include "mcp/tools_util.h"

#include <cmath>
#include <utility>

#include "api/exec_result_json.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

// ---- schemas ------------------------------------------------------------------------------

json::object Prop(std::string_view type, std::string_view description) {
  json::object o;
  o["type"] = type;
  if (!description.empty()) o["description"] = description;
  return o;
}

json::object IntProp(std::string_view description, int64_t min, int64_t max) {
  json::object o = Prop("integer", description);
  o["minimum"] = min;
  o["maximum"] = max;
  return o;
}

json::object ObjectSchema(json::object props, std::initializer_list<std::string_view> required) {
  json::object o;
  o["type"] = "object";
  o["properties"] = std::move(props);
  json::array req;
  for (auto r : required) req.emplace_back(r);
  if (!req.empty()) o["required"] = std::move(req);
  return o;
}

json::object StringMapProp(std::string_view description) {
  json::object o = Prop("object", description);
  json::object s;
  s["type"] = "string";
  o["additionalProperties"] = std::move(s);
  return o;
}

json::object EncodingProp(std::string_view description) {
  json::object o = Prop("string", description);
  o["enum"] = json::array{"utf8", "base64"};
  return o;
}

json::object EnvProp() { return StringMapProp("Environment variables, name to value."); }

json::object ArrayOf(json::object item, std::string_view description) {
  json::object o = Prop("array", description);
  o["items"] = std::move(item);
  return o;
}

json::object Tool(std::string_view name, std::string_view title, std::string_view description,
                  json::object input, json::object output) {
  json::object t;
  t["name"] = name;
  t["title"] = title;
  t["description"] = description;
  t["inputSchema"] = std::move(input);
  t["outputSchema"] = std::move(output);
  return t;
}

json::object ProcessSchema() {
  auto nullable = [](std::string_view type, std::string_view description) {
    json::object o = Prop(type, description);
    o["type"] = json::array{type, "null"};
    return o;
  };
  json::object p;
  p["pid"] = Prop("integer", "Process id inside the sandbox.");
  p["tag"] = Prop("string", "");
  p["argv"] = ArrayOf(Prop("string", ""), "As started (empty when a command was given).");
  p["command"] = nullable("string", "The shell command, or null when argv was given.");
  p["state"] = Prop("string", "running or exited.");
  p["exit_code"] = nullable("integer", "Exit status (128+signal when killed); null while running.");
  p["signal"] = Prop("integer", "Terminating signal, 0 if it exited by itself.");
  p["started_at"] = Prop("string", "RFC 3339 UTC.");
  p["ended_at"] = nullable("string", "RFC 3339 UTC; null while running.");
  p["pty"] = Prop("boolean", "");
  p["stdin_open"] = Prop("boolean", "Its stdin takes sandbox_process_stdin.");
  p["output_bytes"] = Prop("integer", "Bytes it has written so far (both streams).");
  return ObjectSchema(std::move(p), {"pid", "state"});
}

json::object ExecResultSchema() {
  json::object o;
  o["stdout"] = Prop("string", "");
  o["stderr"] = Prop("string", "");
  for (const api::ExecResultField& f : api::ExecResultFields()) {
    o[f.name] = Prop(f.json_type, f.description);
  }
  // The tool's own cut (kMaxTextBytes per stream) counts as truncation too.
  o["truncated"] = Prop("boolean", "Output was cut; stdout_bytes/stderr_bytes give the size.");
  o["stdout_truncated"] = Prop("boolean", "stdout was cut (each stream has its own cap).");
  o["stderr_truncated"] = Prop("boolean", "stderr was cut (each stream has its own cap).");
  o["stdout_bytes"] = Prop("integer", "Full size of stdout as received.");
  o["stderr_bytes"] = Prop("integer", "Full size of stderr as received.");
  return ObjectSchema(std::move(o), {"exit_code", "stdout", "stderr", "timed_out"});
}

// ---- results ------------------------------------------------------------------------------

namespace {

constexpr size_t kNoteBytes = 1024;

json::object TextContent(std::string text) {
  json::object c;
  c["type"] = "text";
  c["text"] = std::move(text);
  return c;
}

}  // namespace

std::string Cut(std::string_view text, size_t max, bool* cut) {
  if (text.size() <= max) return std::string(text);
  *cut = true;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // whole chars
  return std::string(text.substr(0, n));
}

json::object ErrorResult(std::string_view code, std::string_view message) {
  json::object r;
  r["content"] = json::array{TextContent(std::string(code) + ": " + std::string(message))};
  r["isError"] = true;
  return r;
}

json::object ErrorResult(const ToolError& e) { return ErrorResult(e.code, e.message); }

json::object OkResult(json::object structured, std::string text) {
  bool cut = false;
  // Room for the short note a tool appends after a field it cut to kMaxTextBytes.
  std::string shown = Cut(text, kMaxTextBytes + kNoteBytes, &cut);
  if (cut) {
    shown += "\n[text truncated: " + std::to_string(text.size()) + " bytes in full]";
  }
  json::object r;
  r["content"] = json::array{TextContent(std::move(shown))};
  r["structuredContent"] = std::move(structured);
  return r;
}

json::object ExecToolResult(ToolBackend& b, const std::string& id, const json::object& body,
                            const CallContext& ctx) {
  std::string out, errs;
  double progress = 0;
  ExecHooks hooks;
  hooks.cancelled = ctx.cancelled;
  hooks.output = [&](std::string_view stream, std::string_view data) {
    (stream == "stdout" ? out : errs).append(data);
    if (ctx.progress) {
      bool cut = false;
      ctx.progress(++progress, std::string(stream) + ": " + Cut(data, 200, &cut));
    }
  };
  auto exit = b.Exec(id, body, hooks);
  if (!exit) return ErrorResult(exit.error());
  json::object s;
  for (const api::ExecResultField& f : api::ExecResultFields()) {
    if (const json::value* v = exit->if_contains(f.name)) s[f.name] = *v;
  }
  s["stdout_bytes"] = out.size();
  s["stderr_bytes"] = errs.size();
  auto flag = [&](const char* k) { return (*exit)[k].is_bool() && (*exit)[k].as_bool(); };
  bool out_cut = false;
  bool err_cut = false;
  s["stdout"] = Cut(out, kMaxTextBytes, &out_cut);
  s["stderr"] = Cut(errs, kMaxTextBytes, &err_cut);
  bool cut = out_cut || err_cut;
  bool server_cut = flag("truncated");
  s["truncated"] = cut || server_cut;
  s["stdout_truncated"] = out_cut || flag("stdout_truncated");
  s["stderr_truncated"] = err_cut || flag("stderr_truncated");
  std::string text = "exit " + json::serialize((*exit)["exit_code"]);
  if (flag("timed_out")) text += " (timed out)";
  if (flag("oom_killed")) text += " (the sandbox's memory limit killed a process)";
  if (flag("pids_limited")) text += " (the sandbox's pids limit refused a fork)";
  text += "\n";
  // The text shows up to half the limit of each stream, so that both fit with the note.
  bool text_cut = false;
  std::string out_text = Cut(out, kMaxTextBytes / 2, &text_cut);
  std::string err_text = Cut(errs, kMaxTextBytes / 2, &text_cut);
  if (!out_text.empty()) {
    text += "--- stdout\n" + out_text + (out_text.back() == '\n' ? "" : "\n");
  }
  if (!err_text.empty()) text += "--- stderr\n" + err_text;
  if (cut || text_cut || server_cut) {
    text += "\n[output truncated; stdout " + std::to_string(out.size()) + " bytes, stderr " +
            std::to_string(errs.size()) + " bytes received" +
            (server_cut ? ", more was cut by the server's output limit" : "") +
            "; structuredContent holds up to " + std::to_string(kMaxTextBytes) + " bytes of each]";
  }
  return OkResult(std::move(s), std::move(text));
}

// ---- arguments ----------------------------------------------------------------------------

std::nullopt_t Args::Fail(std::string_view key, std::string_view message) {
  if (!failed_) {
    failed_ = true;
    error_ = ErrorResult("invalid_request", std::string(key) + ": " + std::string(message));
  }
  return std::nullopt;
}

const json::value* Args::Raw(std::string_view key) const {
  auto it = a_.find(key);
  if (it == a_.end() || it->value().is_null()) return nullptr;
  return &it->value();
}

std::optional<std::string> Args::Need(std::string_view key) {
  const json::value* v = Raw(key);
  if (!v || !v->is_string() || v->as_string().empty()) return Fail(key, "required string");
  return std::string(v->as_string());
}

std::optional<std::string> Args::Opt(std::string_view key) {
  const json::value* v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return Fail(key, "must be a string");
  return std::string(v->as_string());
}

std::optional<int64_t> Args::Int(std::string_view key, int64_t min, int64_t max, int64_t def) {
  const json::value* v = Raw(key);
  if (!v) return def;
  std::string range =
      "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  int64_t n = 0;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_uint64()) {
    if (v->as_uint64() > static_cast<uint64_t>(max)) return Fail(key, range);
    n = static_cast<int64_t>(v->as_uint64());
  } else if (v->is_double() && std::trunc(v->as_double()) == v->as_double() &&
             std::fabs(v->as_double()) < 9e15) {
    n = static_cast<int64_t>(v->as_double());
  } else {
    return Fail(key, range);
  }
  if (n < min || n > max) return Fail(key, range);
  return n;
}

std::optional<int64_t> Args::NeedInt(std::string_view key, int64_t min, int64_t max) {
  if (!Raw(key)) {
    return Fail(key,
                "required integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return Int(key, min, max, 0);
}

std::optional<double> Args::Number(std::string_view key, double max, bool zero_ok, double def) {
  const json::value* v = Raw(key);
  if (!v) return def;
  auto range = [&] {
    std::string m = std::to_string(static_cast<int64_t>(max));
    return zero_ok ? "must be a number of seconds in [0, " + m + "]"
                   : "must be a number of seconds in (0, " + m + "]";
  };
  if (!v->is_number()) return Fail(key, range());
  double d = v->to_number<double>();
  if (!(d <= max) || d < 0 || (!zero_ok && d == 0)) return Fail(key, range());
  return d;
}

std::optional<bool> Args::Bool(std::string_view key, bool def) {
  const json::value* v = Raw(key);
  if (!v) return def;
  if (!v->is_bool()) return Fail(key, "must be true or false");
  return v->as_bool();
}

void CopyFields(const json::object& a, json::object& o,
                std::initializer_list<std::string_view> keys) {
  for (auto k : keys) {
    auto it = a.find(k);
    if (it != a.end() && !it->value().is_null()) o[k] = it->value();
  }
}

}  // namespace asb::mcp::tools_internal
