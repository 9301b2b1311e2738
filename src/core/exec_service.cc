// ExecService: exec and streamed exec (exec_service.h), and the sandboxd request of every
// command (exec_request.h).
#include "core/exec_service.h"

#include <algorithm>
#include <cmath>

#include "core/exec_request.h"
#include "core/paths.h"
#include "core/sandbox_record.h"
#include "core/sandbox_registry.h"
#include "core/wire_adapter.h"
#include "protocol/client.h"
#include "protocol/frame.h"

namespace asb::core {

namespace {

// The sandbox's counters of limits hit, compared before and after an exec to tell the caller
// (zero when they cannot be read: the exec's result stands without the marks).
isolation::LimitHitCounts HitsOf(isolation::Sandbox& sb) {
  auto c = sb.LimitHits();
  return c ? *c : isolation::LimitHitCounts{};
}

// Where sandboxd reports the limits hit itself (BackendCapabilities::exec_limit_hits), its
// result stands and `before` was never read.
void MarkLimitsHit(isolation::Sandbox& sb, bool sandboxd_reports,
                   const isolation::LimitHitCounts& before, ExecResult* r) {
  if (sandboxd_reports) return;
  const isolation::LimitHitCounts after = HitsOf(sb);
  r->oom_killed = after.oom_kills > before.oom_kills;
  r->pids_limited = after.pids_limit_hits > before.pids_limit_hits;
}

// The most bytes argv (each string with its NUL), command and env (each "K=V" with its NUL)
// may take together: the request travels in one protocol frame (kMaxFramePayload, 1 MiB),
// which also carries the rest of the request; 64 KiB are left for that. execve(2) itself
// allows far more in total, but no single string over MAX_ARG_STRLEN (128 KiB): such a
// string fails in the sandbox with exit 126 "Argument list too long".
constexpr uint64_t kMaxExecArgBytes = protocol::kMaxFramePayload - (64u << 10);

Status CheckExecArgBytes(const ExecOptions& o) {
  uint64_t total = o.command ? o.command->size() + 1 : 0;
  for (const auto& a : o.argv) total += a.size() + 1;
  for (const auto& [k, v] : o.env) total += k.size() + v.size() + 2;
  if (total > kMaxExecArgBytes) {
    return Fail(Error::InvalidArgument("argv, command and env take " + std::to_string(total) +
                                       " bytes; at most " + std::to_string(kMaxExecArgBytes) +
                                       " are allowed"));
  }
  return {};
}

}  // namespace

CommandDefaults DefaultsOf(const Entry& e) {
  std::lock_guard l(e.info_mu);
  return CommandDefaults{e.info.default_workdir, e.info.default_user};
}

Result<protocol::ExecRequest> BuildExecRequest(const Limits& lim, const ExecOptions& o,
                                               const CommandDefaults& defaults,
                                               ExecDelivery delivery) {
  protocol::ExecRequest req;
  ASB_TRY(CheckExecArgBytes(o));
  if (o.command && !o.argv.empty()) {
    return Fail(Error::InvalidArgument("give either command or argv, not both"));
  }
  if (!o.command && o.argv.empty()) {
    return Fail(Error::InvalidArgument("command or argv is required"));
  }
  if (o.command) {
    if (o.command->empty()) return Fail(Error::InvalidArgument("command must not be empty"));
    if (o.command->find('\0') != std::string::npos) {
      return Fail(Error::InvalidArgument("command must not contain NUL"));
    }
    req.command = o.command;
  } else {
    for (const auto& a : o.argv) {
      if (a.find('\0') != std::string::npos) {
        return Fail(Error::InvalidArgument("argv items must not contain NUL"));
      }
    }
    if (o.argv[0].empty()) return Fail(Error::InvalidArgument("argv[0] must not be empty"));
    req.argv = o.argv;
  }
  ASB_TRY(ValidateEnv(o.env, "env"));
  req.env = o.env;
  ASB_ASSIGN_OR_RETURN(req.cwd, NormalizeWorkdir(o.workdir.empty() ? defaults.workdir : o.workdir));
  const std::string& user = o.user.empty() ? defaults.user : o.user;
  if (user == protocol::kUserSandbox) {
    req.user = protocol::kUserSandbox;
  } else if (user == protocol::kUserRoot) {
    req.user = protocol::kUserRoot;
  } else {
    return Fail(Error::InvalidArgument("user must be \"sandbox\" or \"root\""));
  }
  double seconds = static_cast<double>(lim.default_exec_timeout_seconds);
  if (o.timeout_seconds) {
    if (!std::isfinite(*o.timeout_seconds) || *o.timeout_seconds <= 0) {
      return Fail(Error::InvalidArgument("timeout_seconds must be greater than 0"));
    }
    seconds = std::min(*o.timeout_seconds, static_cast<double>(lim.max_exec_timeout_seconds));
  }
  req.timeout_ms = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(seconds * 1000)));
  // A collected exec holds its output in memory, so the server's maximum bounds it. A stream
  // holds nothing beyond the channel's window: a build log or a training run's output is
  // carried whole unless the caller opts into a cap (0 = none).
  uint64_t cap = delivery == ExecDelivery::kCollected ? lim.max_exec_output_bytes : 0;
  if (o.max_output_bytes) {
    if (*o.max_output_bytes == 0) {
      return Fail(Error::InvalidArgument("max_output_bytes must be at least 1"));
    }
    cap = cap == 0 ? *o.max_output_bytes : std::min(cap, *o.max_output_bytes);
  }
  // Per stream (ADR 0016): a stdout flood must not push out the stderr line that says
  // what went wrong, so each stream gets the whole cap and its own truncated flag.
  req.max_stdout_bytes = cap;
  req.max_stderr_bytes = cap;
  req.max_output_bytes = 0;
  req.stdin_pipe = o.stdin_data.has_value();
  return req;
}

Result<ExecOutcome> ExecService::Exec(const std::string& owner, const std::string& id,
                                      const ExecOptions& opts) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(protocol::ExecRequest req,
                       BuildExecRequest(reg_.cfg.limits, opts, DefaultsOf(*e)));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(isolation::Backend * backend, reg_.BackendOf(*e));
  const bool sandboxd_reports = backend->Capabilities().exec_limit_hits;
  const isolation::LimitHitCounts before =
      sandboxd_reports ? isolation::LimitHitCounts{} : HitsOf(*act.sandbox);
  ASB_ASSIGN_OR_RETURN(
      ExecOutcome out,
      wire::FromWire(reg_.Checked(
          *e, act,
          protocol::ExecCollect(*conn, req, opts.stdin_data.value_or(""), opts.abandoned.get()))));
  MarkLimitsHit(*act.sandbox, sandboxd_reports, before, &out.result);
  return out;
}

Result<ExecStream> ExecService::StartExec(const std::string& owner, const std::string& id,
                                          const ExecOptions& opts) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(
      protocol::ExecRequest req,
      BuildExecRequest(reg_.cfg.limits, opts, DefaultsOf(*e), ExecDelivery::kStreamed));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(isolation::Backend * backend, reg_.BackendOf(*e));
  const bool sandboxd_reports = backend->Capabilities().exec_limit_hits;
  const isolation::LimitHitCounts before =
      sandboxd_reports ? isolation::LimitHitCounts{} : HitsOf(*act.sandbox);
  ASB_ASSIGN_OR_RETURN(auto channel,
                       reg_.Checked(*e, act, conn->Open(protocol::EncodeExecRequest(req))));
  if (opts.stdin_data) {
    // As ExecCollect: a command that exits without reading all of its stdin ends the channel
    // first, and the write then fails ("channel closed"); that is no failure of the exec, whose
    // result comes on the channel (a broken connection does too, as an error event).
    if (channel->Write(*opts.stdin_data)) (void)channel->CloseWrite();
  }
  std::shared_ptr<isolation::Sandbox> sandbox = act.sandbox;
  ExecStream s;
  s.events = wire::WrapChannel(std::move(channel), wire::Payloads::kExec,
                               [sandbox, sandboxd_reports, before](ExecResult* r) {
                                 MarkLimitsHit(*sandbox, sandboxd_reports, before, r);
                               });
  s.keepalive = act.mark;
  return s;
}

}  // namespace asb::core
