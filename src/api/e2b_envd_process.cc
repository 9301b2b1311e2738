// process.Process of envd (spec/envd/process/process.proto) on core::ProcessService: every
// command an E2B SDK starts, foreground or background, is one of our background processes, so
// `commands.list`, `kill`, `sendStdin`, `connect` and our own /v1 process routes see the same
// table. Start and Connect are server streams of ProcessEvent (start, data, end, keepalive);
// closing one detaches and leaves the process running, as envd does; its Connect-Timeout-Ms
// passing kills the process (the SDK's `timeoutMs`, "timeouts that kill").
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstring>

#include "api/e2b_connect.h"
#include "api/e2b_envd.h"
#include "api/errors.h"  // ForClient: what the client would be told
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Output handed out per Poll(), so a fast producer cannot make one write unbounded.
constexpr size_t kMaxPollBytes = 1 << 20;
// The replay ring of an E2B process and how much of it Start replays: output written between
// the start and the attachment is never lost.
constexpr int64_t kStartRingBytes = 1 << 20;
// How early a client may give up before its Connect-Timeout-Ms and still have the command killed
// (its clock and ours start a request's round trip apart), milliseconds.
constexpr int64_t kDeadlineSlackMs = 1000;

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A uint32 field, which protobuf's JSON mapping may also write as a string.
Result<std::optional<int64_t>> UintField(const json::object& o, std::string_view name,
                                         int64_t max) {
  const json::value* v = FieldOf(o, name);
  if (v == nullptr) return std::optional<int64_t>();
  int64_t n = -1;
  if (v->is_int64()) {
    n = v->as_int64();
  } else if (v->is_uint64()) {
    n = v->as_uint64() > static_cast<uint64_t>(max) ? -1 : static_cast<int64_t>(v->as_uint64());
  } else if (v->is_string() && !v->as_string().empty() && v->as_string().size() < 12) {
    n = 0;
    for (char c : v->as_string()) {
      if (c < '0' || c > '9')
        return Fail(Error::InvalidArgument(std::string(name) + ": must be an integer"));
      n = n * 10 + (c - '0');
    }
  } else {
    return Fail(Error::InvalidArgument(std::string(name) + ": must be an integer"));
  }
  if (n < 0 || n > max) {
    return Fail(
        Error::InvalidArgument(std::string(name) + ": must be in 0.." + std::to_string(max)));
  }
  return std::optional<int64_t>(n);
}

// A bytes field (base64 in protobuf's JSON mapping, standard or URL-safe alphabet).
Result<std::optional<std::string>> BytesField(const json::object& o, std::string_view name) {
  ASB_ASSIGN_OR_RETURN(auto text, StringOf(o, name));
  if (!text) return std::optional<std::string>();
  std::string s = *text;
  for (char& c : s) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  ASB_ASSIGN_OR_RETURN(std::string raw, Base64Decode(s, name));  // padding optional
  return std::optional<std::string>(std::move(raw));
}

// The pid a ProcessSelector names: {"pid": N} or {"tag": "..."} (a tag: the newest running
// process with it). Errors: kInvalidArgument (neither), kNotFound.
Result<int> SelectedPid(const EnvdCall& c, const json::object& msg) {
  ASB_ASSIGN_OR_RETURN(const json::object* sel, ObjectOf(msg, "process"));
  if (sel == nullptr)
    return Fail(Error::InvalidArgument("process: a selector {pid} or {tag} is required"));
  ASB_ASSIGN_OR_RETURN(auto pid, UintField(*sel, "pid", 0x7fffffff));
  if (pid) return static_cast<int>(*pid);
  ASB_ASSIGN_OR_RETURN(auto tag, StringOf(*sel, "tag"));
  if (!tag) return Fail(Error::InvalidArgument("process: a selector {pid} or {tag} is required"));
  ASB_ASSIGN_OR_RETURN(auto list, c.manager->processes().ListProcesses(c.owner, c.sandbox_id));
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    if (it->tag == *tag && it->state == "running") return it->pid;
  }
  return Fail(Error::NotFound("process with tag " + *tag + " not found"));
}

std::string Event(json::object event) {
  json::object o;
  o["event"] = std::move(event);
  return ConnectEnvelope(0, json::serialize(o));
}

std::string StartEvent(int pid) {
  json::object start;
  start["pid"] = pid;
  json::object e;
  e["start"] = std::move(start);
  return Event(std::move(e));
}

// envd's EndEvent, as Go's os.ProcessState reports it: exitCode -1 and "signal: killed" for a
// process a signal ended, else the exit status. Like envd, `error` carries what Go's Wait()
// returned for a process that did not exit 0 ("exit status 3", "signal: killed"): the SDKs'
// CommandExitError takes its message from it.
std::string EndEvent(const core::ProcessInfo& p) {
  json::object end;
  if (p.signal != 0) {
    std::string name = ::strsignal(p.signal) != nullptr ? ::strsignal(p.signal) : "unknown";
    if (!name.empty())
      name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    end["exitCode"] = -1;
    end["exited"] = false;
    end["status"] = "signal: " + name;
    end["error"] = end["status"];
  } else {
    end["exitCode"] = p.exit_code;
    end["exited"] = true;
    end["status"] = "exit status " + std::to_string(p.exit_code);
    if (p.exit_code != 0) end["error"] = end["status"];
  }
  json::object e;
  e["end"] = std::move(end);
  return Event(std::move(e));
}

// The stream of one process's events (Start and Connect): start, data, end, keepalive.
class ProcessEventBody final : public StreamBody {
 public:
  ProcessEventBody(core::ProcessAttach attach, int pid, bool pty, int64_t keepalive_ms,
                   int64_t timeout_ms)
      : attach_(std::move(attach)),
        pid_(pid),
        pty_(pty),
        keepalive_ms_(keepalive_ms > 0 ? keepalive_ms : 50'000),
        deadline_ms_(timeout_ms > 0 ? SteadyMs() + timeout_ms : 0),
        last_emit_ms_(SteadyMs()) {}

  ~ProcessEventBody() override {
    if (!done_) (void)attach_.events->Cancel();
    attach_.events->SetNotify(nullptr);
  }

  Chunk Poll() override {
    Chunk out;
    if (abort_) {  // the sandbox went away (Handle): no end-of-stream, as a dropped envd
      out.abort = true;
      return out;
    }
    if (done_) {
      out.done = true;
      return out;
    }
    if (!started_) {
      out.data = StartEvent(pid_);
      started_ = true;
    }
    while (out.data.size() < kMaxPollBytes && !done_ && !abort_) {
      std::optional<core::StreamEvent> ev = attach_.events->TryNext();
      if (!ev) break;
      Handle(*ev, &out.data);
    }
    if (abort_) {  // what was gathered before it goes out first; the abort on the next poll
      out.abort = out.data.empty();
      return out;
    }
    const int64_t now = SteadyMs();
    if (!done_ && deadline_ms_ != 0 && now >= deadline_ms_) {
      // The SDK's timeoutMs passed: the command is killed, as E2B's are.
      (void)attach_.events->Signal(SIGKILL);
      out.data +=
          ConnectEndStream("deadline_exceeded", "the command's timeout passed; it was killed");
      done_ = true;
    }
    if (!out.data.empty()) {
      last_emit_ms_ = now;
    } else if (now - last_emit_ms_ >= keepalive_ms_) {
      json::object e;
      e["keepalive"] = json::object();
      out.data = Event(std::move(e));
      last_emit_ms_ = now;
    }
    out.done = done_;
    return out;
  }

  void SetNotify(std::function<void()> notify) override {
    attach_.events->SetNotify(std::move(notify));
  }

  // The client went away: detach; the process runs on (envd's semantics for a closed stream).
  // A client whose timeoutMs passed goes away at its deadline, maybe just before our Poll()
  // saw it: within kDeadlineSlackMs of the deadline the command is killed all the same.
  void Cancel() override {
    if (done_) return;
    if (deadline_ms_ != 0 && SteadyMs() >= deadline_ms_ - kDeadlineSlackMs) {
      (void)attach_.events->Signal(SIGKILL);
    }
    (void)attach_.events->Cancel();
  }

 private:
  void Handle(const core::StreamEvent& ev, std::string* out) {
    using Kind = core::StreamEvent::Kind;
    switch (ev.kind) {
      case Kind::kOutput: {
        if (ev.data.empty()) break;
        json::object data;
        const char* name = pty_                                       ? "pty"
                           : ev.stream == core::OutputStream::kStderr ? "stderr"
                                                                      : "stdout";
        data[name] = Base64Encode(ev.data);
        json::object e;
        e["data"] = std::move(data);
        *out += Event(std::move(e));
        break;
      }
      case Kind::kEnd:
      case Kind::kInfo:
        break;
      case Kind::kDone:
        if (ev.process) {
          *out += EndEvent(*ev.process);
          *out += ConnectEndStream(nullptr);
        } else {
          *out += ConnectEndStream("internal", "the process ended without its state");
        }
        done_ = true;
        break;
      case Kind::kError: {
        Error e = ev.error ? *ev.error : Error::Backend("the process's stream failed");
        // The sandbox's connection ended (it was killed, or reached its TTL) or the host
        // failed: in E2B the VM's envd is gone and the connection drops mid-stream, which the
        // SDKs tell apart by probing /health (502 for a sandbox that no longer runs) and
        // report as "killed or reached its end of life" (a running one: the drop itself). An
        // end-of-stream error here would read as the sandbox's timeout instead.
        if (ConnectCodeOf(ForClient(e).code) == "unavailable") {
          abort_ = true;
        } else {
          *out += ConnectEndStream(&e);
          done_ = true;
        }
        break;
      }
    }
  }

  core::ProcessAttach attach_;
  int pid_;
  bool pty_;
  int64_t keepalive_ms_;
  int64_t deadline_ms_;
  int64_t last_emit_ms_;
  bool started_ = false;
  bool done_ = false;
  bool abort_ = false;  // the sandbox went away: end the response as a dropped envd would
};

Result<HttpResponse> Start(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, true));
  ASB_ASSIGN_OR_RETURN(const json::object* proc, ObjectOf(msg, "process"));
  if (proc == nullptr) return Fail(Error::InvalidArgument("process: required"));
  core::ProcessOptions o;
  ASB_ASSIGN_OR_RETURN(auto cmd, StringOf(*proc, "cmd"));
  if (!cmd || cmd->empty()) return Fail(Error::InvalidArgument("process.cmd: required"));
  o.argv.push_back(*cmd);
  if (const json::value* args = FieldOf(*proc, "args")) {
    if (!args->is_array()) return Fail(Error::InvalidArgument("process.args: must be an array"));
    for (const json::value& a : args->as_array()) {
      if (!a.is_string()) return Fail(Error::InvalidArgument("process.args: must hold strings"));
      o.argv.emplace_back(a.as_string());
    }
  }
  ASB_ASSIGN_OR_RETURN(o.env, StringMapOf(*proc, "envs", "process.envs"));
  ASB_ASSIGN_OR_RETURN(auto cwd, StringOf(*proc, "cwd"));
  E2bCommandPlace(c, cwd, &o.workdir, &o.env);
  ASB_ASSIGN_OR_RETURN(auto tag, StringOf(msg, "tag"));
  if (tag) o.tag = *tag;
  if (const json::value* in = FieldOf(msg, "stdin")) {
    if (!in->is_bool()) return Fail(Error::InvalidArgument("stdin: must be a boolean"));
    o.stdin = in->as_bool();
  }
  ASB_ASSIGN_OR_RETURN(const json::object* pty, ObjectOf(msg, "pty"));
  if (pty != nullptr) {
    o.pty = true;
    ASB_ASSIGN_OR_RETURN(const json::object* size, ObjectOf(*pty, "size"));
    if (size != nullptr) {
      ASB_ASSIGN_OR_RETURN(auto cols, UintField(*size, "cols", core::kMaxTerminalSize));
      ASB_ASSIGN_OR_RETURN(auto rows, UintField(*size, "rows", core::kMaxTerminalSize));
      if (cols && *cols > 0) o.cols = *cols;
      if (rows && *rows > 0) o.rows = *rows;
    }
  }
  o.user = c.user;
  o.ring_bytes = kStartRingBytes;
  auto info = c.manager->processes().StartProcess(c.owner, c.sandbox_id, o);
  if (!info) return ConnectStreamError(info.error(), c.sandbox_id);
  auto attach = c.manager->processes().AttachProcess(c.owner, c.sandbox_id, info->pid,
                                                     kStartRingBytes, false);
  if (!attach) return ConnectStreamError(attach.error(), c.sandbox_id);
  return ConnectStreamResponse(
      std::make_shared<ProcessEventBody>(std::move(*attach), info->pid, o.pty, c.keepalive_ms,
                                         c.deadline_ms),
      c.sandbox_id);
}

Result<HttpResponse> Connect(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, true));
  auto pid = SelectedPid(c, msg);
  if (!pid) return ConnectStreamError(pid.error(), c.sandbox_id);
  bool pty = false;
  if (auto list = c.manager->processes().ListProcesses(c.owner, c.sandbox_id)) {
    for (const auto& p : *list) {
      if (p.pid == *pid) pty = p.pty;
    }
  }
  auto attach = c.manager->processes().AttachProcess(c.owner, c.sandbox_id, *pid, 0, false);
  if (!attach) return ConnectStreamError(attach.error(), c.sandbox_id);
  return ConnectStreamResponse(std::make_shared<ProcessEventBody>(std::move(*attach), *pid, pty,
                                                                  c.keepalive_ms, c.deadline_ms),
                               c.sandbox_id);
}

HttpResponse Unary(const std::string& sandbox_id, const json::object& answer) {
  HttpResponse r = JsonResponse(200, json::serialize(answer));
  r.sandbox_id = sandbox_id;
  return r;
}

Result<HttpResponse> List(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  (void)msg;
  ASB_ASSIGN_OR_RETURN(auto list, c.manager->processes().ListProcesses(c.owner, c.sandbox_id));
  json::array out;
  for (const core::ProcessInfo& p : list) {
    if (p.state != "running") continue;  // envd lists the processes that run
    json::object config;
    json::array args;
    std::string cmd;
    if (!p.argv.empty()) {
      cmd = p.argv[0];
      for (size_t i = 1; i < p.argv.size(); ++i) args.emplace_back(p.argv[i]);
    } else if (p.command) {
      cmd = "/bin/sh";
      args.emplace_back("-c");
      args.emplace_back(*p.command);
    }
    config["cmd"] = cmd;
    config["args"] = std::move(args);
    config["envs"] = json::object();
    json::object o;
    o["config"] = std::move(config);
    o["pid"] = p.pid;
    if (!p.tag.empty()) o["tag"] = p.tag;
    out.push_back(std::move(o));
  }
  json::object answer;
  answer["processes"] = std::move(out);
  return Unary(c.sandbox_id, answer);
}

Result<HttpResponse> SendInput(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  ASB_ASSIGN_OR_RETURN(int pid, SelectedPid(c, msg));
  ASB_ASSIGN_OR_RETURN(const json::object* input, ObjectOf(msg, "input"));
  if (input == nullptr) return Fail(Error::InvalidArgument("input: {stdin} or {pty} is required"));
  ASB_ASSIGN_OR_RETURN(auto in, BytesField(*input, "stdin"));
  ASB_ASSIGN_OR_RETURN(auto pty, BytesField(*input, "pty"));
  if (!in && !pty) return Fail(Error::InvalidArgument("input: {stdin} or {pty} is required"));
  const std::string data = in ? *in : *pty;
  // Everything or an error: the stdin queue is bounded (1 MiB), and a partial write would lose
  // the rest silently.
  ASB_ASSIGN_OR_RETURN(uint64_t n,
                       c.manager->processes().WriteProcessStdin(c.owner, c.sandbox_id, pid, data));
  if (n != data.size()) {
    return Fail(Error::LimitExceeded("the process's stdin queue is full; " + std::to_string(n) +
                                     " of " + std::to_string(data.size()) + " bytes were taken"));
  }
  return Unary(c.sandbox_id, json::object());
}

Result<HttpResponse> SendSignal(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  ASB_ASSIGN_OR_RETURN(int pid, SelectedPid(c, msg));
  // Signal is an enum: its name ("SIGNAL_SIGKILL") or number (9, 15).
  std::string signal;
  const json::value* v = FieldOf(msg, "signal");
  if (v != nullptr && v->is_string()) {
    signal = std::string(v->as_string());
    if (signal == "SIGNAL_SIGKILL") signal = "9";
    if (signal == "SIGNAL_SIGTERM") signal = "15";
  } else if (v != nullptr && v->is_int64()) {
    signal = std::to_string(v->as_int64());
  }
  if (signal != "9" && signal != "15") {
    return Fail(Error::InvalidArgument("signal: must be SIGNAL_SIGTERM or SIGNAL_SIGKILL"));
  }
  // envd answers not_found for a process that is not running (the SDK's kill() is then false).
  ASB_ASSIGN_OR_RETURN(auto list, c.manager->processes().ListProcesses(c.owner, c.sandbox_id));
  bool running = false;
  for (const auto& p : list) running = running || (p.pid == pid && p.state == "running");
  if (!running) return Fail(Error::NotFound("process " + std::to_string(pid) + " not found"));
  if (signal == "9") {
    // kill(): the whole tree, and the call returns once nothing of it is left.
    ASB_TRY(c.manager->processes().KillProcess(c.owner, c.sandbox_id, pid));
  } else {
    ASB_TRY(c.manager->processes().SignalProcess(c.owner, c.sandbox_id, pid, signal));
  }
  return Unary(c.sandbox_id, json::object());
}

Result<HttpResponse> CloseStdin(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  ASB_ASSIGN_OR_RETURN(int pid, SelectedPid(c, msg));
  ASB_TRY(c.manager->processes().CloseProcessStdin(c.owner, c.sandbox_id, pid));
  return Unary(c.sandbox_id, json::object());
}

Result<HttpResponse> Update(const EnvdCall& c, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object msg, ConnectMessage(req, false));
  ASB_ASSIGN_OR_RETURN(int pid, SelectedPid(c, msg));
  ASB_ASSIGN_OR_RETURN(const json::object* pty, ObjectOf(msg, "pty"));
  const json::object* size = nullptr;
  if (pty != nullptr) {
    ASB_ASSIGN_OR_RETURN(size, ObjectOf(*pty, "size"));
  }
  if (size == nullptr) return Unary(c.sandbox_id, json::object());  // nothing to change
  ASB_ASSIGN_OR_RETURN(auto cols, UintField(*size, "cols", core::kMaxTerminalSize));
  ASB_ASSIGN_OR_RETURN(auto rows, UintField(*size, "rows", core::kMaxTerminalSize));
  if (!cols || !rows || *cols == 0 || *rows == 0) {
    return Fail(Error::InvalidArgument("pty.size: cols and rows must be 1.." +
                                       std::to_string(core::kMaxTerminalSize)));
  }
  ASB_TRY(c.manager->processes().ResizeProcess(c.owner, c.sandbox_id, pid, *cols, *rows));
  return Unary(c.sandbox_id, json::object());
}

}  // namespace

HttpResponse EnvdProcessCall(const EnvdCall& c, std::string_view method, HttpRequest& req) {
  const bool streaming = method == "Start" || method == "Connect";
  Result<HttpResponse> r = Fail(Error::NotFound(""));
  if (method == "Start") {
    r = Start(c, req);
  } else if (method == "Connect") {
    r = Connect(c, req);
  } else if (method == "List") {
    r = List(c, req);
  } else if (method == "SendInput") {
    r = SendInput(c, req);
  } else if (method == "SendSignal") {
    r = SendSignal(c, req);
  } else if (method == "CloseStdin") {
    r = CloseStdin(c, req);
  } else if (method == "Update") {
    r = Update(c, req);
  } else {
    // StreamInput is a client stream, which the SDKs' fetch transport cannot send.
    return ConnectUnaryError("unimplemented",
                             "process.Process/" + std::string(method) + " is not implemented");
  }
  if (r) return std::move(*r);
  return streaming ? ConnectStreamError(r.error(), c.sandbox_id) : ConnectUnaryError(r.error());
}

}  // namespace asb::api
