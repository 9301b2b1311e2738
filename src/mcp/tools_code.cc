// sandbox_run_code: a program given as text, run by the language's interpreter in the
// sandbox, which reads it from stdin (as the SDKs' run_code / runCode do; the REST API has no
// code route). The interpreter must be in the sandbox's template: when it is not, the tool
// answers not_found naming the program, instead of a bare exit 127.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "mcp/tools_util.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

namespace {

/// The longest program, in bytes (it travels as the exec's stdin).
constexpr size_t kMaxCodeBytes = 1024 * 1024;

struct Language {
  const char* name;     // as the schema lists it
  const char* program;  // what must be installed
  std::vector<const char*> argv;
};

const std::vector<Language>& Languages() {
  static const std::vector<Language> kAll = {
      {"python", "python3", {"python3", "-"}},
      {"javascript", "node", {"node", "-"}},
      {"bash", "bash", {"bash", "-s"}},
      {"sh", "sh", {"sh", "-s"}},
      {"go",
       "go",
       {"sh", "-c", "d=$(mktemp -d) && cat > \"$d/main.go\" && cd \"$d\" && go run main.go"}},
  };
  return kAll;
}

// Other names the SDKs accept for the same languages.
std::string Canonical(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "py" || name == "python3") return "python";
  if (name == "js" || name == "node" || name == "nodejs") return "javascript";
  if (name == "shell") return "sh";
  if (name == "golang") return "go";
  return name;
}

// True when the exec's result says `program` was not found: exit 127 with sandboxd's line
// ("sandboxd: node: command not found") or a shell's ("sh: 1: go: not found").
bool ProgramMissing(const json::object& result, std::string_view program) {
  const json::object* s = result.if_contains("structuredContent")
                              ? &result.at("structuredContent").as_object()
                              : nullptr;
  if (!s) return false;
  const json::value* code = s->if_contains("exit_code");
  const json::value* err = s->if_contains("stderr");
  if (!code || !code->is_int64() || code->as_int64() != 127 || !err || !err->is_string()) {
    return false;
  }
  std::string_view e = err->as_string();
  std::string p(program);
  std::string shell_line = ": " + p + ": not found\n";
  return e == "sandboxd: " + p + ": command not found\n" ||
         (e.size() < 200 && e.size() >= shell_line.size() &&
          e.substr(e.size() - shell_line.size()) == shell_line);
}

json::object RunCode(Args& args, ToolBackend& b, const CallContext& ctx) {
  auto id = args.Need("sandbox_id");
  auto language = args.Need("language");
  auto code = args.Opt("code");
  if (args.failed()) return args.error();
  if (!code) return ErrorResult("invalid_request", "code: required string");
  if (code->size() > kMaxCodeBytes) {
    return ErrorResult("invalid_request", "code: at most " + std::to_string(kMaxCodeBytes) +
                                              " bytes (got " + std::to_string(code->size()) + ")");
  }
  std::string name = Canonical(*language);
  auto lang = std::find_if(Languages().begin(), Languages().end(),
                           [&](const Language& l) { return name == l.name; });
  if (lang == Languages().end()) {
    return ErrorResult("invalid_request",
                       "language: must be one of python, javascript, bash, sh, go");
  }
  json::object body;
  json::array argv;
  for (const char* a : lang->argv) argv.emplace_back(a);
  body["argv"] = std::move(argv);
  body["stdin"] = *code;
  CopyFields(args.all(), body, {"env", "workdir", "timeout"});
  json::object r = ExecToolResult(b, *id, body, ctx);
  if (ProgramMissing(r, lang->program)) {
    return ErrorResult("not_found", std::string(lang->name) + " needs " + lang->program +
                                        ", which this sandbox's template does not have; create "
                                        "a sandbox from a template whose tools list " +
                                        lang->program + " (sandbox_list_templates)");
  }
  if (auto* s = r.if_contains("structuredContent")) s->as_object()["language"] = lang->name;
  return r;
}

}  // namespace

void AddCodeTools(json::array& defs) {
  json::object p;
  p["sandbox_id"] = Prop("string", "");
  p["language"] = Prop("string", "python (python3), javascript (node), bash, sh or go.");
  p["language"].as_object()["enum"] = json::array{"python", "javascript", "bash", "sh", "go"};
  p["code"] = Prop("string",
                   "The program (at most 1 MiB). It is read from stdin, so it "
                   "cannot read stdin itself.");
  p["timeout"] = Prop("number", "Seconds before it is killed (as sandbox_exec).");
  p["env"] = EnvProp();
  p["workdir"] = Prop("string", "Working directory (default as sandbox_exec).");
  json::object out = ExecResultSchema();
  out["properties"].as_object()["language"] = Prop("string", "");
  defs.emplace_back(Tool("sandbox_run_code", "Run code",
                         "Run a program given as text with the language's interpreter in the "
                         "sandbox and return its exit code and output. The interpreter must be "
                         "in the sandbox's template (sandbox_list_templates shows its tools). Each "
                         "call starts a fresh interpreter; to keep variables between calls and "
                         "get images and rich results, use sandbox_code_run.",
                         ObjectSchema(std::move(p), {"sandbox_id", "language", "code"}),
                         std::move(out)));
}

std::optional<json::object> CallCodeTool(std::string_view name, const json::object& a,
                                         ToolBackend& b, const CallContext& ctx) {
  if (name != "sandbox_run_code") return std::nullopt;
  Args args(a);
  return RunCode(args, b, ctx);
}

}  // namespace asb::mcp::tools_internal
