// SandboxManager: exec and file operations, forwarded to the sandbox's sandboxd. None of these
// holds a lock while sandboxd works, so Destroy of the same sandbox proceeds at once.
#include <cmath>

#include "common/log.h"
#include "core/manager_impl.h"
#include "core/paths.h"
#include "protocol/frame.h"

namespace asb::core {

namespace {

/// How long a file read waits for sandboxd's next frame before giving up, milliseconds. No
/// request may hang the server (issue 3, "Errors").
constexpr int64_t kSandboxdAnswerMs = 60'000;

/// Ends an activity: decrements the in-flight count and touches last_activity.
struct ActivityMark {
  ActivityMark(std::shared_ptr<Entry> e, std::function<void(Entry&)> touch)
      : entry(std::move(e)), touch(std::move(touch)) {
    entry->active_ops.fetch_add(1);
  }
  ~ActivityMark() {
    touch(*entry);
    entry->active_ops.fetch_sub(1);
  }
  std::shared_ptr<Entry> entry;
  std::function<void(Entry&)> touch;
};

// The sandbox's counters of limits hit: compared before and after an exec to tell the caller.
struct LimitHits {
  uint64_t oom_kills = 0;
  uint64_t pids = 0;
};

LimitHits HitsOf(isolation::Sandbox& sb) {
  auto u = sb.Usage();
  return u ? LimitHits{u->oom_kills, u->pids_limit_hits} : LimitHits{};
}

void MarkLimitsHit(isolation::Sandbox& sb, const LimitHits& before, protocol::ExecResult* r) {
  const LimitHits after = HitsOf(sb);
  r->oom_killed = after.oom_kills > before.oom_kills;
  r->pids_limited = after.pids > before.pids;
}

/// Returns the error carried by a terminal kError event, or a kBackend one for anything else.
Error EventError(const protocol::ChannelEvent& ev, std::string_view what) {
  if (ev.kind == protocol::ChannelEvent::Kind::kError && ev.error) return *ev.error;
  return Error::Backend(std::string(what) + ": unexpected event from sandboxd");
}

Status CheckMode(const std::optional<uint32_t>& mode) {
  if (mode) return CheckFileMode(*mode);
  return {};
}

// A whole-file write over max_file_bytes is refused before anything reaches the sandbox.
Status CheckFileSize(uint64_t size, uint64_t max_file_bytes) {
  if (size <= max_file_bytes) return {};
  return Fail(Error::TooLarge("file of " + std::to_string(size) + " bytes is over the limit of " +
                              std::to_string(max_file_bytes)));
}

// The sandboxd request of a whole-file write to the normalized path `p`.
protocol::FileWriteRequest WriteRequestFor(std::string p, const std::optional<uint32_t>& mode,
                                           uint64_t max_file_bytes) {
  protocol::FileWriteRequest req;
  req.path = std::move(p);
  req.mode = mode.value_or(0644);
  req.max_bytes = max_file_bytes;
  return req;
}

}  // namespace

// ---- activity -------------------------------------------------------------------------------

void SandboxManager::Impl::Touch(Entry& e) {
  const int64_t now = clock.NowUnixMs();
  std::string id;
  {
    std::lock_guard l(e.info_mu);
    if (e.info.state == SandboxState::kDestroyed) return;
    e.info.last_activity_at_ms = now;
    id = e.info.id;
  }
  if (Status st = store.TouchSandbox(id, now); !st) {
    spdlog::debug("sandbox_id={} touch: {}", id, st.error().ToString());
  }
}

Result<SandboxManager::Impl::Active> SandboxManager::Impl::BeginActivity(
    const std::shared_ptr<Entry>& e) {
  Active a;
  {
    std::lock_guard l(e->info_mu);
    if (e->info.state != SandboxState::kRunning || !e->sandbox) {
      return Fail(Error::Conflict("sandbox " + e->info.id + " is " +
                                  std::string(SandboxStateName(e->info.state)) + ", not running"));
    }
    a.sandbox = e->sandbox;
  }
  auto mark = std::make_shared<ActivityMark>(e, [this](Entry& en) { Touch(en); });
  Touch(*e);
  a.mark = std::move(mark);
  return a;
}

// ---- sandboxes that die on their own -------------------------------------------------------

Result<std::shared_ptr<protocol::Connection>> SandboxManager::Impl::ConnectionFor(Entry& e,
                                                                                  const Active& a) {
  auto conn = a.sandbox->connection();
  if (!conn || !conn->alive()) {
    NoteIfLost(e, a.sandbox);
    return Fail(Error::Backend("sandbox " + a.sandbox->id() + ": no connection to its sandboxd"));
  }
  return conn;
}

void SandboxManager::Impl::NoteIfLost(Entry& e,
                                      const std::shared_ptr<isolation::Sandbox>& sandbox) {
  auto conn = sandbox->connection();
  bool lost = conn != nullptr && !conn->alive();
  if (!lost) {
    auto usage = sandbox->Usage();
    lost = !usage && usage.error().code() == ErrorCode::kNotFound;
  }
  if (!lost) return;
  // A Destroy in progress holds op_mu and will finish the job; never wait for it.
  std::unique_lock op(e.op_mu, std::try_to_lock);
  if (!op.owns_lock()) return;
  {
    std::lock_guard l(e.info_mu);
    if (e.info.state != SandboxState::kRunning || e.sandbox != sandbox) return;
  }
  const std::string msg = "sandbox stopped unexpectedly (its sandboxd is gone)";
  if (Status st = WriteState(e, SandboxState::kError, msg); !st) {
    spdlog::warn("sandbox_id={} marking lost sandbox: {}", sandbox->id(), st.error().ToString());
    return;
  }
  ReleaseSlot(e);
  spdlog::warn("sandbox_id={} {}", sandbox->id(), msg);
}

// ---- exec -----------------------------------------------------------------------------------

namespace {

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
  // Per stream (issue 17 item 6): a stdout flood must not push out the stderr line that says
  // what went wrong, so each stream gets the whole cap and its own truncated flag.
  req.max_stdout_bytes = cap;
  req.max_stderr_bytes = cap;
  req.max_output_bytes = 0;
  req.stdin_pipe = o.stdin_data.has_value();
  return req;
}

Result<ExecOutcome> SandboxManager::Exec(const std::string& owner, const std::string& id,
                                         const ExecOptions& opts) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(protocol::ExecRequest req,
                       BuildExecRequest(config_.limits, opts, DefaultsOf(*e)));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  const LimitHits before = HitsOf(*act.sandbox);
  ASB_ASSIGN_OR_RETURN(
      ExecOutcome out,
      impl_->Checked(
          *e, act,
          protocol::ExecCollect(*conn, req, opts.stdin_data.value_or(""), opts.abandoned.get())));
  MarkLimitsHit(*act.sandbox, before, &out.result);
  return out;
}

Result<ExecStream> SandboxManager::StartExec(const std::string& owner, const std::string& id,
                                             const ExecOptions& opts) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(
      protocol::ExecRequest req,
      BuildExecRequest(config_.limits, opts, DefaultsOf(*e), ExecDelivery::kStreamed));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  const LimitHits before = HitsOf(*act.sandbox);
  ASB_ASSIGN_OR_RETURN(auto channel,
                       impl_->Checked(*e, act, conn->Open(protocol::EncodeExecRequest(req))));
  if (opts.stdin_data) {
    // As ExecCollect: a command that exits without reading all of its stdin ends the channel
    // first, and the write then fails ("channel closed"); that is no failure of the exec, whose
    // result comes on the channel (a broken connection does too, as an error event).
    if (channel->Write(*opts.stdin_data)) (void)channel->CloseWrite();
  }
  ExecStream s;
  s.channel = channel;
  std::shared_ptr<isolation::Sandbox> sandbox = act.sandbox;
  s.finish = [sandbox, before](std::string_view json) -> Result<protocol::ExecResult> {
    ASB_ASSIGN_OR_RETURN(protocol::ExecResult r, protocol::DecodeExecResult(json));
    MarkLimitsHit(*sandbox, before, &r);
    return r;
  };
  s.keepalive = act.mark;
  return s;
}

// ---- files ----------------------------------------------------------------------------------

Result<FileReadStream> SandboxManager::OpenFileRead(const std::string& owner, const std::string& id,
                                                    const std::string& path) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileReadRequest req;
  req.path = p;
  ASB_ASSIGN_OR_RETURN(auto channel,
                       impl_->Checked(*e, act, conn->Open(protocol::EncodeFileReadRequest(req))));
  auto first = channel->Next(kSandboxdAnswerMs);
  if (!first) {
    (void)channel->Cancel();
    return Fail(
        Error::Backend("read " + p + ": sandboxd did not answer: " + first.error().message()));
  }
  protocol::ChannelEvent ev = std::move(*first);
  if (ev.kind != protocol::ChannelEvent::Kind::kInfo) {
    if (!ev.terminal()) (void)channel->Cancel();
    return Fail(EventError(ev, "read " + p));
  }
  ASB_ASSIGN_OR_RETURN(protocol::FileStat st, protocol::DecodeFileStat(ev.payload));
  if (st.type != "file") {
    (void)channel->Cancel();
    return Fail(Error::InvalidArgument(p + " is a " + st.type + ", not a file"));
  }
  if (st.size > config_.limits.max_file_bytes) {
    (void)channel->Cancel();
    return Fail(Error::TooLarge(p + " is " + std::to_string(st.size) +
                                " bytes, more than the limit of " +
                                std::to_string(config_.limits.max_file_bytes)));
  }
  FileReadStream out;
  out.stat = std::move(st);
  out.channel = std::move(channel);
  out.keepalive = act.mark;
  return out;
}

Result<std::string> SandboxManager::ReadFile(const std::string& owner, const std::string& id,
                                             const std::string& path) {
  ASB_ASSIGN_OR_RETURN(FileReadStream rs, OpenFileRead(owner, id, path));
  std::string data;
  data.reserve(rs.stat.size);
  for (;;) {
    auto next = rs.channel->Next(kSandboxdAnswerMs);
    if (!next) {
      (void)rs.channel->Cancel();
      return Fail(
          Error::Backend("read " + rs.stat.path + ": sandboxd stalled: " + next.error().message()));
    }
    protocol::ChannelEvent ev = std::move(*next);
    switch (ev.kind) {
      case protocol::ChannelEvent::Kind::kData:
        if (data.size() + ev.payload.size() > config_.limits.max_file_bytes) {
          (void)rs.channel->Cancel();
          return Fail(Error::TooLarge(rs.stat.path + " grew beyond the file size limit"));
        }
        data += ev.payload;
        break;
      case protocol::ChannelEvent::Kind::kEof:
      case protocol::ChannelEvent::Kind::kInfo:
        break;
      case protocol::ChannelEvent::Kind::kResult:
        return data;
      case protocol::ChannelEvent::Kind::kError:
        return Fail(EventError(ev, "read " + rs.stat.path));
    }
  }
}

Result<FileWriteStream> SandboxManager::OpenFileWrite(const std::string& owner,
                                                      const std::string& id,
                                                      const std::string& path,
                                                      std::optional<uint32_t> mode,
                                                      std::optional<uint64_t> size_hint) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_TRY(CheckMode(mode));
  if (size_hint) ASB_TRY(CheckFileSize(*size_hint, config_.limits.max_file_bytes));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  const auto req = WriteRequestFor(std::move(p), mode, config_.limits.max_file_bytes);
  ASB_ASSIGN_OR_RETURN(auto channel,
                       impl_->Checked(*e, act, conn->Open(protocol::EncodeFileWriteRequest(req))));
  FileWriteStream out;
  out.channel = std::move(channel);
  out.keepalive = act.mark;
  return out;
}

Result<protocol::FileStat> SandboxManager::WriteFile(const std::string& owner,
                                                     const std::string& id, const std::string& path,
                                                     std::string_view data,
                                                     std::optional<uint32_t> mode) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_TRY(CheckMode(mode));
  ASB_TRY(CheckFileSize(data.size(), config_.limits.max_file_bytes));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  const auto req = WriteRequestFor(std::move(p), mode, config_.limits.max_file_bytes);
  return impl_->Checked(*e, act, protocol::WriteFile(*conn, req, data));
}

Result<std::vector<protocol::FileStat>> SandboxManager::ListFiles(const std::string& owner,
                                                                  const std::string& id,
                                                                  const std::string& path,
                                                                  bool recursive) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileListRequest req;
  req.path = p;
  req.recursive = recursive;
  return impl_->Checked(*e, act, protocol::ListFiles(*conn, req));
}

Result<protocol::FileStat> SandboxManager::StatFile(const std::string& owner, const std::string& id,
                                                    const std::string& path) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileStatRequest req;
  req.path = p;
  return impl_->Checked(*e, act, protocol::StatFile(*conn, req));
}

Result<protocol::FileStat> SandboxManager::MakeDir(const std::string& owner, const std::string& id,
                                                   const std::string& path,
                                                   std::optional<uint32_t> mode) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  ASB_TRY(CheckMode(mode));
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileMkdirRequest req;
  req.path = p;
  req.mode = mode.value_or(0755);
  req.parents = true;
  return impl_->Checked(*e, act, protocol::MakeDir(*conn, req));
}

Status SandboxManager::RemoveFile(const std::string& owner, const std::string& id,
                                  const std::string& path, bool recursive) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string p, NormalizeWorkspacePath(path));
  if (p == kWorkspaceDir) {
    return Fail(Error::InvalidArgument("/workspace itself cannot be removed"));
  }
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileRemoveRequest req;
  req.path = p;
  req.recursive = recursive;
  return impl_->Checked(*e, act, protocol::RemoveFile(*conn, req));
}

Result<protocol::FileStat> SandboxManager::MoveFile(const std::string& owner, const std::string& id,
                                                    const std::string& from, const std::string& to,
                                                    bool overwrite) {
  ASB_ASSIGN_OR_RETURN(auto e, impl_->Find(owner, id));
  ASB_ASSIGN_OR_RETURN(std::string f, NormalizeWorkspacePath(from));
  ASB_ASSIGN_OR_RETURN(std::string t, NormalizeWorkspacePath(to));
  if (f == kWorkspaceDir || t == kWorkspaceDir) {
    return Fail(Error::InvalidArgument("/workspace itself cannot be moved or replaced"));
  }
  ASB_ASSIGN_OR_RETURN(Impl::Active act, impl_->BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, impl_->ConnectionFor(*e, act));
  protocol::FileMoveRequest req;
  req.from = f;
  req.to = t;
  req.overwrite = overwrite;
  return impl_->Checked(*e, act, protocol::MoveFile(*conn, req));
}

}  // namespace asb::core
