// The background-process tools (ADR 0011 over MCP): start, list, output, stdin, signal, kill,
// mirroring /v1/sandboxes/{id}/processes[...]. A process outlives the call that started it;
// sandbox_process_output replays its recent output (and waits for more when asked) without
// holding an attachment between calls.
#include <string>
#include <utility>

#include "api/text.h"
#include "core/sandbox_types.h"
#include "mcp/tools_util.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

namespace {

/// The largest pid asked for (a sandbox's pid namespace has far fewer).
constexpr int64_t kMaxPid = 999'999'999;
/// sandbox_process_output: the default and the most output kept per call.
constexpr int64_t kDefaultTailBytes = 64 * 1024;
constexpr int64_t kMaxTailBytes = static_cast<int64_t>(kMaxTextBytes);
/// sandbox_process_output: the longest wait for more output, seconds.
constexpr double kMaxWaitSeconds = 60;
/// sandbox_process_stdin: the most bytes one call writes (a process's stdin queue, ADR 0011).
constexpr size_t kMaxStdinBytes = 1024 * 1024;
/// The replay ring's limit, for the schema.
constexpr int64_t kMaxRingBytes = static_cast<int64_t>(core::kMaxProcessRingBytes);

json::object IdAndPid() {
  json::object p;
  p["sandbox_id"] = Prop("string", "");
  p["pid"] =
      IntProp("Process id (from sandbox_process_start or sandbox_process_list).", 1, kMaxPid);
  return p;
}

std::string Describe(const json::object& proc) {
  std::string text = "process " + json::serialize(proc.at("pid"));
  const json::value* state = proc.if_contains("state");
  if (state && state->is_string()) text += " " + std::string(state->as_string());
  const json::value* code = proc.if_contains("exit_code");
  if (code && code->is_int64()) text += " (exit code " + std::to_string(code->as_int64()) + ")";
  const json::value* cmd = proc.if_contains("command");
  if (cmd && cmd->is_string()) text += ": " + std::string(cmd->as_string());
  return text;
}

// A tail cut from the front may start inside a character: drop its continuation bytes.
std::string TextOfTail(std::string_view raw) {
  size_t skip = 0;
  while (skip < 3 && skip < raw.size() && (static_cast<unsigned char>(raw[skip]) & 0xC0) == 0x80) {
    ++skip;
  }
  return api::SanitizeUtf8(raw.substr(skip));
}

json::object Start(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  if (!id) return args.error();
  json::object body;
  CopyFields(args.all(), body, {"command", "argv", "env", "workdir", "tag", "stdin", "ring_bytes"});
  auto v = b.StartProcess(*id, body);
  if (!v) return ErrorResult(v.error());
  std::string text = "started " + Describe(*v);
  return OkResult(std::move(*v), std::move(text));
}

json::object List(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  if (!id) return args.error();
  auto v = b.ListProcesses(*id);
  if (!v) return ErrorResult(v.error());
  std::string text;
  for (const auto& p : v->at("processes").as_array()) text += Describe(p.as_object()) + "\n";
  if (text.empty()) text = "no processes\n";
  return OkResult(std::move(*v), std::move(text));
}

json::object Output(Args& args, ToolBackend& b, const CallContext& ctx) {
  auto id = args.Need("sandbox_id");
  auto pid = args.NeedInt("pid", 1, kMaxPid);
  auto tail = args.Int("tail_bytes", 1, kMaxTailBytes, kDefaultTailBytes);
  auto wait = args.Number("wait_seconds", kMaxWaitSeconds, true, 0);
  if (args.failed()) return args.error();
  OutputRequest req;
  req.pid = static_cast<int>(*pid);
  req.tail_bytes = static_cast<uint64_t>(*tail);
  req.wait_ms = static_cast<int64_t>(*wait * 1000);
  req.cancelled = ctx.cancelled;
  auto v = b.ReadProcessOutput(*id, req);
  if (!v) return ErrorResult(v.error());
  std::string output = TextOfTail(v->output);
  // Older output exists that is not in `output`: cut here, overwritten in the ring, or never
  // replayed (the process wrote more than tail_bytes).
  const json::value* written = v->process.if_contains("output_bytes");
  uint64_t total = written && written->is_number() ? written->to_number<uint64_t>() : 0;
  bool truncated = v->received > v->output.size() || v->skipped > 0 || total > v->output.size();
  std::string text = Describe(v->process) + "\n";
  if (!output.empty()) {
    text += "--- output (" + std::to_string(v->output.size()) + " bytes";
    if (truncated) text += " of the most recent; older output was cut";
    text += ")\n" + output;
  } else {
    text += "(no output)\n";
  }
  json::object s;
  s["process"] = std::move(v->process);
  s["output"] = std::move(output);
  s["bytes"] = v->output.size();
  s["received_bytes"] = v->received;
  s["skipped_bytes"] = v->skipped;
  s["truncated"] = truncated;
  return OkResult(std::move(s), std::move(text));
}

json::object Stdin(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  auto pid = args.NeedInt("pid", 1, kMaxPid);
  auto data = args.Opt("data");
  auto encoding = args.Opt("encoding");
  auto close = args.Bool("close", false);
  if (args.failed()) return args.error();
  if (!data && !*close)
    return ErrorResult("invalid_request", "data: required unless close is true");
  std::string bytes = data.value_or("");
  if (encoding && *encoding == "base64") {
    if (data && !Base64Decode(*data, &bytes))
      return ErrorResult("invalid_request", "data: not valid base64");
  } else if (encoding && *encoding != "utf8") {
    return ErrorResult("invalid_request", "encoding: must be \"utf8\" or \"base64\"");
  }
  if (bytes.size() > kMaxStdinBytes) {
    return ErrorResult("invalid_request", "data: at most " + std::to_string(kMaxStdinBytes) +
                                              " bytes per call (got " +
                                              std::to_string(bytes.size()) + ")");
  }
  int p = static_cast<int>(*pid);
  uint64_t written = 0;
  if (!bytes.empty()) {
    auto n = b.WriteProcessStdin(*id, p, bytes);
    if (!n) return ErrorResult(n.error());
    written = *n;
  }
  if (*close) {
    if (auto c = b.CloseProcessStdin(*id, p); !c) return ErrorResult(c.error());
  }
  json::object s;
  s["pid"] = p;
  s["bytes"] = written;
  s["closed"] = *close;
  std::string text = "wrote " + std::to_string(written) + " bytes to process " + std::to_string(p) +
                     (*close ? "; stdin closed" : "");
  return OkResult(std::move(s), std::move(text));
}

json::object Signal(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  auto pid = args.NeedInt("pid", 1, kMaxPid);
  auto signal = args.Need("signal");
  if (args.failed()) return args.error();
  int p = static_cast<int>(*pid);
  if (auto r = b.SignalProcess(*id, p, *signal); !r) return ErrorResult(r.error());
  json::object s;
  s["pid"] = p;
  s["signal"] = *signal;
  return OkResult(std::move(s), "sent " + *signal + " to process " + std::to_string(p));
}

json::object Kill(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  auto pid = args.NeedInt("pid", 1, kMaxPid);
  if (args.failed()) return args.error();
  auto v = b.KillProcess(*id, static_cast<int>(*pid));
  if (!v) return ErrorResult(v.error());
  std::string text = "killed " + Describe(*v);
  return OkResult(std::move(*v), std::move(text));
}

}  // namespace

void AddProcessTools(json::array& defs) {
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["command"] = Prop("string", "Shell command, run by /bin/sh -c (give this or argv).");
    p["argv"] = ArrayOf(Prop("string", ""), "Program and arguments, run without a shell.");
    p["env"] = EnvProp();
    p["workdir"] = Prop("string", "Working directory (default as sandbox_exec).");
    p["tag"] = Prop("string", "A label of yours, at most 256 bytes.");
    p["stdin"] = Prop("boolean", "Keep its stdin open for sandbox_process_stdin (default false).");
    p["ring_bytes"] = IntProp(
        "Bytes of recent output kept for sandbox_process_output "
        "(default 262144).",
        1, kMaxRingBytes);
    defs.emplace_back(
        Tool("sandbox_process_start", "Start a background process",
             "Start a long-running process (a dev server, a watcher, a REPL) that keeps running "
             "after this call. Read its output with sandbox_process_output, type into it with "
             "sandbox_process_stdin, stop it with sandbox_process_signal or sandbox_process_kill.",
             ObjectSchema(std::move(p), {"sandbox_id"}), ProcessSchema()));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    json::object o;
    o["processes"] = ArrayOf(ProcessSchema(), "Running and recently exited processes.");
    defs.emplace_back(Tool("sandbox_process_list", "List background processes",
                           "List a sandbox's background processes: running ones and the most "
                           "recent exited ones with their exit codes.",
                           ObjectSchema(std::move(p), {"sandbox_id"}),
                           ObjectSchema(std::move(o), {"processes"})));
  }
  {
    json::object p = IdAndPid();
    p["tail_bytes"] = IntProp(
        "Return at most this many bytes of the most recent output "
        "(default 65536).",
        1, kMaxTailBytes);
    json::object w = Prop("number",
                          "Also wait up to this many seconds for more output; returns early "
                          "when the process exits (default 0: what is there now).");
    w["minimum"] = 0;
    w["maximum"] = kMaxWaitSeconds;
    p["wait_seconds"] = std::move(w);
    json::object o;
    o["process"] = ProcessSchema();
    o["output"] = Prop("string", "stdout and stderr as written, in order (UTF-8).");
    o["bytes"] = Prop("integer", "Bytes in output.");
    o["received_bytes"] = Prop("integer", "Bytes read in all (older ones were cut).");
    o["skipped_bytes"] = Prop("integer", "Bytes the output ring overwrote before they were read.");
    o["truncated"] = Prop("boolean", "Older output is not in output.");
    defs.emplace_back(Tool("sandbox_process_output", "Read a process's output",
                           "Read a background process's recent output (its logs) and its state; "
                           "optionally wait for more. The process keeps running.",
                           ObjectSchema(std::move(p), {"sandbox_id", "pid"}),
                           ObjectSchema(std::move(o), {"process", "output", "truncated"})));
  }
  {
    json::object p = IdAndPid();
    p["data"] = Prop("string", "Bytes to write (at most 1 MiB); include \\n to end a line.");
    p["encoding"] = EncodingProp("utf8 (default) or base64.");
    p["close"] = Prop("boolean", "Close its stdin after writing (end of input).");
    json::object o;
    o["pid"] = Prop("integer", "");
    o["bytes"] = Prop("integer", "Bytes written.");
    o["closed"] = Prop("boolean", "");
    defs.emplace_back(Tool("sandbox_process_stdin", "Write to a process's stdin",
                           "Write to the stdin of a background process started with stdin: "
                           "true, and/or close it.",
                           ObjectSchema(std::move(p), {"sandbox_id", "pid"}),
                           ObjectSchema(std::move(o), {"pid", "bytes", "closed"})));
  }
  {
    json::object p = IdAndPid();
    p["signal"] = Prop("string", "Signal name or number: SIGTERM, SIGINT, HUP, 9, ...");
    json::object o;
    o["pid"] = Prop("integer", "");
    o["signal"] = Prop("string", "");
    defs.emplace_back(Tool("sandbox_process_signal", "Signal a process",
                           "Send a signal to a background process's process group (SIGINT "
                           "is Ctrl-C, SIGTERM asks it to stop).",
                           ObjectSchema(std::move(p), {"sandbox_id", "pid", "signal"}),
                           ObjectSchema(std::move(o), {"pid", "signal"})));
  }
  defs.emplace_back(Tool("sandbox_process_kill", "Kill a process",
                         "Kill a background process and everything it started; returns its "
                         "final state.",
                         ObjectSchema(IdAndPid(), {"sandbox_id", "pid"}), ProcessSchema()));
}

std::optional<json::object> CallProcessTool(std::string_view name, const json::object& a,
                                            ToolBackend& b, const CallContext& ctx) {
  Args args(a);
  if (name == "sandbox_process_start") return Start(args, b);
  if (name == "sandbox_process_list") return List(args, b);
  if (name == "sandbox_process_output") return Output(args, b, ctx);
  if (name == "sandbox_process_stdin") return Stdin(args, b);
  if (name == "sandbox_process_signal") return Signal(args, b);
  if (name == "sandbox_process_kill") return Kill(args, b);
  return std::nullopt;
}

}  // namespace asb::mcp::tools_internal
