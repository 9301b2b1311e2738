// Convenience operations built on Connection/Channel (declared at the end of client.h). Each
// one opens a channel, runs the frame sequence of its operation (docs/design/sandbox-protocol.md,
// section 7) and turns the terminal frame into a value or an Error.
#include <algorithm>
#include <boost/json.hpp>
#include <thread>

#include "protocol/client.h"
#include "protocol/client_ops_internal.h"

namespace asb::protocol {

namespace {

Error Unexpected(const ChannelEvent& ev, std::string_view op) {
  return Error::Backend("protocol: unexpected event " + std::to_string(static_cast<int>(ev.kind)) +
                        " during " + std::string(op));
}

/// Waits for the terminal event of a channel with no DATA/INFO of interest; returns the RESULT
/// body or the operation's error.
Result<std::string> AwaitResult(Channel& ch, std::string_view op) {
  while (true) {
    ASB_ASSIGN_OR_RETURN(ChannelEvent ev, ch.Next());
    switch (ev.kind) {
      case ChannelEvent::Kind::kResult:
        return std::move(ev.payload);
      case ChannelEvent::Kind::kError:
        return Fail(ev.error ? *ev.error : Error::Backend("protocol: ERROR without a body"));
      case ChannelEvent::Kind::kInfo:
      case ChannelEvent::Kind::kEof:
        continue;
      case ChannelEvent::Kind::kData:
        return Fail(Unexpected(ev, op));
    }
  }
}

/// Appends `data` to `dst`, keeping at most `cap` bytes in `dst` (0 = no cap) and at most
/// `total_cap` bytes in `dst` plus `other` together. Returns false when bytes were dropped.
bool KeepCapped(std::string* dst, const std::string& other, uint64_t cap, uint64_t total_cap,
                std::string_view data) {
  uint64_t room = data.size();
  if (cap != 0) room = std::min<uint64_t>(room, cap > dst->size() ? cap - dst->size() : 0);
  if (total_cap != 0) {
    uint64_t used = dst->size() + other.size();
    room = std::min<uint64_t>(room, total_cap > used ? total_cap - used : 0);
  }
  dst->append(data.substr(0, static_cast<size_t>(room)));
  return room == data.size();
}

}  // namespace

Result<CollectedExec> ExecCollect(Connection& conn, const ExecRequest& req,
                                  std::string_view stdin_data, const std::atomic<bool>* abandoned) {
  internal::ExecDeadline knobs;
  knobs.abandoned = abandoned;
  return internal::ExecCollectWithDeadline(conn, req, stdin_data, knobs);
}

// Defence in depth: sandboxd enforces timeout_ms, but if it fails to end the exec within
// timeout_ms + kill_grace_ms + slack, the host sends CANCEL, and gives up with kTimeout when
// even that is not answered in cancel_wait_ms.
Result<CollectedExec> internal::ExecCollectWithDeadline(Connection& conn, const ExecRequest& req,
                                                        std::string_view stdin_data,
                                                        const ExecDeadline& knobs) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeExecRequest(req)));

  // The host's own deadline: sandboxd enforces timeout_ms; if it fails to, the host cancels.
  int64_t deadline_ms = -1;
  if (req.timeout_ms > 0) {
    deadline_ms = static_cast<int64_t>(req.timeout_ms + req.kill_grace_ms) + knobs.slack_ms;
  }
  auto start = std::chrono::steady_clock::now();
  auto remaining = [&]() -> int64_t {
    if (deadline_ms < 0) return -1;
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    return std::max<int64_t>(0, deadline_ms - spent);
  };

  // stdin is written on its own thread: the command may need its output read before it reads
  // more input, and both directions are flow controlled.
  std::thread writer;
  if (req.stdin_pipe) {
    writer = std::thread([ch, stdin_data, timeout = deadline_ms] {
      // Errors are not interesting here: a command that exits without reading its stdin ends
      // the channel, and the terminal event tells the real story.
      if (ch->Write(stdin_data, timeout)) (void)ch->CloseWrite();
    });
  }
  struct JoinWriter {
    std::thread& t;
    ~JoinWriter() {
      if (t.joinable()) t.join();
    }
  } join_writer{writer};

  CollectedExec out;
  bool out_trunc = false;
  bool err_trunc = false;
  bool cancelled = false;
  bool abandoned = false;
  while (true) {
    int64_t wait = cancelled ? knobs.cancel_wait_ms : remaining();
    if (knobs.abandoned && !cancelled && (wait < 0 || wait > internal::kAbandonPollMs)) {
      wait = internal::kAbandonPollMs;
    }
    auto ev = ch->Next(wait);
    if (!ev) {
      if (ev.error().code() != ErrorCode::kTimeout) return Fail(ev.error());
      if (cancelled) {
        if (abandoned) return Fail(Error::Cancelled("exec: the caller went away"));
        return Fail(Error::Timeout("exec: sandboxd did not end the command after its timeout"));
      }
      if (knobs.abandoned && knobs.abandoned->load()) {
        abandoned = true;  // sandboxd kills the command's session on CANCEL
      } else if (remaining() != 0) {
        continue;  // only a poll
      }
      (void)ch->Cancel();
      cancelled = true;
      continue;
    }
    switch (ev->kind) {
      case ChannelEvent::Kind::kData:
        if (ev->stream == Stream::kStdout) {
          out_trunc |= !KeepCapped(&out.stdout_data, out.stderr_data, req.max_stdout_bytes,
                                   req.max_output_bytes, ev->payload);
        } else {
          err_trunc |= !KeepCapped(&out.stderr_data, out.stdout_data, req.max_stderr_bytes,
                                   req.max_output_bytes, ev->payload);
        }
        break;
      case ChannelEvent::Kind::kInfo:
      case ChannelEvent::Kind::kEof:
        break;
      case ChannelEvent::Kind::kResult: {
        ASB_ASSIGN_OR_RETURN(out.result, DecodeExecResult(ev->payload));
        out.result.stdout_truncated |= out_trunc;
        out.result.stderr_truncated |= err_trunc;
        return out;
      }
      case ChannelEvent::Kind::kError:
        if (abandoned) return Fail(Error::Cancelled("exec: the caller went away"));
        if (cancelled && ev->error && ev->error->code() == ErrorCode::kCancelled) {
          return Fail(
              Error::Timeout("exec: cancelled by the host after sandboxd missed its "
                             "timeout"));
        }
        return Fail(ev->error ? *ev->error : Error::Backend("protocol: ERROR without a body"));
    }
  }
}

Result<std::string> ReadFile(Connection& conn, const FileReadRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileReadRequest(req)));
  std::string data;
  while (true) {
    ASB_ASSIGN_OR_RETURN(ChannelEvent ev, ch->Next());
    switch (ev.kind) {
      case ChannelEvent::Kind::kData:
        if (ev.stream != Stream::kStdout) return Fail(Unexpected(ev, "file.read"));
        data.append(ev.payload);
        break;
      case ChannelEvent::Kind::kInfo:
      case ChannelEvent::Kind::kEof:
        break;
      case ChannelEvent::Kind::kResult:
        return data;
      case ChannelEvent::Kind::kError:
        return Fail(ev.error ? *ev.error : Error::Backend("protocol: ERROR without a body"));
    }
  }
}

Result<FileStat> WriteFile(Connection& conn, const FileWriteRequest& req, std::string_view data) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileWriteRequest(req)));
  Status sent = ch->Write(data);
  if (sent) sent = ch->CloseWrite();
  // Whether or not the upload went through, the terminal event says why (e.g. sandboxd ends
  // the channel with payload_too_large and the Write above then fails with kConflict).
  auto result = AwaitResult(*ch, "file.write");
  if (!result) return Fail(result.error());
  if (!sent) return Fail(sent.error());
  return DecodeFileStat(*result);
}

Result<std::vector<FileStat>> ListFiles(Connection& conn, const FileListRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileListRequest(req)));
  std::vector<FileStat> entries;
  uint64_t bytes = 0;  // sum of ListingBytes: sandboxd enforces max_bytes, but may be hostile
  while (true) {
    ASB_ASSIGN_OR_RETURN(ChannelEvent ev, ch->Next());
    switch (ev.kind) {
      case ChannelEvent::Kind::kInfo: {
        ASB_ASSIGN_OR_RETURN(std::vector<FileStat> batch, DecodeFileStatList(ev.payload));
        if (req.max_entries != 0 && entries.size() + batch.size() > req.max_entries) {
          (void)ch->Cancel();
          return Fail(Error::LimitExceeded("listing has more than " +
                                           std::to_string(req.max_entries) + " entries"));
        }
        for (const FileStat& e : batch) bytes += ListingBytes(e);
        if (bytes > req.max_bytes) {
          (void)ch->Cancel();
          return Fail(Error::TooLarge(ListingTooLargeMessage(req.max_bytes)));
        }
        std::move(batch.begin(), batch.end(), std::back_inserter(entries));
        break;
      }
      case ChannelEvent::Kind::kEof:
        break;
      case ChannelEvent::Kind::kResult:
        return entries;
      case ChannelEvent::Kind::kError:
        return Fail(ev.error ? *ev.error : Error::Backend("protocol: ERROR without a body"));
      case ChannelEvent::Kind::kData:
        return Fail(Unexpected(ev, "file.list"));
    }
  }
}

Result<FileStat> StatFile(Connection& conn, const FileStatRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileStatRequest(req)));
  ASB_ASSIGN_OR_RETURN(std::string body, AwaitResult(*ch, "file.stat"));
  return DecodeFileStat(body);
}

Result<FileStat> MakeDir(Connection& conn, const FileMkdirRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileMkdirRequest(req)));
  ASB_ASSIGN_OR_RETURN(std::string body, AwaitResult(*ch, "file.mkdir"));
  return DecodeFileStat(body);
}

Status RemoveFile(Connection& conn, const FileRemoveRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileRemoveRequest(req)));
  ASB_TRY(AwaitResult(*ch, "file.remove"));
  return {};
}

Result<FileStat> MoveFile(Connection& conn, const FileMoveRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeFileMoveRequest(req)));
  ASB_ASSIGN_OR_RETURN(std::string body, AwaitResult(*ch, "file.move"));
  return DecodeFileStat(body);
}

Result<uint64_t> KillAll(Connection& conn) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(R"({"op":"kill.all"})"));
  ASB_ASSIGN_OR_RETURN(std::string body, AwaitResult(*ch, "kill.all"));
  // {"killed": N}; a missing member means 0 (additive-field rule).
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return Fail(Error::Backend("protocol: malformed kill.all result"));
  const boost::json::value* killed = v.as_object().if_contains("killed");
  if (killed == nullptr) return uint64_t{0};
  if (killed->is_uint64()) return killed->get_uint64();
  if (killed->is_int64() && killed->get_int64() >= 0) {
    return static_cast<uint64_t>(killed->get_int64());
  }
  return Fail(Error::Backend("protocol: malformed kill.all result: \"killed\" must be a count"));
}

}  // namespace asb::protocol
