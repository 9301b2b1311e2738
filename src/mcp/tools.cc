// Tool definitions and implementations (see tools.h): the sandbox, exec, file and snapshot
// tools here; processes (tools_procs.cc), ports (tools_ports.cc) and code (tools_code.cc) in
// files of their own. Each tool is one ToolBackend call, or a few; these files validate the
// arguments and render the results (text + structuredContent).
#include "mcp/tools.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "api/text.h"
#include "mcp/tools_util.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

using tools_internal::ArrayOf;
using tools_internal::CopyFields;
using tools_internal::Cut;
using tools_internal::EncodingProp;
using tools_internal::EnvProp;
using tools_internal::ErrorResult;
using tools_internal::ExecResultSchema;
using tools_internal::ExecToolResult;
using tools_internal::ObjectSchema;
using tools_internal::OkResult;
using tools_internal::Prop;
using tools_internal::Tool;

// The sandbox as the REST API shows it.
json::object SandboxSchema() {
  json::object p;
  p["id"] = Prop("string", "Sandbox id (sb_...).");
  p["status"] = Prop("string", "");
  p["status"].as_object()["enum"] =
      json::array{"creating", "running", "paused", "stopping", "destroyed", "error"};
  p["template"] = Prop("string", "");
  p["backend"] = Prop("string", "Isolation backend: ns or microvm.");
  p["cpus"] = Prop("number", "");
  p["memory_mb"] = Prop("integer", "");
  p["network"] = Prop("boolean", "");
  p["created_at"] = Prop("string", "RFC 3339 UTC.");
  p["expires_at"] = Prop("string", "RFC 3339 UTC.");
  return ObjectSchema(std::move(p), {"id", "status"});
}

json::object SnapshotSchema() {
  json::object p;
  p["id"] = Prop("string", "Snapshot id.");
  p["name"] = Prop("string", "");
  p["name"].as_object()["type"] = json::array{"string", "null"};
  p["sandbox_id"] = Prop("string", "");
  p["sandbox_id"].as_object()["type"] = json::array{"string", "null"};
  p["size_bytes"] = Prop("integer", "");
  return ObjectSchema(std::move(p), {"id"});
}

json::array BuildDefinitions() {
  json::array tools;
  {
    json::object p;
    p["template"] = Prop("string", "Template name (see sandbox_list_templates); default base.");
    p["backend"] = Prop("string",
                        "Isolation: ns (Linux namespaces) or microvm (a VM with a kernel of its "
                        "own); default the server's.");
    p["cpus"] = Prop("number", "CPU limit in cores.");
    p["memory_mb"] = Prop("integer", "Memory limit in MiB.");
    p["timeout_seconds"] = Prop("integer", "Lifetime in seconds before it is reaped.");
    p["network"] = Prop("boolean", "Give the sandbox network access (default false).");
    p["auto_pause"] = Prop("boolean",
                           "At the end of its lifetime, pause it instead of destroying it "
                           "(default false).");
    p["auto_pause_keep_memory"] =
        Prop("boolean", "false: that pause keeps only the files (default true: memory too).");
    p["auto_resume"] = Prop("boolean",
                            "While paused, a command or file call resumes it instead of failing "
                            "(default false).");
    p["env"] = EnvProp();
    tools.emplace_back(Tool("sandbox_create", "Create sandbox",
                            "Create a new isolated Linux sandbox. Work in /workspace inside it.",
                            ObjectSchema(std::move(p), {}), SandboxSchema()));
  }
  {
    json::object out;
    out["sandboxes"] = ArrayOf(SandboxSchema(), "Your sandboxes.");
    tools.emplace_back(Tool("sandbox_list", "List sandboxes", "List your sandboxes.",
                            ObjectSchema({}, {}), ObjectSchema(std::move(out), {"sandboxes"})));
  }
  {
    json::object item;
    item["name"] = Prop("string", "What sandbox_create's template takes.");
    item["display_name"] = Prop("string", "");
    item["description"] = Prop("string", "");
    item["tools"] = ArrayOf(Prop("string", ""), "Programs the template offers.");
    json::object out;
    out["templates"] = ArrayOf(ObjectSchema(std::move(item), {"name"}), "");
    tools.emplace_back(Tool("sandbox_list_templates", "List templates",
                            "List the templates sandboxes can be created from.",
                            ObjectSchema({}, {}), ObjectSchema(std::move(out), {"templates"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["command"] = Prop("string", "Shell command, run by /bin/sh -c.");
    p["workdir"] =
        Prop("string", "Working directory (default: the template's WORKDIR, else /workspace).");
    p["env"] = EnvProp();
    p["timeout"] = Prop("number",
                        "Seconds before the command is killed (exit code 124-style "
                        "timed_out: true).");
    p["stdin"] = Prop("string", "Text given on standard input.");
    tools.emplace_back(
        Tool("sandbox_exec", "Run a command",
             "Run a shell command in a sandbox and return its exit code and output. Long commands "
             "report progress; cancelling the request kills the command.",
             ObjectSchema(std::move(p), {"sandbox_id", "command"}), ExecResultSchema()));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["path"] = Prop("string",
                     "File path; relative paths are under /workspace, absolute ones anywhere the "
                     "sandbox user may reach.");
    json::object o;
    o["path"] = Prop("string", "");
    o["size"] = Prop("integer", "Full size in bytes.");
    o["encoding"] = EncodingProp("utf8 when the content is text, base64 otherwise.");
    o["content"] = Prop("string", "");
    o["truncated"] = Prop("boolean", "");
    tools.emplace_back(Tool("sandbox_read_file", "Read a file",
                            "Read a file. Non-UTF-8 content is returned as base64 "
                            "(encoding: base64).",
                            ObjectSchema(std::move(p), {"sandbox_id", "path"}),
                            ObjectSchema(std::move(o), {"path", "size", "encoding", "content"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["path"] = Prop("string",
                     "File path; relative paths are under /workspace, absolute ones anywhere the "
                     "sandbox user may reach.");
    p["content"] = Prop("string", "");
    p["encoding"] = EncodingProp("utf8 (default) or base64 for binary content.");
    p["mode"] = Prop("string", "Octal permission bits, e.g. 0755.");
    json::object o;
    o["path"] = Prop("string", "");
    o["size"] = Prop("integer", "");
    o["mode"] = Prop("string", "");
    tools.emplace_back(Tool("sandbox_write_file", "Write a file",
                            "Create or replace a file (parent directories are created).",
                            ObjectSchema(std::move(p), {"sandbox_id", "path", "content"}),
                            ObjectSchema(std::move(o), {"path", "size"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["path"] = Prop("string", "Directory (default /workspace).");
    p["recursive"] = Prop("boolean", "");
    json::object e;
    e["name"] = Prop("string", "");
    e["path"] = Prop("string", "");
    e["type"] = Prop("string", "file, dir, symlink, ...");
    e["size"] = Prop("integer", "");
    e["mode"] = Prop("string", "");
    json::object o;
    o["path"] = Prop("string", "");
    o["entries"] = ArrayOf(ObjectSchema(std::move(e), {"path", "type"}), "");
    tools.emplace_back(Tool("sandbox_list_files", "List files", "List a directory.",
                            ObjectSchema(std::move(p), {"sandbox_id"}),
                            ObjectSchema(std::move(o), {"path", "entries"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["name"] = Prop("string", "Optional label.");
    tools.emplace_back(Tool("sandbox_snapshot", "Snapshot",
                            "Save the sandbox's /workspace as a snapshot; take one before risky "
                            "changes.",
                            ObjectSchema(std::move(p), {"sandbox_id"}), SnapshotSchema()));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["snapshot_id"] = Prop("string", "");
    tools.emplace_back(Tool(
        "sandbox_rollback", "Roll back", "Restore a sandbox's /workspace to one of its snapshots.",
        ObjectSchema(std::move(p), {"sandbox_id", "snapshot_id"}), SandboxSchema()));
  }
  {
    json::object p;
    p["snapshot_id"] = Prop("string", "");
    p["timeout_seconds"] = Prop("integer", "Lifetime of the new sandbox.");
    tools.emplace_back(Tool("sandbox_fork", "Fork",
                            "Create a new sandbox whose /workspace starts as the snapshot's, to "
                            "explore an alternative.",
                            ObjectSchema(std::move(p), {"snapshot_id"}), SandboxSchema()));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["count"] = Prop("integer", "How many children (default 1).");
    p["timeout_seconds"] = Prop("integer", "Each child's lifetime; default the sandbox's.");
    json::object err;
    err["code"] = Prop("string", "");
    err["message"] = Prop("string", "");
    json::object child;
    child["sandbox"] = SandboxSchema();
    child["memory"] = Prop("boolean", "Whether it started with the sandbox's memory.");
    child["error"] = ObjectSchema(std::move(err), {"code", "message"});
    child["status"] = Prop("integer", "The HTTP status of this child's error.");
    json::object o;
    o["forks"] = ArrayOf(ObjectSchema(std::move(child), {}), "One per child asked for.");
    tools.emplace_back(Tool(
        "sandbox_fork_running", "Fork a running sandbox",
        "Create count new sandboxes from a running one: each starts with its /workspace as it is "
        "now (its own copy) and fresh processes; the sandbox itself runs on. To try several "
        "approaches from one state.",
        ObjectSchema(std::move(p), {"sandbox_id"}), ObjectSchema(std::move(o), {"forks"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    json::object o;
    o["id"] = Prop("string", "");
    o["destroyed"] = Prop("boolean", "");
    tools.emplace_back(Tool("sandbox_destroy", "Destroy",
                            "Destroy a sandbox and everything in it. Do this when done.",
                            ObjectSchema(std::move(p), {"sandbox_id"}),
                            ObjectSchema(std::move(o), {"id", "destroyed"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["keep_memory"] = Prop("boolean",
                            "false: keep only the files; every process ends, no quota slot is "
                            "held, and sandbox_resume starts it afresh. Default true.");
    tools.emplace_back(
        Tool("sandbox_pause", "Pause",
             "Pause a sandbox: every process stops where it is, memory and files kept, until "
             "sandbox_resume. Nothing runs in it meanwhile (commands and file calls are refused).",
             ObjectSchema(std::move(p), {"sandbox_id"}), SandboxSchema()));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["timeout_seconds"] = Prop("integer", "Lifetime from now; default: the one it last had.");
    tools.emplace_back(Tool("sandbox_resume", "Resume", "Resume a paused sandbox where it stopped.",
                            ObjectSchema(std::move(p), {"sandbox_id"}), SandboxSchema()));
  }
  return tools;
}

const json::string* StringArg(const json::object& a, std::string_view key) {
  auto it = a.find(key);
  if (it == a.end() || !it->value().is_string()) return nullptr;
  return &it->value().as_string();
}

}  // namespace

// ---- encodings ----------------------------------------------------------------------------------

bool Base64Decode(std::string_view in, std::string* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return false;  // data after padding
    int v = val(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return pad <= 2 && bits < 6;
}

bool IsValidUtf8(std::string_view in) { return api::SanitizeUtf8(in) == in; }

// ---- tools --------------------------------------------------------------------------------------

json::array Tools::Definitions() {
  static const json::array defs = [] {
    json::array d = BuildDefinitions();
    tools_internal::AddProcessTools(d);
    tools_internal::AddPortTools(d);
    tools_internal::AddWatchTools(d);
    tools_internal::AddCodeTools(d);
    tools_internal::AddCodeContextTools(d);
    return d;
  }();
  return defs;
}

bool Tools::Exists(std::string_view name) {
  for (const auto& t : Definitions()) {
    if (t.as_object().at("name").as_string() == name) return true;
  }
  return false;
}

json::object Tools::Call(std::string_view name, const json::object& a,
                         const CallContext& ctx) const {
  ToolBackend& b = *backend_;
  auto fail = [](const ToolError& e) { return ErrorResult(e); };
  // A required string argument; nullptr (and an isError result in *bad) when missing.
  json::object bad;
  auto need = [&](std::string_view key) -> const json::string* {
    const json::string* s = StringArg(a, key);
    if (!s || s->empty()) {
      bad = ErrorResult("invalid_request", std::string(key) + ": required string");
      return nullptr;
    }
    return s;
  };
  auto str = [](const json::string* s) { return std::string(s->data(), s->size()); };
  auto opt = [&](std::string_view key) -> std::optional<std::string> {
    const json::string* s = StringArg(a, key);
    if (!s) return std::nullopt;
    return std::string(*s);
  };

  if (name == "sandbox_create") {
    json::object body;
    CopyFields(a, body,
               {"template", "backend", "cpus", "memory_mb", "timeout_seconds", "network", "env",
                "auto_pause", "auto_pause_keep_memory", "auto_resume"});
    auto v = b.CreateSandbox(body);
    if (!v) return fail(v.error());
    std::string text = "created sandbox " + std::string(v->at("id").as_string());
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_list") {
    auto v = b.ListSandboxes();
    if (!v) return fail(v.error());
    std::string text;
    for (const auto& s : v->at("sandboxes").as_array()) {
      const auto& o = s.as_object();
      text += std::string(o.at("id").as_string()) + " " + std::string(o.at("status").as_string()) +
              "\n";
    }
    if (text.empty()) text = "no sandboxes\n";
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_list_templates") {
    auto v = b.ListTemplates();
    if (!v) return fail(v.error());
    std::string text;
    for (const auto& t : v->at("templates").as_array()) {
      const auto& o = t.as_object();
      text += std::string(o.at("name").as_string());
      auto d = o.find("description");
      if (d != o.end() && d->value().is_string() && !d->value().as_string().empty()) {
        text += ": " + std::string(d->value().as_string());
      }
      text += "\n";
    }
    if (text.empty()) text = "no templates\n";
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_exec") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    const json::string* cmd = need("command");
    if (!cmd) return bad;
    json::object body;
    body["command"] = *cmd;
    CopyFields(a, body, {"workdir", "env", "timeout", "stdin"});
    return ExecToolResult(b, str(id), body, ctx);
  }
  if (name == "sandbox_read_file") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    const json::string* path = need("path");
    if (!path) return bad;
    auto r = b.ReadFile(str(id), str(path));
    if (!r) return fail(r.error());
    const std::string& data = *r;
    bool cut = false;
    std::string shown = Cut(data, kMaxTextBytes, &cut);
    json::object s;
    s["path"] = *path;
    s["size"] = data.size();
    s["truncated"] = cut;
    std::string text;
    if (IsValidUtf8(data)) {
      s["encoding"] = "utf8";
      s["content"] = shown;
      text = shown;
    } else {
      if (cut) shown = data.substr(0, kMaxTextBytes);
      s["encoding"] = "base64";
      s["content"] = api::Base64Encode(shown);
      text = "binary file, " + std::to_string(data.size()) +
             " bytes (base64 in structuredContent.content)";
    }
    if (cut) text += "\n[truncated: " + std::to_string(data.size()) + " bytes in full]";
    return OkResult(std::move(s), std::move(text));
  }
  if (name == "sandbox_write_file") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    const json::string* path = need("path");
    if (!path) return bad;
    const json::string* content = StringArg(a, "content");
    if (!content) return ErrorResult("invalid_request", "content: required string");
    const json::string* enc = StringArg(a, "encoding");
    std::string data;
    if (enc && *enc == "base64") {
      if (!Base64Decode(*content, &data)) {
        return ErrorResult("invalid_request", "content: not valid base64");
      }
    } else if (!enc || *enc == "utf8") {
      data = std::string(*content);
    } else {
      return ErrorResult("invalid_request", "encoding: must be \"utf8\" or \"base64\"");
    }
    auto v = b.WriteFile(str(id), str(path), data, opt("mode"));
    if (!v) return fail(v.error());
    std::string text = "wrote " + std::to_string(data.size()) + " bytes to " +
                       std::string(v->at("path").as_string());
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_list_files") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    auto rec = a.find("recursive");
    bool recursive = rec != a.end() && rec->value().is_bool() && rec->value().as_bool();
    auto v = b.ListFiles(str(id), opt("path").value_or("/workspace"), recursive);
    if (!v) return fail(v.error());
    std::string text;
    for (const auto& e : v->at("entries").as_array()) {
      const auto& o = e.as_object();
      text += std::string(o.at("type").as_string()) + " " + std::string(o.at("path").as_string()) +
              "\n";
    }
    if (text.empty()) text = "(empty)\n";
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_snapshot") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    auto v = b.Snapshot(str(id), opt("name"));
    if (!v) return fail(v.error());
    std::string text = "snapshot " + std::string(v->at("id").as_string());
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_rollback") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    const json::string* snap = need("snapshot_id");
    if (!snap) return bad;
    auto v = b.Rollback(str(id), str(snap));
    if (!v) return fail(v.error());
    return OkResult(std::move(*v), "rolled back to " + str(snap));
  }
  if (name == "sandbox_fork") {
    const json::string* snap = need("snapshot_id");
    if (!snap) return bad;
    json::object body;
    CopyFields(a, body, {"timeout_seconds"});
    auto v = b.Fork(str(snap), body);
    if (!v) return fail(v.error());
    std::string text = "forked into sandbox " + std::string(v->at("id").as_string());
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_fork_running") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    json::object body;
    CopyFields(a, body, {"count", "timeout_seconds"});
    auto v = b.ForkSandbox(str(id), body);
    if (!v) return fail(v.error());
    std::string text = "forked:";
    for (const json::value& f : v->at("forks").as_array()) {
      const json::object& o = f.as_object();
      if (const json::value* sb = o.if_contains("sandbox")) {
        text += " " + std::string(sb->as_object().at("id").as_string());
      } else {
        text += " (a child was not made)";
      }
    }
    return OkResult(std::move(*v), text);
  }
  if (name == "sandbox_destroy") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    auto v = b.Destroy(str(id));
    if (!v) return fail(v.error());
    json::object s;
    s["id"] = *id;
    s["destroyed"] = true;
    return OkResult(std::move(s), "destroyed");
  }
  if (name == "sandbox_pause" || name == "sandbox_resume") {
    const json::string* id = need("sandbox_id");
    if (!id) return bad;
    std::optional<int64_t> timeout;
    if (const json::value* t = a.if_contains("timeout_seconds"); t && name == "sandbox_resume") {
      if (!t->is_int64()) {
        return ErrorResult("invalid_request", "timeout_seconds: must be an integer");
      }
      timeout = t->as_int64();
    }
    bool keep_memory = true;
    if (const json::value* k = a.if_contains("keep_memory"); k && name == "sandbox_pause") {
      if (!k->is_bool()) return ErrorResult("invalid_request", "keep_memory: must be a boolean");
      keep_memory = k->as_bool();
    }
    auto v = name == "sandbox_pause" ? b.Pause(str(id), keep_memory) : b.Resume(str(id), timeout);
    if (!v) return fail(v.error());
    return OkResult(std::move(*v), name == "sandbox_pause" ? "paused" : "resumed");
  }
  if (auto r = tools_internal::CallProcessTool(name, a, b, ctx)) return std::move(*r);
  if (auto r = tools_internal::CallPortTool(name, a, b, ctx)) return std::move(*r);
  if (auto r = tools_internal::CallWatchTool(name, a, b, ctx)) return std::move(*r);
  if (auto r = tools_internal::CallCodeTool(name, a, b, ctx)) return std::move(*r);
  if (auto r = tools_internal::CallCodeContextTool(name, a, b, ctx)) return std::move(*r);
  return ErrorResult("invalid_request", "unknown tool " + std::string(name));
}

}  // namespace asb::mcp
