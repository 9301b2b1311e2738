#include "core/wire_adapter.h"

#include <boost/json.hpp>
#include <utility>

namespace asb::core::wire {

namespace json = boost::json;

ExecResult FromWire(const protocol::ExecResult& r) {
  ExecResult o;
  o.exit_code = r.exit_code;
  o.signal = r.signal;
  o.timed_out = r.timed_out;
  o.stdout_truncated = r.stdout_truncated;
  o.stderr_truncated = r.stderr_truncated;
  o.stdout_bytes = r.stdout_bytes;
  o.stderr_bytes = r.stderr_bytes;
  o.duration_ms = r.duration_ms;
  o.oom_killed = r.oom_killed;
  o.pids_limited = r.pids_limited;
  return o;
}

ExecOutcome FromWire(protocol::CollectedExec c) {
  return ExecOutcome{FromWire(c.result), std::move(c.stdout_data), std::move(c.stderr_data)};
}

FileStat FromWire(const protocol::FileStat& s) {
  return FileStat{s.path, s.name, s.type,     s.size,        s.mode,
                  s.uid,  s.gid,  s.mtime_ms, s.link_target, s.metadata};
}

TarResult FromWire(const protocol::TarResult& t) { return TarResult{t.entries, t.bytes}; }

ProcessInfo FromWire(const protocol::ProcInfo& p) {
  ProcessInfo o;
  o.pid = p.pid;
  o.tag = p.tag;
  o.argv = p.argv;
  o.command = p.command;
  o.started_at_ms = p.started_at_ms;
  o.ended_at_ms = p.ended_at_ms;
  o.state = p.state;
  o.exit_code = p.exit_code;
  o.signal = p.signal;
  o.pty = p.pty;
  o.stdin_open = p.stdin_open;
  o.output_bytes = p.output_bytes;
  return o;
}

namespace {

// {"skipped":N} of an attachment that fell behind the replay ring; nullopt for anything else.
std::optional<uint64_t> SkippedBytes(std::string_view payload) {
  boost::system::error_code ec;
  json::value v = json::parse(payload, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::value* n = v.as_object().if_contains("skipped");
  if (n == nullptr) return std::nullopt;
  if (n->is_uint64()) return n->as_uint64();
  if (n->is_int64() && n->as_int64() >= 0) return static_cast<uint64_t>(n->as_int64());
  return std::nullopt;
}

class ChannelEvents final : public EventStream {
 public:
  ChannelEvents(std::shared_ptr<protocol::Channel> ch, Payloads p,
                std::function<void(ExecResult*)> on_exec_result)
      : ch_(std::move(ch)), payloads_(p), on_exec_result_(std::move(on_exec_result)) {}

  Result<StreamEvent> Next(int64_t timeout_ms) override {
    ASB_ASSIGN_OR_RETURN(protocol::ChannelEvent ev, ch_->Next(timeout_ms));
    return Convert(std::move(ev));
  }
  std::optional<StreamEvent> TryNext() override {
    std::optional<protocol::ChannelEvent> ev = ch_->TryNext();
    if (!ev) return std::nullopt;
    return Convert(std::move(*ev));
  }
  void SetNotify(std::function<void()> notify) override { ch_->SetNotify(std::move(notify)); }
  Status Write(std::string_view data, int64_t timeout_ms) override {
    return ch_->Write(data, timeout_ms);
  }
  Result<size_t> TryWrite(std::string_view data) override { return ch_->TryWrite(data); }
  Status CloseWrite() override { return ch_->CloseWrite(); }
  Status Signal(int signo) override { return ch_->Signal(signo); }
  Status Resize(uint16_t cols, uint16_t rows) override { return ch_->Resize(cols, rows); }
  Status Cancel() override { return ch_->Cancel(); }

 private:
  using Kind = protocol::ChannelEvent::Kind;

  static StreamEvent ErrorEvent(Error e) {
    StreamEvent out;
    out.kind = StreamEvent::Kind::kError;
    out.error = std::move(e);
    return out;
  }

  // A decoded RESULT or INFO payload, or an error event when sandboxd sent something malformed.
  template <typename T, typename Set>
  static StreamEvent Decoded(StreamEvent out, Result<T> r, Set set) {
    if (!r)
      return ErrorEvent(std::move(r)
                            .error()
                            .WithCode(ErrorCode::kBackend)
                            .WithContext("malformed answer from sandboxd"));
    set(&out, FromWire(*r));
    return out;
  }

  StreamEvent Convert(protocol::ChannelEvent ev) {
    StreamEvent out;
    out.stream =
        ev.stream == protocol::Stream::kStderr ? OutputStream::kStderr : OutputStream::kStdout;
    switch (ev.kind) {
      case Kind::kData:
        out.kind = StreamEvent::Kind::kOutput;
        out.data = std::move(ev.payload);
        return out;
      case Kind::kEof:
        out.kind = StreamEvent::Kind::kEnd;
        return out;
      case Kind::kInfo:
        out.kind = StreamEvent::Kind::kInfo;
        if (payloads_ == Payloads::kProcess) {
          if (auto n = SkippedBytes(ev.payload)) {
            out.skipped_bytes = *n;
            return out;
          }
          return Decoded(std::move(out), protocol::DecodeProcInfo(ev.payload),
                         [](StreamEvent* o, ProcessInfo p) { o->process = std::move(p); });
        }
        if (payloads_ == Payloads::kFileRead) {
          return Decoded(std::move(out), protocol::DecodeFileStat(ev.payload),
                         [](StreamEvent* o, FileStat s) { o->file = std::move(s); });
        }
        return out;
      case Kind::kResult:
        out.kind = StreamEvent::Kind::kDone;
        switch (payloads_) {
          case Payloads::kExec:
            return Decoded(std::move(out), protocol::DecodeExecResult(ev.payload),
                           [this](StreamEvent* o, ExecResult r) {
                             if (on_exec_result_) on_exec_result_(&r);
                             o->exec_result = r;
                           });
          case Payloads::kProcess:
            return Decoded(std::move(out), protocol::DecodeProcInfo(ev.payload),
                           [](StreamEvent* o, ProcessInfo p) { o->process = std::move(p); });
          case Payloads::kFileWrite:
            return Decoded(std::move(out), protocol::DecodeFileStat(ev.payload),
                           [](StreamEvent* o, FileStat s) { o->file = std::move(s); });
          case Payloads::kFileRead:
            return out;
        }
        return out;
      case Kind::kError:
        return ErrorEvent(ev.error ? std::move(*ev.error)
                                   : Error::Backend("the operation failed in the sandbox"));
    }
    return ErrorEvent(Error::Backend("unexpected event from sandboxd"));
  }

  std::shared_ptr<protocol::Channel> ch_;
  Payloads payloads_;
  std::function<void(ExecResult*)> on_exec_result_;
};

}  // namespace

std::shared_ptr<EventStream> WrapChannel(std::shared_ptr<protocol::Channel> channel,
                                         Payloads payloads,
                                         std::function<void(ExecResult*)> on_exec_result) {
  return std::make_shared<ChannelEvents>(std::move(channel), payloads, std::move(on_exec_result));
}

}  // namespace asb::core::wire

namespace asb::core::wire {

Result<std::shared_ptr<protocol::Channel>> OpenTarExport(protocol::Connection& conn,
                                                         const std::string& path,
                                                         const protocol::FileScope& scope) {
  protocol::TarExportRequest req;
  req.path = path;
  req.scope = scope;
  return conn.Open(protocol::EncodeTarExportRequest(req));
}

Result<std::shared_ptr<protocol::Channel>> OpenTarImport(protocol::Connection& conn,
                                                         const std::string& path, bool clear_first,
                                                         uint64_t max_bytes,
                                                         const protocol::FileScope& scope) {
  protocol::TarImportRequest req;
  req.path = path;
  req.scope = scope;
  req.clear_first = clear_first;
  req.max_bytes = max_bytes;
  return conn.Open(protocol::EncodeTarImportRequest(req));
}

}  // namespace asb::core::wire
