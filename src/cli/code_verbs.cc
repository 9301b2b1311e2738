// The code interpreter verbs (ADR 0019; the wire spec is api/handlers_code.cc's header):
//   code [--language L] [--context CTX] [--timeout S] [--json] ID
//       runs the code read from stdin in a code context of the sandbox (the language's default
//       context unless --context names one), following POST .../code/stream: stdout and stderr
//       go to ours as they arrive, the main result's text/plain to stdout, each image/png is
//       saved as code-<n>.png in the current directory (its name on stderr), and the error's
//       traceback goes to stderr. --json prints the sync POST .../code answer instead.
//   code-context create [--language L] [--cwd D] ID     prints the new context's id
//   code-context ls [--json] ID | rm ID CTX... | restart ID CTX
// Exit codes (ADR 0005, as for exec): 0 when the code ran to its end without an error, 1 when
// it raised one (as python/node exit on an uncaught exception) or the kernel died, bash's own
// last status when it is not 0, 124 when --timeout expired, 125 when agent-sandbox failed.
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/text.h"
#include "api/url.h"
#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/server_commands.h"

namespace asb::cli {
namespace {

namespace json = boost::json;

struct CodeFlags {
  std::string id;
  std::string language;
  std::string context;
  std::optional<double> timeout;
  bool json = false;
};

std::string CodePath(const std::string& id) { return SandboxPath(id) + "/code"; }
std::string ContextsPath(const std::string& id) { return SandboxPath(id) + "/contexts"; }

// Text without terminal colour sequences (ESC [ ... final byte), for a stderr that is no tty.
std::string StripAnsi(std::string_view in) {
  std::string out;
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

void Write(FILE* f, std::string_view s) {
  std::fwrite(s.data(), 1, s.size(), f);
  std::fflush(f);
}

// The exit code of an execution's end (or sync answer): see the header comment.
int ExitCodeOfEnd(const json::object& end) {
  std::string status = Str(end, "status");
  if (status == "timeout") return kExitTimeout;
  const json::value* code = end.if_contains("exit_code");
  if (code && code->is_int64() && code->as_int64() != 0) {
    return static_cast<int>(code->as_int64() & 0xff);
  }
  if (status == "ok") return 0;
  return 1;
}

// Saves a base64 PNG as code-<n>.png in the current directory, the first n not taken.
Result<std::string> SaveImage(std::string_view b64, int* next) {
  ASB_ASSIGN_OR_RETURN(std::string bytes, api::Base64Decode(b64, "image/png"));
  for (;; ++*next) {
    std::string name = "code-" + std::to_string(*next) + ".png";
    FILE* f = std::fopen(name.c_str(), "wbx");  // never overwrites a file
    if (!f) {
      if (errno == EEXIST) continue;
      return Fail(Error::Internal("cannot write " + name + ": " + std::strerror(errno)));
    }
    size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
    bool ok = std::fclose(f) == 0 && n == bytes.size();
    if (!ok) return Fail(Error::Internal("cannot write " + name));
    ++*next;
    return name;
  }
}

// Prints a kernel's error: its traceback (or "name: value" without one) on stderr.
void PrintKernelError(const json::object& e) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  std::string text;
  if (const json::value* tb = e.if_contains("traceback");
      tb && tb->is_array() && !tb->as_array().empty()) {
    for (const json::value& line : tb->as_array()) {
      if (line.is_string()) text += std::string(line.as_string()) + "\n";
    }
  } else {
    text = Str(e, "name") + ": " + Str(e, "value") + "\n";
  }
  Write(stderr, tty ? text : StripAnsi(text));
}

Result<json::object> CodeBody(const CodeFlags& f) {
  ASB_ASSIGN_OR_RETURN(std::string code, ReadStdin());
  if (code.empty()) return Fail(Error::InvalidArgument("code: no code on stdin"));
  boost::system::error_code ec;
  (void)json::parse(json::serialize(json::value(code)), ec);
  if (ec) return Fail(Error::InvalidArgument("code: stdin is not UTF-8 text"));
  json::object body;
  body["code"] = std::move(code);
  if (!f.context.empty()) body["context_id"] = f.context;
  if (!f.language.empty()) body["language"] = f.language;
  if (f.timeout) body["timeout"] = *f.timeout;
  return body;
}

int RunCode(const CodeFlags& f) {
  auto body = CodeBody(f);
  if (!body) return ReportError(body.error());
  if (f.json || Globals().json) {
    auto v = CallJson("POST", CodePath(f.id), json::serialize(*body));
    if (!v) return ReportError(v.error());
    Pretty(std::cout, *v);
    std::cout << "\n";
    return v->is_object() ? ExitCodeOfEnd(v->as_object()) : kExitRuntimeError;
  }
  auto client = MakeClient();
  if (!client) return ReportError(client.error());
  std::string pending;
  std::optional<json::object> end;
  std::optional<Error> failure;
  int next_image = 1;
  auto on_data = [&](std::string_view data) {
    pending.append(data);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      json::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const json::object& o = v.as_object();
      std::string type = Str(o, "type");
      if (type == "stdout" || type == "stderr") {
        Write(type == "stdout" ? stdout : stderr, Str(o, "data"));
      } else if (type == "result") {
        const json::value* d = o.if_contains("data");
        if (!d || !d->is_object()) continue;
        const json::object& data = d->as_object();
        if (const json::value* png = data.if_contains("image/png"); png && png->is_string()) {
          auto name = SaveImage(png->as_string(), &next_image);
          if (name) {
            Write(stderr, *name + "\n");
          } else {
            failure = name.error();
          }
        }
        const json::value* main = o.if_contains("is_main_result");
        const json::value* plain = data.if_contains("text/plain");
        if (main && main->is_bool() && main->as_bool() && plain && plain->is_string()) {
          std::string text(plain->as_string());
          if (text.empty() || text.back() != '\n') text += '\n';
          Write(stdout, text);
        }
      } else if (type == "error" && o.contains("code")) {  // the server's, not the kernel's
        failure =
            Error(ErrorCodeFromName(Str(o, "code")), Str(o, "code") + ": " + Str(o, "message"));
      } else if (type == "error") {
        PrintKernelError(o);
      } else if (type == "end") {
        end = o;
      }
    }
    return true;
  };
  auto r = client->Stream("POST", CodePath(f.id) + "/stream", json::serialize(*body),
                          "application/json", on_data);
  if (!r) return ReportError(r.error());
  if (r->status >= 300) return ReportError(ServerError(*r));
  if (failure) return ReportError(*failure);
  if (!end) return ReportError(Error::Backend("the code stream ended without an end event"));
  if (Str(*end, "status") == "dead") {
    Write(stderr, "agent-sandbox: the code context's kernel exited (code-context restart)\n");
  }
  if (Str(*end, "truncated") == "true") {
    Write(stderr, "agent-sandbox: output was cut at the server's output limit\n");
  }
  return ExitCodeOfEnd(*end);
}

// ---- code-context ---------------------------------------------------------------------------

int CreateContext(const std::string& id, const std::string& language, const std::string& cwd,
                  bool as_json) {
  json::object body;
  if (!language.empty()) body["language"] = language;
  if (!cwd.empty()) body["cwd"] = cwd;
  auto v = CallJson("POST", ContextsPath(id), json::serialize(body));
  if (!v) return ReportError(v.error());
  if (as_json || Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
  } else {
    std::cout << Str(v->as_object(), "id") << "\n";
  }
  return 0;
}

int ListContexts(const std::string& id, bool as_json) {
  auto v = CallJson("GET", ContextsPath(id));
  if (!v) return ReportError(v.error());
  if (as_json || Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
    return 0;
  }
  std::printf("%-22s %-11s %-8s %-8s %s\n", "CONTEXT", "LANGUAGE", "STATE", "DEFAULT", "CWD");
  const json::value* cs = v->as_object().if_contains("contexts");
  if (cs && cs->is_array()) {
    for (const json::value& c : cs->as_array()) {
      if (!c.is_object()) continue;
      const json::object& o = c.as_object();
      std::printf("%-22s %-11s %-8s %-8s %s\n", Str(o, "id").c_str(), Str(o, "language").c_str(),
                  Str(o, "state").c_str(), Str(o, "default") == "true" ? "yes" : "",
                  Str(o, "cwd").c_str());
    }
  }
  return 0;
}

int RemoveContexts(const std::string& id, const std::vector<std::string>& cids) {
  int rc = 0;
  for (const std::string& cid : cids) {
    auto r = Call("DELETE", ContextsPath(id) + "/" + api::PercentEncode(cid));
    if (!r) {
      rc = ReportError(r.error());
    } else {
      std::cout << cid << "\n";
    }
  }
  return rc;
}

int RestartContext(const std::string& id, const std::string& cid) {
  auto v = CallJson("POST", ContextsPath(id) + "/" + api::PercentEncode(cid) + "/restart", "{}");
  if (!v) return ReportError(v.error());
  std::cout << Str(v->as_object(), "id") << "\n";
  return 0;
}

}  // namespace

void RegisterCodeCommands(CLI::App& app) {
  const std::string env_note = " (server: $AGENT_SANDBOX_URL, default http://127.0.0.1:8080)";
  {
    auto f = std::make_shared<CodeFlags>();
    CLI::App* sub = app.add_subcommand(
        "code",
        "Run code from stdin in a stateful code context (python, javascript, bash); exits 0, "
        "1 on an error, 124 on --timeout" +
            env_note);
    sub->add_option("-l,--language", f->language,
                    "python (default), javascript or bash: its default context");
    sub->add_option("-c,--context", f->context, "A context id (code-context create)");
    sub->add_option("--timeout", f->timeout, "Seconds before the code is interrupted");
    sub->add_flag("--json", f->json, "Print the execution's JSON (results, images as base64)");
    sub->add_option("id", f->id, "Sandbox id")->required();
    SetAction(sub, [f] { return RunCode(*f); });
  }
  CLI::App* ctx = app.add_subcommand("code-context", "Manage code contexts" + env_note);
  ctx->require_subcommand(1);
  {
    auto id = std::make_shared<std::string>();
    auto language = std::make_shared<std::string>();
    auto cwd = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    CLI::App* sub = ctx->add_subcommand("create", "Start a code context and print its id");
    sub->add_option("-l,--language", *language, "python (default), javascript or bash");
    sub->add_option("--cwd", *cwd, "Working directory (default /workspace)");
    sub->add_flag("--json", *as_json, "Print the context's JSON");
    sub->add_option("id", *id, "Sandbox id")->required();
    SetAction(sub, [=] { return CreateContext(*id, *language, *cwd, *as_json); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    CLI::App* sub = ctx->add_subcommand("ls", "List a sandbox's code contexts");
    sub->alias("list");
    sub->add_flag("--json", *as_json, "Print JSON");
    sub->add_option("id", *id, "Sandbox id")->required();
    SetAction(sub, [=] { return ListContexts(*id, *as_json); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto cids = std::make_shared<std::vector<std::string>>();
    CLI::App* sub = ctx->add_subcommand("rm", "Delete code contexts (their state is lost)");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("contexts", *cids, "Context ids")->required();
    SetAction(sub, [=] { return RemoveContexts(*id, *cids); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto cid = std::make_shared<std::string>();
    CLI::App* sub = ctx->add_subcommand("restart", "Give a context a fresh kernel (state lost)");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("context", *cid, "Context id")->required();
    SetAction(sub, [=] { return RestartContext(*id, *cid); });
  }
}

}  // namespace asb::cli
