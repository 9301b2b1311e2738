// Client verbs against a running `agent-sandbox serve` (ADR 0007), thin wrappers over the
// REST API with api/http_client.h:
//   create [--template T] [--cpus X] [--memory-mb N] [--pids-limit N] [--workspace-mb N]
//          [--timeout S] [--env K=V]...        prints the new sandbox id
//   ls [--json]                                 one line per sandbox
//   inspect ID                                  the sandbox's JSON
//   exec [--env K=V] [--workdir D] [--timeout S] [--user U] [-i] ID -- CMD...
//                                               streams output; passes the exit code through;
//                                               stdin forwarded with -i or from a pipe/file
//   exec -it ID -- CMD                          an interactive terminal (exec_tty.h)
//   rm ID...                                    destroys sandboxes
//   timeout ID SECONDS                          sets a new TTL from now
//   pause [--keep-memory=false] ID...           pauses sandboxes (ADR 0024): prints each id
//   resume [--timeout S] [--keep-memory=false] ID...  resumes them: each id and new expires_at
//   exec -d [--tag T] [--stdin] [--tty] ID -- CMD   starts a background process, prints its pid
//   ps [--json] ID                              the sandbox's background processes
//   attach [--replay BYTES] ID PID              follows a process's output; exits with its code
//   kill [-s SIGNAL] ID PID                     signals its process group; without -s kills its
//                                               whole tree
// Server errors are printed as "agent-sandbox: <code>: <message>" and exit 125 (command.h).
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/http_client.h"
#include "api/url.h"
#include "cli/client_support.h"
#include "cli/command.h"
#include "cli/exec_tty.h"
#include "cli/run_support.h"
#include "cli/server_commands.h"

namespace asb::cli {
namespace {

namespace json = boost::json;

int Fails(const Error& e) { return ReportError(e); }

std::string DecodeBase64(std::string_view in) {
  static const std::string kTable =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    size_t v = kTable.find(c);
    if (v == std::string::npos) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

// ---- create ----------------------------------------------------------------------------------

struct CreateFlags {
  std::string template_name;
  std::string backend;
  std::optional<double> cpus;
  std::optional<int64_t> memory_mb, pids_limit, workspace_mb, timeout, idle_timeout;
  std::vector<std::string> env;
  bool network = false;
  bool auto_pause = false;
  bool auto_pause_keep_memory = true;
  bool auto_resume = false;
  bool json = false;
  std::string idempotency_key;
};

int Create(const CreateFlags& f) {
  for (char c : f.idempotency_key) {
    // The server's rule (1..255 printable ASCII) decides the length; a control byte would
    // break the request head itself, so it stops here.
    if (c < 0x20 || c > 0x7e) {
      return Fails(Error::InvalidArgument("--idempotency-key: printable ASCII only"));
    }
  }
  json::object body;
  if (!f.template_name.empty()) body["template"] = f.template_name;
  if (!f.backend.empty()) body["backend"] = f.backend;
  if (f.cpus) body["cpus"] = *f.cpus;
  if (f.memory_mb) body["memory_mb"] = *f.memory_mb;
  if (f.pids_limit) body["pids_limit"] = *f.pids_limit;
  if (f.workspace_mb) body["workspace_mb"] = *f.workspace_mb;
  if (f.timeout) body["timeout_seconds"] = *f.timeout;
  if (f.idle_timeout) body["idle_timeout_seconds"] = *f.idle_timeout;
  if (f.auto_pause) body["auto_pause"] = true;
  if (!f.auto_pause_keep_memory) body["auto_pause_keep_memory"] = false;
  if (f.auto_resume) body["auto_resume"] = true;
  if (f.network) body["network"] = true;
  if (!f.env.empty()) {
    auto env = ParseEnvAssignments(f.env);
    if (!env) return Fails(env.error());
    json::object e;
    for (const auto& [k, v] : *env) e[k] = v;
    body["env"] = std::move(e);
  }
  auto client = MakeClient();
  if (!client) return Fails(client.error());
  // A retry with the same key returns the sandbox the first attempt made.
  if (!f.idempotency_key.empty()) client->SetHeader("Idempotency-Key", f.idempotency_key);
  auto r = client->Request("POST", "/v1/sandboxes", json::serialize(body));
  if (!r) return Fails(r.error());
  if (r->status >= 300) return Fails(ServerError(*r));
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  if (f.json || Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
  } else {
    std::cout << Str(v->as_object(), "id") << "\n";
  }
  return 0;
}

// ---- ls / inspect / rm / timeout -------------------------------------------------------------

int List(bool as_json, bool quiet) {
  auto r = Call("GET", "/v1/sandboxes");
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  if (quiet) {  // ids only, one a line (docker ps -q): for `agent-sandbox rm $(agent-sandbox ls
                // -q)`
    const json::value* list = v->as_object().if_contains("sandboxes");
    if (list != nullptr && list->is_array()) {
      for (const auto& s : list->as_array()) std::cout << Str(s.as_object(), "id") << "\n";
    }
    return 0;
  }
  if (as_json || Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
    return 0;
  }
  std::printf("%-20s %-9s %-10s %-7s %-5s %-7s %-24s %s\n", "ID", "STATUS", "TEMPLATE", "BACKEND",
              "CPUS", "MEM_MB", "CREATED", "EXPIRES");
  const json::value* list = v->as_object().if_contains("sandboxes");
  if (list == nullptr || !list->is_array()) return 0;
  for (const auto& s : list->as_array()) {
    const auto& o = s.as_object();
    std::printf("%-20s %-9s %-10s %-7s %-5s %-7s %-24s %s\n", Str(o, "id").c_str(),
                Str(o, "status").c_str(), Str(o, "template").c_str(), Str(o, "backend").c_str(),
                Str(o, "cpus").c_str(), Str(o, "memory_mb").c_str(), Str(o, "created_at").c_str(),
                Str(o, "expires_at").c_str());
  }
  return 0;
}

int Inspect(const std::string& id) {
  auto r = Call("GET", "/v1/sandboxes/" + api::PercentEncode(id));
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  Pretty(std::cout, *v);
  std::cout << "\n";
  return 0;
}

// rm: every id is tried. Exit 0 when all are gone, 1 when some named no sandbox (docker rm's
// "No such container", exit 1), 125 when another error happened.
int Remove(const std::vector<std::string>& ids) {
  int rc = 0;
  for (const std::string& id : ids) {
    auto r = Call("DELETE", "/v1/sandboxes/" + api::PercentEncode(id));
    if (!r && r.error().code() == ErrorCode::kNotFound) {
      std::cerr << "agent-sandbox: No such sandbox: " << id << "\n";
      if (rc == 0) rc = 1;
    } else if (!r) {
      rc = ReportError(r.error().WithContext(id));
    } else {
      std::cout << id << "\n";
    }
  }
  return rc;
}

int SetTimeout(const std::string& id, int64_t seconds) {
  json::object body;
  body["timeout_seconds"] = seconds;
  auto r =
      Call("POST", "/v1/sandboxes/" + api::PercentEncode(id) + "/timeout", json::serialize(body));
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  std::cout << Str(v->as_object(), "expires_at") << "\n";
  return 0;
}

// pause / resume: one call per id, going on past a failure (as rm does); exit 125 if any failed.
// --json prints each sandbox's JSON as the server answered it, instead of the id line.
// keep_memory false: a pause that keeps only the files, a resume by a reboot.
int PauseOrResume(const std::vector<std::string>& ids, bool pause, std::optional<int64_t> timeout,
                  bool keep_memory, bool as_json) {
  int rc = 0;
  for (const std::string& id : ids) {
    json::object body;
    if (timeout) body["timeout_seconds"] = *timeout;
    if (!keep_memory) body["memory"] = false;
    auto r =
        Call("POST", "/v1/sandboxes/" + api::PercentEncode(id) + (pause ? "/pause" : "/resume"),
             json::serialize(body));
    if (!r) {
      rc = ReportError(r.error().WithContext(id));
      continue;
    }
    auto v = ParseJson(r->body);
    if (!v) return Fails(v.error());
    if (as_json) {
      Pretty(std::cout, *v);
      std::cout << "\n";
    } else if (pause) {
      std::cout << id << "\n";
    } else {
      std::cout << id << " " << Str(v->as_object(), "expires_at") << "\n";
    }
  }
  return rc;
}

// ---- NDJSON output streams (exec --stream, attach) -----------------------------------------

// Follows one of the server's NDJSON output streams, asked for with encoding=base64 so bytes
// survive (POST .../exec/stream, GET .../processes/{pid}/stream): writes each stdout/stderr
// line's bytes to our stdout/stderr as they come, notes "skipped" lines (only process streams
// have them) on stderr, and returns `exit_code_of` applied to the "exit" line. Errors: the
// client's, the server's error answer (ServerError), the stream's "error" line as
// "<code>: <message>", or kBackend when the stream ended without an exit line.
Result<int> FollowOutput(std::string_view method, const std::string& target, std::string body,
                         const std::function<int(const json::object&)>& exit_code_of) {
  ASB_ASSIGN_OR_RETURN(api::HttpClient client, MakeClient());
  std::string pending;
  int code = kExitRuntimeError;
  bool ended = false;
  std::optional<Error> failure;
  auto on_data = [&](std::string_view data) {
    pending.append(data);
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      json::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const auto& o = v.as_object();
      std::string type = Str(o, "type");
      if (type == "stdout" || type == "stderr") {
        std::string raw = DecodeBase64(Str(o, "data"));
        FILE* out = type == "stdout" ? stdout : stderr;
        std::fwrite(raw.data(), 1, raw.size(), out);
        std::fflush(out);
      } else if (type == "skipped") {
        std::fprintf(stderr, "agent-sandbox: [%s bytes of output skipped]\n",
                     Str(o, "bytes").c_str());
      } else if (type == "exit") {
        code = exit_code_of(o);
        ended = true;
      } else if (type == "error") {
        failure =
            Error(ErrorCodeFromName(Str(o, "code")), Str(o, "code") + ": " + Str(o, "message"));
        ended = true;
      }
    }
    return true;
  };
  ASB_ASSIGN_OR_RETURN(api::ClientResponse r,
                       client.Stream(method, target, body, "application/json", on_data));
  if (r.status >= 300) return Fail(ServerError(r));
  if (failure) return Fail(*failure);
  if (!ended) return Fail(Error::Backend("the stream ended without an exit event"));
  return code;
}

// ---- exec ------------------------------------------------------------------------------------

struct ExecFlags {
  std::string id;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::string workdir;
  std::string user;
  std::optional<double> timeout;
  bool detach = false;  // -d: a background process (ADR 0011)
  std::string tag;
  bool stdin_pipe = false;
  bool interactive = false;  // -i
  bool tty = false;
};

int StartDetached(const ExecFlags& f);

// The request body's argv, env (from K=V assignments), workdir and user, in that order: what
// POST .../exec/stream and POST .../processes take alike. Errors: a bad --env assignment.
Result<json::object> CommandBody(const ExecFlags& f) {
  json::object body;
  json::array argv;
  for (const auto& a : f.argv) argv.emplace_back(a);
  body["argv"] = std::move(argv);
  if (!f.env.empty()) {
    ASB_ASSIGN_OR_RETURN(auto env, ParseEnvAssignments(f.env));
    json::object e;
    for (const auto& [k, v] : env) e[k] = v;
    body["env"] = std::move(e);
  }
  if (!f.workdir.empty()) body["workdir"] = f.workdir;
  if (!f.user.empty()) body["user"] = f.user;
  return body;
}

// Whether exec forwards our stdin: with -i, or when it is a pipe or a file (`echo x | exec`);
// a terminal, /dev/null or a socket is left alone without -i.
bool ForwardsStdin(const ExecFlags& f) {
  if (f.interactive) return true;
  struct stat st {};
  return ::fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode));
}

int Exec(const ExecFlags& f) {
  if (f.detach) return StartDetached(f);
  auto command = CommandBody(f);
  if (!command) return Fails(command.error());
  json::object body = std::move(*command);
  if (f.tty) {  // a terminal over the process WebSocket (cli/exec_tty.h)
    if (f.timeout) return Fails(Error::InvalidArgument("exec -t: --timeout does not apply"));
    TtyExec t;
    t.id = f.id;
    t.start = std::move(body);
    t.interactive = f.interactive;
    auto code = RunTtyExec(t);
    if (!code) return Fails(code.error());
    return *code;
  }
  if (f.timeout) body["timeout"] = *f.timeout;
  if (ForwardsStdin(f)) {
    // The exec routes take stdin whole, as a JSON string: read to EOF first.
    auto in = ReadStdin();
    if (!in) return Fails(in.error());
    if (!in->empty()) {
      boost::system::error_code ec;
      json::value probe = json::parse(json::serialize(json::value(*in)), ec);
      if (ec) return Fails(Error::InvalidArgument("exec: stdin is not UTF-8 text; use -it"));
    }
    body["stdin"] = std::move(*in);
  }
  // Raw bytes survive the trip: ask for base64 and decode locally.
  body["encoding"] = "base64";
  auto code = FollowOutput("POST", "/v1/sandboxes/" + api::PercentEncode(f.id) + "/exec/stream",
                           json::serialize(body), [](const json::object& o) {
                             protocol::ExecResult res;
                             res.exit_code =
                                 static_cast<int>(o.at("exit_code").to_number<int64_t>());
                             res.signal = static_cast<int>(o.at("signal").to_number<int64_t>());
                             res.timed_out = o.at("timed_out").as_bool();
                             return ExitCodeFor(res);
                           });
  if (!code) return Fails(code.error());
  return *code;
}

// ---- background processes (ADR 0011) --------------------------------------------------------

std::string ProcessesPath(const std::string& id) {
  return "/v1/sandboxes/" + api::PercentEncode(id) + "/processes";
}

int StartDetached(const ExecFlags& f) {
  if (f.timeout) return Fails(Error::InvalidArgument("exec -d: --timeout does not apply"));
  auto command = CommandBody(f);
  if (!command) return Fails(command.error());
  json::object body = std::move(*command);
  if (!f.tag.empty()) body["tag"] = f.tag;
  if (f.stdin_pipe || f.interactive) body["stdin"] = true;
  if (f.tty) body["pty"] = true;
  auto r = Call("POST", ProcessesPath(f.id), json::serialize(body));
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  std::cout << Str(v->as_object(), "pid") << "\n";
  return 0;
}

int ListProcesses(const std::string& id, bool as_json) {
  auto r = Call("GET", ProcessesPath(id));
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  if (as_json || Globals().json) {
    Pretty(std::cout, *v);
    std::cout << "\n";
    return 0;
  }
  std::printf("%-8s %-8s %-5s %-24s %-12s %s\n", "PID", "STATE", "EXIT", "STARTED", "TAG",
              "COMMAND");
  for (const auto& p : v->as_object().at("processes").as_array()) {
    const auto& o = p.as_object();
    std::string cmd = Str(o, "command");
    if (cmd == "null") {
      cmd.clear();
      for (const auto& a : o.at("argv").as_array()) {
        cmd += (cmd.empty() ? "" : " ") + std::string(a.as_string());
      }
    }
    std::string code = Str(o, "exit_code");
    std::printf("%-8s %-8s %-5s %-24s %-12s %s\n", Str(o, "pid").c_str(), Str(o, "state").c_str(),
                code == "null" ? "-" : code.c_str(), Str(o, "started_at").c_str(),
                Str(o, "tag").c_str(), cmd.c_str());
  }
  return 0;
}

// Follows the NDJSON stream (base64, so bytes survive); exits like exec with the process's
// code once it ends (128+signal when killed).
int Attach(const std::string& id, const std::string& pid, int64_t replay) {
  std::string target = ProcessesPath(id) + "/" + api::PercentEncode(pid) +
                       "/stream?encoding=base64&replay_bytes=" + std::to_string(replay);
  auto code = FollowOutput("GET", target, "", [](const json::object& o) {
    return static_cast<int>(o.at("exit_code").to_number<int64_t>());
  });
  if (!code) return Fails(code.error());
  return *code;
}

int KillProcess(const std::string& id, const std::string& pid, const std::string& signal) {
  std::string target = ProcessesPath(id) + "/" + api::PercentEncode(pid);
  if (!signal.empty()) {
    json::object body;
    body["signal"] = signal;
    auto r = Call("POST", target + "/signal", json::serialize(body));
    if (!r) return Fails(r.error());
    return 0;
  }
  auto r = Call("DELETE", target);
  if (!r) return Fails(r.error());
  auto v = ParseJson(r->body);
  if (!v) return Fails(v.error());
  std::cout << pid << " " << Str(v->as_object(), "state") << " " << Str(v->as_object(), "exit_code")
            << "\n";
  return 0;
}

}  // namespace

void RegisterClientCommands(CLI::App& app) {
  const std::string env_note = " (server: $AGENT_SANDBOX_URL, default http://127.0.0.1:8080)";
  {
    auto f = std::make_shared<CreateFlags>();
    CLI::App* sub = app.add_subcommand("create", "Create a sandbox and print its id" + env_note);
    sub->add_option("--template", f->template_name, "Template name (default: the server's)");
    sub->add_option("--backend", f->backend,
                    "Isolation backend: ns or microvm (default: the server's; GET /v1/backends "
                    "lists what it runs)");
    sub->add_option("--cpus", f->cpus, "CPU cores, e.g. 0.5");
    sub->add_option("--memory-mb", f->memory_mb, "Memory limit, MiB");
    sub->add_option("--pids-limit", f->pids_limit, "Process limit");
    sub->add_option("--workspace-mb", f->workspace_mb, "/workspace quota, MiB");
    sub->add_option("--timeout", f->timeout, "TTL in seconds");
    sub->add_option("--idempotency-key", f->idempotency_key,
                    "Retry-safe create: the same key returns the same sandbox for 24 h");
    sub->add_option("--idle-timeout", f->idle_timeout,
                    "Destroy it after this many seconds without activity");
    sub->add_flag("--network", f->network, "Outbound network through the server (ADR 0013)");
    sub->add_flag("--auto-pause", f->auto_pause,
                  "Pause it instead of destroying it when its TTL or idle timeout passes");
    sub->add_flag("--auto-resume", f->auto_resume,
                  "While paused, its commands, files and ports resume it instead of failing");
    sub->add_option("--auto-pause-keep-memory", f->auto_pause_keep_memory,
                    "false: the auto-pause keeps only the files (default true)");
    // One value per -e (docker's habit): `create -e K=V --json` and `-e K=V -e J=W` both work.
    sub->add_option("-e,--env", f->env, "K=V for every command (repeatable)")
        ->allow_extra_args(false);
    sub->add_flag("--json", f->json, "Print the sandbox as JSON");
    SetAction(sub, [f] { return Create(*f); });
  }
  {
    auto as_json = std::make_shared<bool>(false);
    auto quiet = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("ls", "List sandboxes" + env_note);
    sub->add_flag("--json", *as_json, "Print JSON");
    sub->add_flag("-q,--quiet", *quiet, "Print only the ids, one a line");
    SetAction(sub, [as_json, quiet] { return List(*as_json, *quiet); });
  }
  {
    auto id = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand("inspect", "Show a sandbox as JSON" + env_note);
    sub->add_option("id", *id, "Sandbox id")->required();
    SetAction(sub, [id] { return Inspect(*id); });
  }
  {
    auto f = std::make_shared<ExecFlags>();
    CLI::App* sub = app.add_subcommand(
        "exec", "Run a command in a sandbox, streaming its output; exits with its code" + env_note);
    // One value per -e: `exec -e K=V ID -- cmd` must not take ID as a second value.
    sub->add_option("-e,--env", f->env, "K=V (repeatable)")->allow_extra_args(false);
    sub->add_option("-w,--workdir", f->workdir, "Working directory (default: its template's)");
    sub->add_option("-u,--user", f->user, "sandbox (default) or root");
    sub->add_option("--timeout", f->timeout, "Command timeout, seconds");
    sub->add_flag("-d,--detach", f->detach,
                  "Start it as a background process and print its pid (see ps, attach, kill)");
    sub->add_option("--tag", f->tag, "With -d: a label shown by ps");
    sub->add_flag("--stdin", f->stdin_pipe, "With -d: give it a stdin pipe");
    sub->add_flag("-i,--interactive", f->interactive,
                  "Forward stdin (default when stdin is a pipe or a file); with -d: --stdin");
    sub->add_flag("-t,--tty", f->tty,
                  "Run it on a pseudo-terminal; with -i our terminal goes raw and talks to it "
                  "(exec -it ID -- bash); with -d: a background PTY process");
    sub->add_option("id", f->id, "Sandbox id")->required();
    sub->add_option("cmd", f->argv,
                    "Command and arguments: everything after the id (-- before it is optional)")
        ->required();
    sub->positionals_at_end(false);
    SetAction(sub, [f] { return Exec(*f); });
  }
  {
    auto ids = std::make_shared<std::vector<std::string>>();
    CLI::App* sub = app.add_subcommand("rm", "Destroy sandboxes" + env_note);
    sub->add_option("ids", *ids, "Sandbox ids")->required();
    SetAction(sub, [ids] { return Remove(*ids); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto secs = std::make_shared<int64_t>(0);
    CLI::App* sub = app.add_subcommand("timeout", "Set a sandbox's TTL from now" + env_note);
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("seconds", *secs, "Seconds from now")->required();
    SetAction(sub, [id, secs] { return SetTimeout(*id, *secs); });
  }
  {
    auto ids = std::make_shared<std::vector<std::string>>();
    CLI::App* sub = app.add_subcommand(
        "pause", "Pause sandboxes: their processes stop where they are, memory kept" + env_note);
    auto as_json = std::make_shared<bool>(false);
    auto keep_memory = std::make_shared<bool>(true);
    sub->add_option("--keep-memory", *keep_memory,
                    "false: keep only the files; every process ends, resume starts it afresh");
    sub->add_flag("--json", *as_json, "Print each sandbox as JSON");
    sub->add_option("ids", *ids, "Sandbox ids")->required();
    SetAction(sub, [ids, keep_memory, as_json] {
      return PauseOrResume(*ids, true, std::nullopt, *keep_memory, *as_json);
    });
  }
  {
    auto ids = std::make_shared<std::vector<std::string>>();
    auto secs = std::make_shared<std::optional<int64_t>>();
    CLI::App* sub = app.add_subcommand(
        "resume", "Resume paused sandboxes; their TTL starts again from now" + env_note);
    sub->add_option("--timeout", *secs, "TTL in seconds from now (default: the last TTL)");
    auto as_json = std::make_shared<bool>(false);
    auto keep_memory = std::make_shared<bool>(true);
    sub->add_option("--keep-memory", *keep_memory,
                    "false: resume by a reboot; every process that ran before ends");
    sub->add_flag("--json", *as_json, "Print each sandbox as JSON");
    sub->add_option("ids", *ids, "Sandbox ids")->required();
    SetAction(sub, [ids, secs, keep_memory, as_json] {
      return PauseOrResume(*ids, false, *secs, *keep_memory, *as_json);
    });
  }
  {
    auto id = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    CLI::App* sub = app.add_subcommand("ps", "List a sandbox's background processes" + env_note);
    sub->add_flag("--json", *as_json, "Print JSON");
    sub->add_option("id", *id, "Sandbox id")->required();
    SetAction(sub, [id, as_json] { return ListProcesses(*id, *as_json); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto pid = std::make_shared<std::string>();
    auto replay = std::make_shared<int64_t>(0);
    CLI::App* sub = app.add_subcommand(
        "attach", "Follow a background process's output; exits with its code" + env_note);
    sub->add_option("--replay", *replay, "First replay this many bytes of recent output")
        ->check(CLI::Range(int64_t{0}, int64_t{4194304}));
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("pid", *pid, "Process id")->required();
    SetAction(sub, [id, pid, replay] { return Attach(*id, *pid, *replay); });
  }
  {
    // docker logs -f: attach with the whole replay ring (4 MiB) first.
    auto id = std::make_shared<std::string>();
    auto pid = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand(
        "logs",
        "A background process's output so far, then as it comes until it exits (attach "
        "--replay 4194304); exits with its code" +
            env_note);
    sub->add_flag("-f,--follow")->description("Accepted for docker's habit: logs always follows");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("pid", *pid, "Process id")->required();
    SetAction(sub, [id, pid] { return Attach(*id, *pid, 4194304); });
  }
  {
    auto id = std::make_shared<std::string>();
    auto pid = std::make_shared<std::string>();
    auto signal = std::make_shared<std::string>();
    CLI::App* sub = app.add_subcommand(
        "kill", "Kill a background process and its whole tree, or send it -s SIGNAL" + env_note);
    sub->add_option("-s,--signal", *signal, "Signal for its process group, e.g. SIGTERM");
    sub->add_option("id", *id, "Sandbox id")->required();
    sub->add_option("pid", *pid, "Process id")->required();
    SetAction(sub, [id, pid, signal] { return KillProcess(*id, *pid, *signal); });
  }
}

}  // namespace asb::cli
