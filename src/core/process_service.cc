// ProcessService: background processes (process_service.h), forwarded to the sandbox's sandboxd
// as the proc.* operations (protocol/proc_client.h).
#include "core/process_service.h"

#include <strings.h>

#include <array>
#include <csignal>
#include <cstdlib>
#include <utility>

#include "core/exec_request.h"
#include "core/sandbox_registry.h"
#include "core/wire_adapter.h"
#include "protocol/proc_client.h"

namespace asb::core {

static_assert(kMaxProcessRingBytes == protocol::kProcRingMaxBytes,
              "core's ring limit is sandboxd's");

namespace {

struct NamedSignal {
  const char* name;
  int number;
};

constexpr std::array<NamedSignal, 16> kSignals = {{
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},
    {"ALRM", SIGALRM},
    {"TERM", SIGTERM},
    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP},
    {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},
    {"WINCH", SIGWINCH},
    {"ABRT", SIGABRT},
}};

Status CheckPid(int pid) {
  if (pid <= 0) return Fail(Error::NotFound("process " + std::to_string(pid) + " not found"));
  return {};
}

}  // namespace

Result<int> ParseSignalName(std::string_view name) {
  std::string_view n = name;
  if (n.size() > 3 && strncasecmp(n.data(), "SIG", 3) == 0) n.remove_prefix(3);
  for (const auto& s : kSignals) {
    if (n.size() == std::char_traits<char>::length(s.name) &&
        strncasecmp(n.data(), s.name, n.size()) == 0) {
      return s.number;
    }
  }
  if (!name.empty() && name.size() <= 2 &&
      name.find_first_not_of("0123456789") == std::string_view::npos) {
    int v = std::atoi(std::string(name).c_str());
    if (v >= 1 && v <= 64) return v;
  }
  std::string names;
  for (const auto& s : kSignals) names += std::string(names.empty() ? "" : ", ") + "SIG" + s.name;
  return Fail(Error::InvalidArgument("signal: unknown signal \"" + std::string(name) +
                                     "\" (one of " + names + ", or a number 1-64)"));
}

Result<ProcessInfo> ProcessService::StartProcess(const std::string& owner, const std::string& id,
                                                 const ProcessOptions& opts) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ExecOptions eo;
  eo.argv = opts.argv;
  eo.command = opts.command;
  eo.env = opts.env;
  eo.workdir = opts.workdir;
  eo.user = opts.user;
  ASB_ASSIGN_OR_RETURN(protocol::ExecRequest exec,
                       BuildExecRequest(reg_.cfg.limits, eo, DefaultsOf(*e)));
  protocol::ProcStartRequest req;
  req.argv = std::move(exec.argv);
  req.command = std::move(exec.command);
  req.env = std::move(exec.env);
  req.cwd = std::move(exec.cwd);
  req.user = std::move(exec.user);
  if (opts.tag.size() > 256) return Fail(Error::InvalidArgument("tag: at most 256 bytes"));
  req.tag = opts.tag;
  req.stdin_pipe = opts.stdin || opts.pty;
  if (opts.ring_bytes) {
    if (*opts.ring_bytes < 1 ||
        static_cast<uint64_t>(*opts.ring_bytes) > protocol::kProcRingMaxBytes) {
      return Fail(Error::InvalidArgument("ring_bytes: must be in [1, " +
                                         std::to_string(protocol::kProcRingMaxBytes) + "]"));
    }
    req.ring_bytes = static_cast<uint64_t>(*opts.ring_bytes);
  }
  if (!opts.pty && (opts.cols || opts.rows)) {
    return Fail(Error::InvalidArgument("cols/rows: only with pty: true"));
  }
  if (opts.pty) {
    int64_t cols = opts.cols.value_or(80), rows = opts.rows.value_or(24);
    if (cols < 1 || cols > kMaxTerminalSize || rows < 1 || rows > kMaxTerminalSize) {
      return Fail(Error::InvalidArgument("cols/rows: must be in [1, " +
                                         std::to_string(kMaxTerminalSize) + "]"));
    }
    req.pty = protocol::ExecRequest::Pty{static_cast<uint16_t>(cols), static_cast<uint16_t>(rows)};
  }
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return wire::FromWire(reg_.Checked(*e, act, protocol::StartProcess(*conn, req)));
}

Result<std::vector<ProcessInfo>> ProcessService::ListProcesses(const std::string& owner,
                                                               const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return wire::FromWire(reg_.Checked(*e, act, protocol::ListProcesses(*conn)));
}

Result<ProcessAttach> ProcessService::AttachProcess(const std::string& owner, const std::string& id,
                                                    int pid, uint64_t replay_bytes, bool stdin) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(auto channel,
                       reg_.Checked(*e, act,
                                    protocol::AttachProcess(*conn, protocol::ProcAttachRequest{
                                                                       pid, replay_bytes, stdin})));
  // The first event says whether the process exists: answer a missing one as an error here.
  auto first = channel->Next(protocol::kProcAnswerMs);
  if (!first) {
    (void)channel->Cancel();
    return Fail(std::move(first)
                    .error()
                    .WithCode(ErrorCode::kBackend)
                    .WithContext("attach: sandboxd did not answer"));
  }
  if (first->kind == protocol::ChannelEvent::Kind::kError) {
    return Fail(first->error ? *first->error : Error::Backend("attach failed"));
  }
  if (first->kind != protocol::ChannelEvent::Kind::kInfo) {
    if (!first->terminal()) (void)channel->Cancel();
    return Fail(Error::Backend("attach: unexpected first event from sandboxd"));
  }
  ProcessAttach out;
  // The first event (the process) was consumed above; the caller's stream starts after it.
  out.events = wire::WrapChannel(std::move(channel), wire::Payloads::kProcess);
  out.keepalive = act.mark;
  return out;
}

Result<uint64_t> ProcessService::WriteProcessStdin(const std::string& owner, const std::string& id,
                                                   int pid, std::string_view data) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return reg_.Checked(*e, act, protocol::WriteProcessStdin(*conn, pid, data));
}

Status ProcessService::CloseProcessStdin(const std::string& owner, const std::string& id, int pid) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return reg_.Checked(*e, act, protocol::CloseProcessStdin(*conn, pid));
}

Status ProcessService::SignalProcess(const std::string& owner, const std::string& id, int pid,
                                     std::string_view signal) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  ASB_ASSIGN_OR_RETURN(int signo, ParseSignalName(signal));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return reg_.Checked(*e, act, protocol::SignalProcess(*conn, pid, signo));
}

Status ProcessService::ResizeProcess(const std::string& owner, const std::string& id, int pid,
                                     int64_t cols, int64_t rows) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  if (cols < 1 || cols > kMaxTerminalSize || rows < 1 || rows > kMaxTerminalSize) {
    return Fail(Error::InvalidArgument("cols/rows: must be in [1, " +
                                       std::to_string(kMaxTerminalSize) + "]"));
  }
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return reg_.Checked(*e, act,
                      protocol::ResizeProcess(*conn, pid, static_cast<uint16_t>(cols),
                                              static_cast<uint16_t>(rows)));
}

Result<ProcessInfo> ProcessService::KillProcess(const std::string& owner, const std::string& id,
                                                int pid) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_TRY(CheckPid(pid));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  return wire::FromWire(reg_.Checked(*e, act, protocol::KillProcess(*conn, pid)));
}

}  // namespace asb::core
