// FileService: files, directories and directory tars of a sandbox (file_service.h).
#include "core/file_service.h"

#include "core/paths.h"
#include "core/sandbox_registry.h"
#include "core/wire_adapter.h"
#include "protocol/client.h"

namespace asb::core {

namespace {

/// How long a file read waits for sandboxd's next frame before giving up, milliseconds. No
/// request may hang the server.
constexpr int64_t kSandboxdAnswerMs = 60'000;

/// How long a tar export or import waits for sandboxd's next frame, milliseconds.
constexpr int64_t kTarAnswerMs = 120'000;

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
protocol::FileWriteRequest WriteRequestFor(const std::string& p,
                                           const std::optional<uint32_t>& mode,
                                           uint64_t max_file_bytes,
                                           const protocol::FileScope& scope) {
  protocol::FileWriteRequest req;
  req.path = p;
  req.scope = scope;
  req.mode = mode.value_or(0644);
  req.max_bytes = max_file_bytes;
  return req;
}

// Where sandboxd resolves a normalized path, always as the sandbox user: beneath /workspace for
// a path in it (a symlink there cannot lead out, as before absolute paths were taken), from the
// sandbox's own root for any other.
protocol::FileScope ScopeOf(const FilePath& fp) {
  protocol::FileScope scope;
  scope.beneath_workspace = fp.in_workspace;
  return scope;
}

}  // namespace

Result<FileReadStream> FileService::OpenFileRead(const std::string& owner, const std::string& id,
                                                 const std::string& path) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileReadRequest req;
  req.path = p;
  req.scope = scope;
  ASB_ASSIGN_OR_RETURN(auto channel,
                       reg_.Checked(*e, act, conn->Open(protocol::EncodeFileReadRequest(req))));
  auto first = channel->Next(kSandboxdAnswerMs);
  if (!first) {
    (void)channel->Cancel();
    return Fail(std::move(first)
                    .error()
                    .WithCode(ErrorCode::kBackend)
                    .WithContext("read " + p + ": sandboxd did not answer"));
  }
  protocol::ChannelEvent ev = std::move(*first);
  if (ev.kind != protocol::ChannelEvent::Kind::kInfo) {
    if (!ev.terminal()) (void)channel->Cancel();
    return Fail(EventError(ev, "read " + p));
  }
  ASB_ASSIGN_OR_RETURN(protocol::FileStat wire_stat, protocol::DecodeFileStat(ev.payload));
  FileStat st = wire::FromWire(wire_stat);
  if (st.type != "file") {
    (void)channel->Cancel();
    return Fail(Error::InvalidArgument(p + " is a " + st.type + ", not a file"));
  }
  if (st.size > reg_.cfg.limits.max_file_bytes) {
    (void)channel->Cancel();
    return Fail(Error::TooLarge(p + " is " + std::to_string(st.size) +
                                " bytes, more than the limit of " +
                                std::to_string(reg_.cfg.limits.max_file_bytes)));
  }
  FileReadStream out;
  out.stat = std::move(st);
  out.events = wire::WrapChannel(std::move(channel), wire::Payloads::kFileRead);
  out.keepalive = act.mark;
  return out;
}

Result<std::string> FileService::ReadFile(const std::string& owner, const std::string& id,
                                          const std::string& path) {
  ASB_ASSIGN_OR_RETURN(FileReadStream rs, OpenFileRead(owner, id, path));
  std::string data;
  data.reserve(rs.stat.size);
  for (;;) {
    auto next = rs.events->Next(kSandboxdAnswerMs);
    if (!next) {
      (void)rs.events->Cancel();
      return Fail(std::move(next)
                      .error()
                      .WithCode(ErrorCode::kBackend)
                      .WithContext("read " + rs.stat.path + ": sandboxd stalled"));
    }
    StreamEvent ev = std::move(*next);
    switch (ev.kind) {
      case StreamEvent::Kind::kOutput:
        if (data.size() + ev.data.size() > reg_.cfg.limits.max_file_bytes) {
          (void)rs.events->Cancel();
          return Fail(Error::TooLarge(rs.stat.path + " grew beyond the file size limit"));
        }
        data += ev.data;
        break;
      case StreamEvent::Kind::kEnd:
      case StreamEvent::Kind::kInfo:
        break;
      case StreamEvent::Kind::kDone:
        return data;
      case StreamEvent::Kind::kError:
        return Fail(ev.error ? *ev.error : Error::Backend("read " + rs.stat.path + " failed"));
    }
  }
}

Result<FileWriteStream> FileService::OpenFileWrite(
    const std::string& owner, const std::string& id, const std::string& path,
    std::optional<uint32_t> mode, std::optional<uint64_t> size_hint,
    const std::map<std::string, std::string>& metadata) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_TRY(CheckMode(mode));
  if (size_hint) ASB_TRY(CheckFileSize(*size_hint, reg_.cfg.limits.max_file_bytes));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act,
                       reg_.BeginActivity(e, SandboxRegistry::Activity::kStream));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  auto req = WriteRequestFor(p, mode, reg_.cfg.limits.max_file_bytes, scope);
  req.metadata = metadata;
  ASB_ASSIGN_OR_RETURN(auto channel,
                       reg_.Checked(*e, act, conn->Open(protocol::EncodeFileWriteRequest(req))));
  FileWriteStream out;
  out.events = wire::WrapChannel(std::move(channel), wire::Payloads::kFileWrite);
  out.keepalive = act.mark;
  return out;
}

Result<FileStat> FileService::WriteFile(const std::string& owner, const std::string& id,
                                        const std::string& path, std::string_view data,
                                        std::optional<uint32_t> mode) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_TRY(CheckMode(mode));
  ASB_TRY(CheckFileSize(data.size(), reg_.cfg.limits.max_file_bytes));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  const auto req = WriteRequestFor(p, mode, reg_.cfg.limits.max_file_bytes, scope);
  return wire::FromWire(reg_.Checked(*e, act, protocol::WriteFile(*conn, req, data)));
}

Result<std::vector<FileStat>> FileService::ListFiles(const std::string& owner,
                                                     const std::string& id, const std::string& path,
                                                     bool recursive, bool with_metadata) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileListRequest req;
  req.path = p;
  req.scope = scope;
  req.recursive = recursive;
  req.metadata = with_metadata;
  return wire::FromWire(reg_.Checked(*e, act, protocol::ListFiles(*conn, req)));
}

Result<FileStat> FileService::StatFile(const std::string& owner, const std::string& id,
                                       const std::string& path, bool with_metadata) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileStatRequest req;
  req.path = p;
  req.scope = scope;
  req.metadata = with_metadata;
  return wire::FromWire(reg_.Checked(*e, act, protocol::StatFile(*conn, req)));
}

Result<FileStat> FileService::MakeDir(const std::string& owner, const std::string& id,
                                      const std::string& path, std::optional<uint32_t> mode) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_TRY(CheckMode(mode));
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileMkdirRequest req;
  req.path = p;
  req.scope = scope;
  req.mode = mode.value_or(0755);
  req.parents = true;
  return wire::FromWire(reg_.Checked(*e, act, protocol::MakeDir(*conn, req)));
}

Status FileService::RemoveFile(const std::string& owner, const std::string& id,
                               const std::string& path, bool recursive) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  if (p == kWorkspaceDir || p == "/") {
    return Fail(Error::InvalidArgument(p + " itself cannot be removed"));
  }
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileRemoveRequest req;
  req.path = p;
  req.scope = scope;
  req.recursive = recursive;
  return reg_.Checked(*e, act, protocol::RemoveFile(*conn, req));
}

Result<FileStat> FileService::MoveFile(const std::string& owner, const std::string& id,
                                       const std::string& from, const std::string& to,
                                       bool overwrite) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath from_path, NormalizeFilePath(from));
  ASB_ASSIGN_OR_RETURN(FilePath to_path, NormalizeFilePath(to));
  const std::string& f = from_path.path;
  const std::string& t = to_path.path;
  for (const std::string& end : {f, t}) {
    if (end == kWorkspaceDir || end == "/") {
      return Fail(Error::InvalidArgument(end + " itself cannot be moved or replaced"));
    }
  }
  // One scope for both ends: beneath /workspace only when both are in it.
  const protocol::FileScope scope =
      ScopeOf(FilePath{"", from_path.in_workspace && to_path.in_workspace});
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  protocol::FileMoveRequest req;
  req.from = f;
  req.to = t;
  req.scope = scope;
  req.overwrite = overwrite;
  return wire::FromWire(reg_.Checked(*e, act, protocol::MoveFile(*conn, req)));
}

Status FileService::ExportDirectory(const std::string& owner, const std::string& id,
                                    const std::string& path,
                                    const std::function<Status(std::string_view)>& sink) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(auto ch, reg_.Checked(*e, act, wire::OpenTarExport(*conn, p, scope)));
  while (true) {
    auto ev = ch->Next(kTarAnswerMs);
    if (!ev) {
      (void)ch->Cancel();
      return Fail(Error::Backend("tar export: sandboxd did not answer"));
    }
    using Kind = protocol::ChannelEvent::Kind;
    if (ev->kind == Kind::kData) {
      if (Status st = sink(ev->payload); !st) {
        (void)ch->Cancel();
        return st;
      }
    } else if (ev->kind == Kind::kResult) {
      return {};
    } else if (ev->kind == Kind::kError) {
      return Fail(ev->error ? *ev->error : Error::Backend("tar export failed"));
    }
  }
}

Result<TarResult> FileService::ImportDirectory(const std::string& owner, const std::string& id,
                                               const std::string& path,
                                               const std::function<Result<std::string>()>& source) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  ASB_ASSIGN_OR_RETURN(FilePath fp, NormalizeFilePath(path));
  const std::string p = fp.path;
  const protocol::FileScope scope = ScopeOf(fp);
  ASB_ASSIGN_OR_RETURN(SandboxRegistry::Active act, reg_.BeginActivity(e));
  ASB_ASSIGN_OR_RETURN(auto conn, reg_.ConnectionFor(*e, act));
  ASB_ASSIGN_OR_RETURN(auto ch,
                       reg_.Checked(*e, act, wire::OpenTarImport(*conn, p, false, 0, scope)));
  while (true) {
    auto chunk = source();
    if (!chunk) {
      (void)ch->Cancel();
      return Fail(std::move(chunk).error());
    }
    if (chunk->empty()) break;
    if (!ch->Write(*chunk, kTarAnswerMs)) break;  // sandboxd refused: its ERROR follows
  }
  (void)ch->CloseWrite();
  while (true) {
    auto ev = ch->Next(kTarAnswerMs);
    if (!ev) {
      (void)ch->Cancel();
      return Fail(Error::Backend("tar import: sandboxd did not answer"));
    }
    using Kind = protocol::ChannelEvent::Kind;
    if (ev->kind == Kind::kResult) return wire::FromWire(protocol::DecodeTarResult(ev->payload));
    if (ev->kind == Kind::kError) {
      return Fail(ev->error ? *ev->error : Error::Backend("tar import failed"));
    }
  }
}

}  // namespace asb::core
