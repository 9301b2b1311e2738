// CodeService: code contexts over background processes (code_service.h, ADR 0019).
#include "core/code_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <thread>

#include "common/ids.h"
#include "core/code_protocol.h"
#include "core/paths.h"
#include "core/sandbox_record.h"

namespace asb::core {

namespace {

// CodeRequest::env's rules (code_types.h). Bash takes shell names only: they are exported.
Status CheckCodeEnv(const std::map<std::string, std::string>& env, const std::string& language) {
  ASB_TRY(ValidateEnv(env, "env"));
  uint64_t bytes = 0;
  for (const auto& [k, v] : env) {
    bytes += k.size() + v.size();
    if (language == "bash") {
      const bool name = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0])) &&
                        std::all_of(k.begin(), k.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                        });
      if (!name) {
        return Fail(Error::InvalidArgument("env: '" + k.substr(0, 64) +
                                           "' is not a bash variable name (letters, digits and "
                                           "_, not starting with a digit)"));
      }
    }
  }
  if (bytes > kMaxCodeEnvBytes) {
    return Fail(Error::InvalidArgument("env: at most " + std::to_string(kMaxCodeEnvBytes) +
                                       " bytes of keys and values, got " + std::to_string(bytes)));
  }
  return {};
}

constexpr std::string_view kTagPrefix = "code:";
// The driver's stdout carries JSON lines; one longer than this (a huge image) is dropped.
constexpr size_t kMaxDriverLineBytes = 16u << 20;
// Results kept per execution; more are dropped (and the end says truncated).
constexpr size_t kMaxResults = 256;
constexpr int64_t kReadyTimeoutMs = 60'000;
// Past the execution's own timeout the driver should have interrupted the kernel; the server
// waits this much longer, interrupts itself, then kills the context after kKillAfterMs more.
constexpr int64_t kGuardGraceMs = 10'000;
constexpr int64_t kKillAfterMs = 5'000;
constexpr int64_t kDriverRingBytes = 256 * 1024;

// Reads the driver source, a JSON string, from the first stdin line and runs it. Nothing is
// written to the sandbox's files (the file API is confined to /workspace, and a driver there
// would land in the user's snapshots).
constexpr const char* kPythonBootstrap =
    "import json,sys;exec(compile(json.loads(sys.stdin.readline()),'agent-sandbox-driver.py',"
    "'exec'))";
// Byte by byte so that nothing after the first line is consumed before readline takes over.
constexpr const char* kNodeBootstrap =
    "const fs=require('fs');const b=[];const c=Buffer.alloc(1);"
    "for(;;){if(fs.readSync(0,c,0,1)!==1)process.exit(3);if(c[0]===10)break;b.push(c[0]);}"
    "require('vm').runInThisContext('(function(require){'+JSON.parse(Buffer.from(b)"
    ".toString('utf8'))+'\\n})',{filename:'agent-sandbox-driver.js'})(require)";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Key(const std::string& a, const std::string& b) { return a + "/" + b; }

// A context as its driver process shows it, or nullopt for other processes.
std::optional<CodeContextInfo> ContextOf(const ProcessInfo& p) {
  if (p.tag.rfind(kTagPrefix, 0) != 0) return std::nullopt;
  std::string rest = p.tag.substr(kTagPrefix.size());
  size_t colon = rest.find(':');
  if (colon == std::string::npos) return std::nullopt;
  CodeContextInfo c;
  c.id = rest.substr(0, colon);
  std::string lang = rest.substr(colon + 1);
  if (lang.size() > 8 && lang.compare(lang.size() - 8, 8, ":default") == 0) {
    c.is_default = true;
    lang.resize(lang.size() - 8);
  }
  if (!IsValidId(c.id, "ctx_") || !CanonicalCodeLanguage(lang)) return std::nullopt;
  c.language = lang;
  for (size_t i = 0; i + 1 < p.argv.size(); ++i) {
    if (p.argv[i] == "--cwd") c.cwd = p.argv[i + 1];
  }
  c.pid = p.pid;
  c.state = p.state == "running" ? "running" : "dead";
  c.created_at_ms = p.started_at_ms;
  return c;
}

// Writes all of `data` to the process's stdin, waiting while its 1 MiB queue is full.
Status WriteAll(ProcessService& procs, const std::string& owner, const std::string& id, int pid,
                std::string_view data) {
  const int64_t deadline = NowMs() + 30'000;
  while (!data.empty()) {
    Result<uint64_t> n = procs.WriteProcessStdin(owner, id, pid, data);
    if (!n && n.error().code() != ErrorCode::kLimitExceeded) return Fail(n.error());
    if (n && *n > 0) {
      data.remove_prefix(std::min<uint64_t>(*n, data.size()));
      continue;
    }
    if (NowMs() > deadline) return Fail(Error::Timeout("the code context does not read its input"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return {};
}

// Cuts `text` to at most `max` bytes without splitting a UTF-8 character.
std::string CutUtf8(std::string text, uint64_t max) {
  if (text.size() <= max) return text;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.resize(n);
  return text;
}

}  // namespace

std::optional<std::string> CanonicalCodeLanguage(std::string_view name) {
  if (name == "python" || name == "python3" || name == "py") return "python";
  if (name == "javascript" || name == "js" || name == "node" || name == "nodejs") {
    return "javascript";
  }
  if (name == "bash" || name == "sh" || name == "shell") return "bash";
  return std::nullopt;
}

// ---- CodeExecution ---------------------------------------------------------------------------

CodeExecution::~CodeExecution() {
  if (!ended_) Signal("INT", /*wait=*/false);
  if (attach_.events) {
    attach_.events->SetNotify(nullptr);
    attach_.events->Cancel();
  }
}

void CodeExecution::Interrupt() { Signal("INT", /*wait=*/true); }

void CodeExecution::Signal(const char* signal, bool wait) {
  if (!procs_ || ended_) return;
  if (wait) {
    (void)procs_->SignalProcess(owner_, sandbox_id_, context_.pid, signal);
    return;
  }
  // From TryNext() and the destructor, which run on the server's I/O thread and must not wait
  // for sandboxd: the signal goes from a thread of its own. The ProcessService outlives it
  // (the manager lives as long as the server).
  std::thread([procs = procs_, owner = owner_, id = sandbox_id_, pid = context_.pid, signal] {
    (void)procs->SignalProcess(owner, id, pid, signal);
  }).detach();
}

void CodeExecution::SetNotify(std::function<void()> notify) {
  if (attach_.events) attach_.events->SetNotify(std::move(notify));
}

std::optional<CodeEvent> CodeExecution::Pop() {
  if (pending_pos_ >= pending_.size()) return std::nullopt;
  CodeEvent ev = std::move(pending_[pending_pos_++]);
  if (pending_pos_ == pending_.size()) {
    pending_.clear();
    pending_pos_ = 0;
  }
  if (ev.kind == CodeEvent::Kind::kEnd) {
    ended_ = true;
    ev.end.truncated = ev.end.truncated || truncated_;
    // The driver's own cuts, then the server's, each name once, sorted.
    cut_outputs_.insert(ev.end.truncated_outputs.begin(), ev.end.truncated_outputs.end());
    ev.end.truncated_outputs.assign(cut_outputs_.begin(), cut_outputs_.end());
    ev.end.truncated = ev.end.truncated || !cut_outputs_.empty();
    ev.end.dropped_results += dropped_results_;
    busy_.reset();
    attach_.events->SetNotify(nullptr);
    attach_.events->Cancel();
  }
  return ev;
}

void CodeExecution::Die(std::string value) {
  for (const CodeEvent& ev : pending_) {
    if (ev.kind == CodeEvent::Kind::kEnd) return;  // ended already
  }
  CodeEvent err;
  err.kind = CodeEvent::Kind::kError;
  err.error.name = "KernelDied";
  err.error.value = std::move(value);
  pending_.push_back(std::move(err));
  CodeEvent end;
  end.kind = CodeEvent::Kind::kEnd;
  end.end.status = "dead";
  end.end.duration_ms = NowMs() - started_ms_;
  end.end.timed_out = interrupted_ms_ != 0;
  pending_.push_back(std::move(end));
  context_.state = "dead";
}

void CodeExecution::AbsorbLine(std::string_view line) {
  DriverLine d = ParseDriverLine(line);
  if (d.kind != DriverLine::Kind::kEvent || d.id != exec_id_) return;
  CodeEvent& ev = d.event;
  switch (ev.kind) {
    case CodeEvent::Kind::kStdout:
    case CodeEvent::Kind::kStderr:
      if (ev.text.size() > output_left_) {
        truncated_ = true;
        cut_outputs_.insert(ev.kind == CodeEvent::Kind::kStdout ? "stdout" : "stderr");
        ev.text = CutUtf8(std::move(ev.text), output_left_);
      }
      output_left_ -= ev.text.size();
      if (ev.text.empty()) return;
      break;
    case CodeEvent::Kind::kResult: {
      // Results share the output budget with stdout and stderr; one that does not fit is left
      // out whole (ADR 0014, round 3), and so is every one past kMaxResults.
      const uint64_t bytes = ev.result.OutputBytes();
      if (results_seen_ >= kMaxResults || bytes > output_left_) {
        truncated_ = true;
        cut_outputs_.insert("results");
        ++dropped_results_;
        return;
      }
      output_left_ -= bytes;
      ++results_seen_;
      break;
    }
    case CodeEvent::Kind::kEnd:
      if (ev.end.status == "dead") {
        // The driver exits next: hold the end until its exit is seen, so that the context
        // reads as dead to whoever acts on this answer.
        context_.state = "dead";
        held_end_ = std::move(ev);
        held_until_ms_ = NowMs() + kKillAfterMs;
        return;
      }
      break;
    case CodeEvent::Kind::kError:
      break;
  }
  pending_.push_back(std::move(ev));
}

void CodeExecution::ReleaseHeldEnd() {
  if (!held_end_) return;
  pending_.push_back(std::move(*held_end_));
  held_end_.reset();
}

void CodeExecution::FlushAcks() {
  if (unacked_ > 0) {
    ack_out_ += "{\"op\":\"ack\",\"bytes\":" + std::to_string(unacked_) + "}\n";
    unacked_ = 0;
  }
  if (ack_out_.empty() || ended_) return;
  Result<size_t> n = attach_.events->TryWrite(ack_out_);
  if (n) ack_out_.erase(0, *n);
}

void CodeExecution::Absorb(const StreamEvent& ev) {
  switch (ev.kind) {
    case StreamEvent::Kind::kOutput: {
      if (ev.stream != OutputStream::kStdout) return;  // the driver's own diagnostics
      unacked_ += ev.data.size();
      std::string_view data = ev.data;
      while (!data.empty()) {
        size_t nl = data.find('\n');
        if (nl == std::string_view::npos) {
          if (!resync_) partial_.append(data);
          if (partial_.size() > kMaxDriverLineBytes) {
            partial_.clear();
            resync_ = true;
            truncated_ = true;
          }
          return;
        }
        if (!resync_) {
          partial_.append(data.substr(0, nl));
          AbsorbLine(partial_);
        }
        partial_.clear();
        resync_ = false;
        data.remove_prefix(nl + 1);
      }
      return;
    }
    case StreamEvent::Kind::kInfo:
      if (ev.skipped_bytes > 0) {  // the replay ring overran: a line may be cut
        partial_.clear();
        resync_ = true;
        truncated_ = true;
      }
      return;
    case StreamEvent::Kind::kEnd:
      return;
    case StreamEvent::Kind::kDone: {
      if (held_end_) {
        ReleaseHeldEnd();
        return;
      }
      std::string why = "the " + context_.language + " kernel exited";
      if (ev.process && ev.process->signal > 0) {
        why += " (signal " + std::to_string(ev.process->signal) + ")";
      } else if (ev.process) {
        why += " (exit code " + std::to_string(ev.process->exit_code) + ")";
      }
      Die(why);
      return;
    }
    case StreamEvent::Kind::kError:
      if (held_end_) {
        ReleaseHeldEnd();
        return;
      }
      Die("the code context's connection ended: " +
          (ev.error ? ev.error->message() : std::string("unknown error")));
      return;
  }
}

void CodeExecution::CheckGuard(bool wait) {
  if (ended_) return;
  const int64_t now = NowMs();
  if (held_end_) {
    if (now >= held_until_ms_) ReleaseHeldEnd();
    return;
  }
  if (interrupted_ms_ == 0 && now >= guard_ms_) {
    interrupted_ms_ = now;
    Signal("INT", wait);
  } else if (interrupted_ms_ != 0 && now >= interrupted_ms_ + kKillAfterMs) {
    Signal("KILL", wait);
    Die("the " + context_.language + " kernel did not stop after an interrupt; it was killed");
  }
}

std::optional<CodeEvent> CodeExecution::TryNext() {
  if (ended_) return std::nullopt;
  if (auto ev = Pop()) return ev;
  for (int i = 0; i < 256; ++i) {  // bounded: a fast producer cannot keep us here
    std::optional<StreamEvent> ev = attach_.events->TryNext();
    if (!ev) break;
    Absorb(*ev);
    if (ev->terminal()) break;
  }
  FlushAcks();
  CheckGuard(/*wait=*/false);
  return Pop();
}

Result<CodeEvent> CodeExecution::Next(int64_t timeout_ms) {
  if (ended_) return Fail(Error::Conflict("the execution has ended"));
  const int64_t deadline = timeout_ms < 0 ? INT64_MAX : NowMs() + timeout_ms;
  for (;;) {
    if (auto ev = Pop()) return std::move(*ev);
    CheckGuard(/*wait=*/true);
    if (auto ev = Pop()) return std::move(*ev);
    const int64_t now = NowMs();
    if (now >= deadline) return Fail(Error::Timeout("no event yet"));
    Result<StreamEvent> ev = attach_.events->Next(std::min<int64_t>(deadline - now, 500));
    if (ev) {
      Absorb(*ev);
      FlushAcks();
    } else if (ev.error().code() != ErrorCode::kTimeout) {
      StreamEvent gone;
      gone.kind = StreamEvent::Kind::kError;
      gone.error = ev.error();
      Absorb(gone);
    }
  }
}

// ---- CodeService -----------------------------------------------------------------------------

std::shared_ptr<std::mutex> CodeService::SandboxLock(const std::string& id) {
  std::lock_guard l(mu_);
  auto& m = sandbox_locks_[id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

Result<std::shared_ptr<void>> CodeService::MarkBusy(const std::string& id,
                                                    const std::string& context_id) {
  std::string key = Key(id, context_id);
  std::lock_guard l(mu_);
  if (!busy_.insert(key).second) {
    return Fail(Error::Conflict("code context " + context_id +
                                " is running another execution; wait for it or interrupt it"));
  }
  return std::shared_ptr<void>(nullptr, [this, key](void*) {
    std::lock_guard l2(mu_);
    busy_.erase(key);
  });
}

Result<std::vector<CodeContextInfo>> CodeService::ListContexts(const std::string& owner,
                                                               const std::string& id) {
  ASB_ASSIGN_OR_RETURN(std::vector<ProcessInfo> procs, procs_.ListProcesses(owner, id));
  // One entry per context id: its running driver, else its newest exited one (a dead kernel),
  // unless it was deleted.
  std::vector<CodeContextInfo> out;
  std::lock_guard l(mu_);
  for (const ProcessInfo& p : procs) {
    std::optional<CodeContextInfo> c = ContextOf(p);
    if (!c) continue;
    if (c->state == "dead" && deleted_.count(Key(id, std::to_string(c->pid)))) continue;
    auto same = std::find_if(out.begin(), out.end(),
                             [&](const CodeContextInfo& o) { return o.id == c->id; });
    if (same == out.end()) {
      out.push_back(*c);
    } else if (c->state == "running" || same->state != "running") {
      *same = *c;
    }
  }
  return out;
}

Result<CodeContextInfo> CodeService::Find(const std::string& owner, const std::string& id,
                                          const std::string& context_id) {
  if (!IsValidId(context_id, "ctx_")) {
    return Fail(Error::NotFound("code context " + context_id + " not found"));
  }
  ASB_ASSIGN_OR_RETURN(auto all, ListContexts(owner, id));
  for (CodeContextInfo& c : all) {
    if (c.id == context_id) return std::move(c);
  }
  return Fail(Error::NotFound("code context " + context_id + " not found"));
}

Result<CodeContextInfo> CodeService::GetContext(const std::string& owner, const std::string& id,
                                                const std::string& context_id) {
  return Find(owner, id, context_id);
}

Result<CodeContextInfo> CodeService::Spawn(const std::string& owner, const std::string& id,
                                           const std::string& context_id,
                                           const std::string& language, const std::string& cwd,
                                           bool is_default) {
  ProcessOptions o;
  if (language == "javascript") {
    o.argv = {"node",
              "-e",
              kNodeBootstrap,
              "--",
              "--cwd",
              cwd,
              "--context",
              context_id,
              "--max-output-bytes",
              std::to_string(kDefaultCodeOutputBytes)};
  } else {
    o.argv = {"python3",
              "-u",
              "-c",
              kPythonBootstrap,
              "--language",
              language,
              "--cwd",
              cwd,
              "--context",
              context_id,
              "--max-output-bytes",
              std::to_string(kDefaultCodeOutputBytes)};
  }
  o.workdir = cwd;
  o.stdin = true;
  o.tag = std::string(kTagPrefix) + context_id + ":" + language + (is_default ? ":default" : "");
  o.ring_bytes = kDriverRingBytes;
  ASB_ASSIGN_OR_RETURN(ProcessInfo p, procs_.StartProcess(owner, id, o));
  auto kill = [&] { (void)procs_.KillProcess(owner, id, p.pid); };
  Result<ProcessAttach> att = procs_.AttachProcess(owner, id, p.pid, kDriverRingBytes, false);
  if (!att) {
    kill();
    return Fail(att.error());
  }
  std::shared_ptr<EventStream> events = att->events;
  struct Detach {
    std::shared_ptr<EventStream> e;
    ~Detach() { e->Cancel(); }
  } detach{events};
  const std::string_view source =
      language == "javascript" ? JavaScriptDriverSource() : PythonDriverSource();
  const std::string interpreter = language == "javascript" ? "node" : "python3";
  // A template without the interpreter: the shell's "not found" (127). Said so, with the
  // template that has it, rather than as whatever failed first.
  auto missing_interpreter = [&] {
    return Error::Conflict(language + " code contexts need " + interpreter +
                           " in the sandbox; create it from the \"" +
                           (language == "javascript" ? "node" : "python") + "\" template");
  };
  if (Status s = WriteAll(procs_, owner, id, p.pid, EncodeDriverSource(source)); !s) {
    // The driver may have ended before it read its source (no such interpreter): its exit
    // says why, where the write only saw a closed stdin.
    for (const int64_t until = NowMs() + 2000; NowMs() < until;) {
      Result<StreamEvent> ev = events->Next(until - NowMs());
      if (!ev) break;
      if (ev->kind == StreamEvent::Kind::kDone || ev->kind == StreamEvent::Kind::kError) {
        if (ev->process && ev->process->exit_code == 127) return Fail(missing_interpreter());
        break;
      }
    }
    kill();
    return Fail(s.error());
  }
  const int64_t deadline = NowMs() + kReadyTimeoutMs;
  std::string line;
  for (;;) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) {
      kill();
      return Fail(Error::Timeout("the " + language + " kernel did not start within 60 s"));
    }
    Result<StreamEvent> ev = events->Next(left);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) continue;
      kill();
      return Fail(ev.error());
    }
    if (ev->kind == StreamEvent::Kind::kDone || ev->kind == StreamEvent::Kind::kError) {
      const int code = ev->process ? ev->process->exit_code : -1;
      if (code == 127) return Fail(missing_interpreter());
      return Fail(Error::Conflict("the " + language + " kernel exited while starting (exit code " +
                                  std::to_string(code) + ")"));
    }
    if (ev->kind != StreamEvent::Kind::kOutput || ev->stream != OutputStream::kStdout) continue;
    line += ev->data;
    size_t nl;
    while ((nl = line.find('\n')) != std::string::npos) {
      DriverLine d = ParseDriverLine(std::string_view(line).substr(0, nl));
      line.erase(0, nl + 1);
      if (d.kind == DriverLine::Kind::kReady) {
        CodeContextInfo c;
        c.id = context_id;
        c.language = language;
        c.cwd = cwd;
        c.pid = p.pid;
        c.state = "running";
        c.is_default = is_default;
        c.created_at_ms = p.started_at_ms;
        return c;
      }
      if (d.kind == DriverLine::Kind::kFatal) {
        kill();
        return Fail(Error::Conflict(d.message));
      }
    }
    if (line.size() > kMaxDriverLineBytes) {
      kill();
      return Fail(Error::Backend("the " + language + " kernel sent an overlong line"));
    }
  }
}

Result<CodeContextInfo> CodeService::CreateContext(const std::string& owner, const std::string& id,
                                                   const CodeContextOptions& opts) {
  std::optional<std::string> lang = CanonicalCodeLanguage(opts.language);
  if (!lang) {
    return Fail(Error::InvalidArgument("language: must be \"python\", \"javascript\" or \"bash\""));
  }
  ASB_ASSIGN_OR_RETURN(std::string cwd, NormalizeWorkdir(opts.cwd));
  auto lock = SandboxLock(id);
  std::lock_guard l(*lock);
  ASB_ASSIGN_OR_RETURN(auto all, ListContexts(owner, id));
  int running = 0;
  for (const CodeContextInfo& c : all) running += c.state == "running";
  if (running >= kMaxCodeContexts) {
    return Fail(Error::LimitExceeded("at most " + std::to_string(kMaxCodeContexts) +
                                     " code contexts run in one sandbox; delete one first"));
  }
  return Spawn(owner, id, NewId("ctx_"), *lang, cwd, false);
}

Status CodeService::DeleteContext(const std::string& owner, const std::string& id,
                                  const std::string& context_id) {
  ASB_ASSIGN_OR_RETURN(CodeContextInfo c, Find(owner, id, context_id));
  if (c.state == "running") {
    Result<ProcessInfo> r = procs_.KillProcess(owner, id, c.pid);
    if (!r && r.error().code() != ErrorCode::kNotFound &&
        r.error().code() != ErrorCode::kConflict) {
      return Fail(r.error());
    }
  }
  std::lock_guard l(mu_);
  deleted_.insert(Key(id, std::to_string(c.pid)));
  return {};
}

Result<CodeContextInfo> CodeService::RestartContext(const std::string& owner, const std::string& id,
                                                    const std::string& context_id) {
  auto lock = SandboxLock(id);
  std::lock_guard l(*lock);
  ASB_ASSIGN_OR_RETURN(CodeContextInfo c, Find(owner, id, context_id));
  if (c.state == "running") {
    Result<ProcessInfo> r = procs_.KillProcess(owner, id, c.pid);
    if (!r && r.error().code() != ErrorCode::kNotFound &&
        r.error().code() != ErrorCode::kConflict) {
      return Fail(r.error());
    }
  }
  {
    std::lock_guard l2(mu_);
    deleted_.insert(Key(id, std::to_string(c.pid)));
  }
  return Spawn(owner, id, c.id, c.language, c.cwd.empty() ? std::string(kWorkspaceDir) : c.cwd,
               c.is_default);
}

Status CodeService::InterruptContext(const std::string& owner, const std::string& id,
                                     const std::string& context_id) {
  ASB_ASSIGN_OR_RETURN(CodeContextInfo c, Find(owner, id, context_id));
  if (c.state != "running") {
    return Fail(Error::Conflict("code context " + context_id + " is dead; restart it"));
  }
  return procs_.SignalProcess(owner, id, c.pid, "INT");
}

Result<CodeContextInfo> CodeService::DefaultContext(const std::string& owner, const std::string& id,
                                                    const std::string& language) {
  auto lock = SandboxLock(id);
  std::lock_guard l(*lock);
  ASB_ASSIGN_OR_RETURN(auto all, ListContexts(owner, id));
  for (CodeContextInfo& c : all) {
    if (c.is_default && c.language == language && c.state == "running") return std::move(c);
  }
  int running = 0;
  for (const CodeContextInfo& c : all) running += c.state == "running";
  if (running >= kMaxCodeContexts) {
    return Fail(Error::LimitExceeded("at most " + std::to_string(kMaxCodeContexts) +
                                     " code contexts run in one sandbox; delete one first"));
  }
  return Spawn(owner, id, NewId("ctx_"), language, std::string(kWorkspaceDir), true);
}

Result<std::unique_ptr<CodeExecution>> CodeService::Start(const std::string& owner,
                                                          const std::string& id,
                                                          const CodeRequest& req) {
  if (req.code.size() > kMaxCodeBytes) {
    return Fail(
        Error::InvalidArgument("code: at most " + std::to_string(kMaxCodeBytes) + " bytes"));
  }
  if (req.max_output_bytes < 1 || req.max_output_bytes > kDefaultCodeOutputBytes) {
    return Fail(Error::InvalidArgument("max_output_bytes: must be between 1 and " +
                                       std::to_string(kDefaultCodeOutputBytes)));
  }
  double seconds = static_cast<double>(limits_.default_exec_timeout_seconds);
  if (req.timeout_seconds) {
    if (!std::isfinite(*req.timeout_seconds) || *req.timeout_seconds <= 0) {
      return Fail(Error::InvalidArgument("timeout: must be a number of seconds > 0"));
    }
    seconds = std::min(*req.timeout_seconds, static_cast<double>(limits_.max_exec_timeout_seconds));
  }
  std::optional<std::string> lang;
  if (req.language) {
    lang = CanonicalCodeLanguage(*req.language);
    if (!lang) {
      return Fail(
          Error::InvalidArgument("language: must be \"python\", \"javascript\" or \"bash\""));
    }
  }
  CodeContextInfo ctx;
  if (req.context_id) {
    ASB_ASSIGN_OR_RETURN(ctx, Find(owner, id, *req.context_id));
    if (lang && *lang != ctx.language) {
      return Fail(Error::InvalidArgument("language: context " + ctx.id + " runs " + ctx.language +
                                         ", not " + *lang));
    }
  } else {
    if (!lang) lang = default_language_ ? default_language_(owner, id) : "python";
    ASB_ASSIGN_OR_RETURN(ctx, DefaultContext(owner, id, *lang));
  }
  if (ctx.state != "running") {
    return Fail(
        Error::Conflict("code context " + ctx.id + " is dead (its kernel exited); restart it"));
  }
  ASB_TRY(CheckCodeEnv(req.env, ctx.language));
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<void> busy, MarkBusy(id, ctx.id));
  // With stdin: the flow-control acknowledgements go on the attachment's own channel, which
  // never blocks (EventStream::TryWrite), so the I/O thread can send them.
  ASB_ASSIGN_OR_RETURN(ProcessAttach att, procs_.AttachProcess(owner, id, ctx.pid, 0, true));
  std::unique_ptr<CodeExecution> ex(new CodeExecution());
  ex->procs_ = &procs_;
  ex->owner_ = owner;
  ex->sandbox_id_ = id;
  ex->exec_id_ = RandomHex(8);
  ex->context_ = ctx;
  ex->attach_ = std::move(att);
  ex->busy_ = std::move(busy);
  ex->output_left_ = req.max_output_bytes;
  ex->started_ms_ = NowMs();
  const int64_t timeout_ms = std::max<int64_t>(1, std::llround(seconds * 1000));
  ex->guard_ms_ = ex->started_ms_ + timeout_ms + kGuardGraceMs;
  std::string line =
      EncodeExecuteRequest(ex->exec_id_, req.code, timeout_ms, req.max_output_bytes, req.env);
  if (Status s = WriteAll(procs_, owner, id, ctx.pid, line); !s) {
    ex->ended_ = true;  // nothing runs: no interrupt on the way out
    return Fail(s.error());
  }
  return ex;
}

}  // namespace asb::core
