// The stateful code tools (ADR 0019): sandbox_code_run runs code in a code context (a Jupyter
// kernel for Python, a Node vm context for JavaScript, one bash), where variables, imports and
// the working directory persist between calls, and answers its rich results: the text of
// stdout, stderr, the main result and the error as text content, every image/png result as an
// MCP image content item, and chart data as text JSON. sandbox_code_context_create / list /
// restart / delete manage the contexts. They are separate from the one-shot sandbox_run_code
// (tools_code.cc), which runs a fresh interpreter per call over exec, with other languages
// (sh, go), env and exit codes: two tools with one clear behaviour each are easier for an
// agent to choose between than one tool whose semantics change with an optional argument.
#include <string>

#include "mcp/tools_util.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

namespace {

/// Base64 image bytes one answer carries at most; images past it are listed, not sent.
constexpr size_t kMaxImageBytes = 16u << 20;

json::object TextItem(std::string text) {
  json::object c;
  c["type"] = "text";
  c["text"] = std::move(text);
  return c;
}

// {"type": [t, "null"]}: a field the server answers null for.
json::object Nullable(std::string_view type, std::string_view description) {
  json::object p = Prop(type, description);
  p["type"] = json::array{json::string(type), "null"};
  return p;
}

// Text without the terminal colour sequences IPython puts in tracebacks (ESC [ ... letter).
std::string StripAnsi(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\x1b' && i + 1 < in.size() && in[i + 1] == '[') {
      size_t j = i + 2;
      while (j < in.size() && !(in[j] >= '@' && in[j] <= '~')) ++j;
      i = j;
      continue;
    }
    out += in[i];
  }
  return out;
}

std::string StringAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

json::object ContextSchema() {
  json::object p;
  p["id"] = Prop("string", "The context id (ctx_...): pass it as context_id.");
  p["language"] = Prop("string", "");
  p["cwd"] = Prop("string", "");
  p["pid"] = Prop("integer", "The kernel's driver process.");
  p["state"] = Prop("string", "running, or dead once its kernel exited (restart revives it).");
  p["default"] = Prop("boolean", "The context sandbox_code_run uses when none is named.");
  p["created_at"] = Prop("string", "");
  return ObjectSchema(std::move(p), {"id", "language", "state"});
}

json::object RunSchema() {
  json::object result;
  result["is_main_result"] = Prop("boolean", "The value of the last expression.");
  result["data"] = Prop("object",
                        "MIME type to value; image/png is replaced by a note naming the image "
                        "content item that carries it.");
  result["chart"] = Prop("object", "Chart data of a matplotlib figure.");
  json::object error;
  error["name"] = Prop("string", "");
  error["value"] = Prop("string", "");
  error["traceback"] = ArrayOf(Prop("string", ""), "");
  json::object err_schema = ObjectSchema(std::move(error), {"name", "value"});
  err_schema["type"] = json::array{"object", "null"};
  json::object p;
  p["context_id"] = Prop("string", "The context it ran in: pass it again to keep its state.");
  p["language"] = Prop("string", "");
  p["status"] = Prop("string", "ok, error, timeout or dead (the kernel exited).");
  p["stdout"] = Prop("string", "");
  p["stderr"] = Prop("string", "");
  p["results"] = ArrayOf(ObjectSchema(std::move(result), {"is_main_result", "data"}), "");
  p["error"] = std::move(err_schema);
  p["execution_count"] = Nullable("integer", "");
  p["duration_ms"] = Prop("integer", "");
  p["timed_out"] = Prop("boolean", "");
  p["truncated"] = Prop("boolean", "Output was cut (server limit or this tool's text limit).");
  p["exit_code"] = Prop("integer", "bash: the last command's exit status.");
  p["images"] = Prop("integer", "image/png results sent as image content items.");
  return ObjectSchema(std::move(p), {"context_id", "status", "stdout", "stderr", "results"});
}

// The execution object as the tool's answer: text, one image item per image/png, chart JSON.
json::object RenderRun(json::object ex) {
  json::array content;
  bool cut = false;
  std::string out = StringAt(ex, "stdout");
  std::string err = StringAt(ex, "stderr");
  ex["stdout"] = Cut(out, kMaxTextBytes, &cut);
  ex["stderr"] = Cut(err, kMaxTextBytes, &cut);
  std::string status = StringAt(ex, "status");
  std::string text = "status " + status;
  if (const json::value* n = ex.if_contains("execution_count"); n && n->is_int64()) {
    text += ", execution " + std::to_string(n->as_int64());
  }
  text += " in context " + StringAt(ex, "context_id") + " (" + StringAt(ex, "language") + ")";
  if (const json::value* c = ex.if_contains("exit_code"); c && c->is_int64()) {
    text += ", exit " + std::to_string(c->as_int64());
  }
  text += "\n";
  bool text_cut = false;
  std::string out_text = Cut(out, kMaxTextBytes / 2, &text_cut);
  std::string err_text = Cut(err, kMaxTextBytes / 2, &text_cut);
  if (!out_text.empty()) text += "--- stdout\n" + out_text + (out_text.back() == '\n' ? "" : "\n");
  if (!err_text.empty()) text += "--- stderr\n" + err_text + (err_text.back() == '\n' ? "" : "\n");

  std::vector<json::object> extra;  // images and charts, after the text item
  size_t image_bytes = 0;
  int images = 0;
  int n = 0;
  if (json::value* rs = ex.if_contains("results"); rs && rs->is_array()) {
    for (json::value& rv : rs->as_array()) {
      ++n;
      if (!rv.is_object()) continue;
      json::object& r = rv.as_object();
      const bool main = r.contains("is_main_result") && r.at("is_main_result").is_bool() &&
                        r.at("is_main_result").as_bool();
      json::object* data =
          r.contains("data") && r.at("data").is_object() ? &r.at("data").as_object() : nullptr;
      bool has_image = false;
      if (data) {
        if (json::value* png = data->if_contains("image/png"); png && png->is_string()) {
          has_image = true;
          size_t size = png->as_string().size();
          if (image_bytes + size <= kMaxImageBytes) {
            image_bytes += size;
            ++images;
            json::object img;
            img["type"] = "image";
            img["data"] = png->as_string();
            img["mimeType"] = "image/png";
            extra.push_back(std::move(img));
            *png = "[image/png: sent as image content item " + std::to_string(images) + "]";
          } else {
            *png = "[image/png: " + std::to_string(size) +
                   " bytes of base64 not sent: the answer's images are over " +
                   std::to_string(kMaxImageBytes) + " bytes; save it to a file instead]";
            cut = true;
          }
        }
        // The text of the main result, and of displays that are not images.
        const json::value* plain = data->if_contains("text/plain");
        if (plain && plain->is_string() && (main || !has_image)) {
          bool c = false;
          std::string v = Cut(plain->as_string(), kMaxTextBytes / 4, &c);
          text_cut = text_cut || c;
          text += (main ? "--- result\n" : "--- display " + std::to_string(n) + "\n") + v +
                  (v.empty() || v.back() == '\n' ? "" : "\n");
        }
      }
      if (const json::value* chart = r.if_contains("chart"); chart && !chart->is_null()) {
        extra.push_back(TextItem("chart of result " + std::to_string(n) +
                                 " (JSON): " + json::serialize(*chart)));
      }
    }
  }
  if (const json::value* e = ex.if_contains("error"); e && e->is_object()) {
    const json::object& eo = e->as_object();
    text += "--- error\n" + StripAnsi(StringAt(eo, "name")) + ": " +
            StripAnsi(StringAt(eo, "value")) + "\n";
    if (const json::value* tb = eo.if_contains("traceback"); tb && tb->is_array()) {
      std::string t;
      for (const json::value& line : tb->as_array()) {
        if (line.is_string()) t += StripAnsi(line.as_string()) + "\n";
      }
      bool c = false;
      text += Cut(t, kMaxTextBytes / 4, &c);
      text_cut = text_cut || c;
    }
  }
  const bool server_cut =
      ex.contains("truncated") && ex.at("truncated").is_bool() && ex.at("truncated").as_bool();
  if (cut || text_cut || server_cut) {
    text += "\n[output truncated; stdout " + std::to_string(out.size()) + " bytes, stderr " +
            std::to_string(err.size()) + " bytes received" +
            (server_cut ? ", more was cut by the server's output limit" : "") + "]";
  }
  ex["truncated"] = cut || server_cut;
  ex["images"] = images;
  content.emplace_back(TextItem(std::move(text)));
  for (json::object& o : extra) content.emplace_back(std::move(o));
  json::object answer;
  answer["content"] = std::move(content);
  answer["structuredContent"] = std::move(ex);
  return answer;
}

json::object Run(Args& args, ToolBackend& b, const CallContext& ctx) {
  auto id = args.Need("sandbox_id");
  auto code = args.Opt("code");
  auto context_id = args.Opt("context_id");
  auto language = args.Opt("language");
  if (args.failed()) return args.error();
  if (!code || code->empty()) return ErrorResult("invalid_request", "code: required string");
  json::object body;
  body["code"] = *code;
  if (context_id) body["context_id"] = *context_id;
  if (language) body["language"] = *language;
  CopyFields(args.all(), body, {"timeout"});
  double progress = 0;
  ExecHooks hooks;
  hooks.cancelled = ctx.cancelled;
  hooks.output = [&](std::string_view stream, std::string_view data) {
    if (ctx.progress) {
      bool cut = false;
      ctx.progress(++progress, std::string(stream) + ": " + Cut(data, 200, &cut));
    }
  };
  auto ex = b.RunCode(*id, body, hooks);
  if (!ex) return ErrorResult(ex.error());
  return RenderRun(std::move(*ex));
}

json::object ContextAnswer(const ToolResult<json::object>& c, std::string_view verb) {
  if (!c) return ErrorResult(c.error());
  std::string text = std::string(verb) + " " + StringAt(*c, "id") + " (" +
                     StringAt(*c, "language") + ", " + StringAt(*c, "state") + ")";
  return OkResult(*c, std::move(text));
}

}  // namespace

void AddCodeContextTools(json::array& defs) {
  const char* langs =
      "python (the default; needs the python template), javascript (node "
      "template) or bash (any template).";
  json::object p;
  p["sandbox_id"] = Prop("string", "");
  p["code"] = Prop("string", "The code to run (at most 512 KiB).");
  p["context_id"] = Prop("string",
                         "A context from sandbox_code_context_create or an earlier run; absent: "
                         "the sandbox's default context of `language`, started on first use.");
  p["language"] = Prop("string", langs);
  p["language"].as_object()["enum"] = json::array{"python", "javascript", "bash"};
  p["timeout"] = Prop("number", "Seconds before the code is interrupted (status timeout).");
  defs.emplace_back(
      Tool("sandbox_code_run", "Run code in a stateful context",
           "Run code in a persistent code context of the sandbox, like a notebook cell: variables, "
           "imports and the working directory persist between calls in one context. Returns "
           "stdout, stderr, the value of the last expression, the error with its traceback, every "
           "image/png result (matplotlib figures, displays) as image content, and chart data as "
           "JSON text. For a one-shot program with a fresh interpreter use sandbox_run_code.",
           ObjectSchema(std::move(p), {"sandbox_id", "code"}), RunSchema()));

  json::object c;
  c["sandbox_id"] = Prop("string", "");
  c["language"] = Prop("string", langs);
  c["language"].as_object()["enum"] = json::array{"python", "javascript", "bash"};
  c["cwd"] = Prop("string", "Working directory (default /workspace).");
  defs.emplace_back(Tool("sandbox_code_context_create", "Create a code context",
                         "Start a new code context (its own kernel and state) for "
                         "sandbox_code_run's context_id; a Python kernel takes a few seconds.",
                         ObjectSchema(std::move(c), {"sandbox_id"}), ContextSchema()));
  json::object l;
  l["sandbox_id"] = Prop("string", "");
  json::object list_out;
  list_out["contexts"] = ArrayOf(ContextSchema(), "");
  defs.emplace_back(Tool("sandbox_code_context_list", "List code contexts",
                         "The sandbox's code contexts, running and dead, oldest first.",
                         ObjectSchema(std::move(l), {"sandbox_id"}),
                         ObjectSchema(std::move(list_out), {"contexts"})));
  json::object one;
  one["sandbox_id"] = Prop("string", "");
  one["context_id"] = Prop("string", "");
  defs.emplace_back(Tool("sandbox_code_context_restart", "Restart a code context",
                         "Replace the context's kernel with a fresh one under the same id: all "
                         "its state is gone. Also revives a dead context.",
                         ObjectSchema(one, {"sandbox_id", "context_id"}), ContextSchema()));
  json::object del_out;
  del_out["sandbox_id"] = Prop("string", "");
  del_out["context_id"] = Prop("string", "");
  del_out["deleted"] = Prop("boolean", "");
  defs.emplace_back(Tool("sandbox_code_context_delete", "Delete a code context",
                         "End the context's kernel; its state is lost.",
                         ObjectSchema(std::move(one), {"sandbox_id", "context_id"}),
                         ObjectSchema(std::move(del_out), {"deleted"})));
}

std::optional<json::object> CallCodeContextTool(std::string_view name, const json::object& a,
                                                ToolBackend& b, const CallContext& ctx) {
  if (name.rfind("sandbox_code_", 0) != 0) return std::nullopt;
  Args args(a);
  if (name == "sandbox_code_run") return Run(args, b, ctx);
  auto id = args.Need("sandbox_id");
  if (name == "sandbox_code_context_create") {
    auto language = args.Opt("language");
    auto cwd = args.Opt("cwd");
    if (args.failed()) return args.error();
    json::object body;
    if (language) body["language"] = *language;
    if (cwd) body["cwd"] = *cwd;
    return ContextAnswer(b.CreateCodeContext(*id, body), "created");
  }
  if (name == "sandbox_code_context_list") {
    if (args.failed()) return args.error();
    auto l = b.ListCodeContexts(*id);
    if (!l) return ErrorResult(l.error());
    std::string text;
    if (const json::value* cs = l->if_contains("contexts"); cs && cs->is_array()) {
      for (const json::value& c : cs->as_array()) {
        if (!c.is_object()) continue;
        const json::object& o = c.as_object();
        text += StringAt(o, "id") + " " + StringAt(o, "language") + " " + StringAt(o, "state") +
                (o.contains("default") && o.at("default").is_bool() && o.at("default").as_bool()
                     ? " (default)"
                     : "") +
                " cwd " + StringAt(o, "cwd") + "\n";
      }
    }
    if (text.empty()) text = "no code contexts";
    return OkResult(std::move(*l), std::move(text));
  }
  auto cid = args.Need("context_id");
  if (args.failed()) return args.error();
  if (name == "sandbox_code_context_restart") {
    return ContextAnswer(b.RestartCodeContext(*id, *cid), "restarted");
  }
  if (name == "sandbox_code_context_delete") {
    auto d = b.DeleteCodeContext(*id, *cid);
    if (!d) return ErrorResult(d.error());
    json::object s;
    s["sandbox_id"] = *id;
    s["context_id"] = *cid;
    s["deleted"] = true;
    return OkResult(std::move(s), "deleted " + *cid);
  }
  return std::nullopt;
}

}  // namespace asb::mcp::tools_internal
