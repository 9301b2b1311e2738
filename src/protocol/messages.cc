// JSON codecs of the protocol messages (see messages.h and docs/design/sandbox-protocol.md,
// section 7 for the conventions): one field table per message (field_table.h) drives both its
// encoder and its decoder, so a member is named on the wire exactly once.
//
// Encoders write the members in table order, which is the struct's member order; decoders parse
// with invalid UTF-8 allowed (file names are bytes), check each member's type strictly, ignore
// unknown members, and convert every failure into a kBackend "protocol: ..." error; no exception
// leaves this file. The golden strings of messages_test.cc pin the bytes.
#include "protocol/messages.h"

#include <tuple>

#include "protocol/command_json.h"
#include "protocol/field_table.h"
#include "protocol/json_util.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<Hello> {
  static constexpr std::string_view kWhat = "HELLO";
  static constexpr auto kFields = std::tuple(
      Field("min_version", &Hello::min_version), Field("max_version", &Hello::max_version),
      Field("version", &Hello::version, Emit::kUnlessDefault),  // only in sandboxd's answer
      Field("software", &Hello::software));
};

template <>
struct MessageSchema<ExecRequest> {
  static constexpr std::string_view kWhat = "exec request";
  static constexpr std::string_view kOp = "exec";
  static constexpr auto kFields =
      std::tuple_cat(CommandFields<ExecRequest>(),
                     std::tuple(Field("timeout_ms", &ExecRequest::timeout_ms),
                                Field("kill_grace_ms", &ExecRequest::kill_grace_ms),
                                Field("stdin_pipe", &ExecRequest::stdin_pipe),
                                Field("max_stdout_bytes", &ExecRequest::max_stdout_bytes),
                                Field("max_stderr_bytes", &ExecRequest::max_stderr_bytes),
                                Field("max_output_bytes", &ExecRequest::max_output_bytes),
                                Field("pty", &ExecRequest::pty)));
};

// oom_killed and pids_limited: sandboxd's own where the kernel is the sandbox's (a microVM,
// BackendCapabilities::exec_limit_hits), else the host's, from the sandbox's cgroups.
// pids_limited is written only when true, so results of sandboxd elsewhere keep their bytes.
template <>
struct MessageSchema<ExecResult> {
  static constexpr std::string_view kWhat = "exec result";
  static constexpr auto kFields = std::tuple(
      Field("exit_code", &ExecResult::exit_code), Field("signal", &ExecResult::signal),
      Field("timed_out", &ExecResult::timed_out),
      Field("stdout_truncated", &ExecResult::stdout_truncated),
      Field("stderr_truncated", &ExecResult::stderr_truncated),
      Field("stdout_bytes", &ExecResult::stdout_bytes),
      Field("stderr_bytes", &ExecResult::stderr_bytes),
      Field("duration_ms", &ExecResult::duration_ms), Field("oom_killed", &ExecResult::oom_killed),
      Field("pids_limited", &ExecResult::pids_limited, Emit::kUnlessDefault));
};

template <>
struct MessageSchema<FileStat> {
  static constexpr std::string_view kWhat = "FileStat";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileStat::path), Field("name", &FileStat::name),
      Field("type", &FileStat::type), Field("size", &FileStat::size),
      Field("mode", &FileStat::mode), Field("uid", &FileStat::uid), Field("gid", &FileStat::gid),
      Field("mtime_ms", &FileStat::mtime_ms), Field("link_target", &FileStat::link_target),
      Field("metadata", &FileStat::metadata));
};

// The nested "scope" object of every file and tar request.
template <>
struct MessageSchema<FileScope> {
  static constexpr std::string_view kWhat = "scope";
  static constexpr auto kFields = std::tuple(
      Field("user", &FileScope::user), Field("beneath_workspace", &FileScope::beneath_workspace));
};

template <>
struct MessageSchema<FileReadRequest> {
  static constexpr std::string_view kWhat = "file.read request";
  static constexpr std::string_view kOp = "file.read";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileReadRequest::path), Field("offset", &FileReadRequest::offset),
      Field("length", &FileReadRequest::length), Field("scope", &FileReadRequest::scope));
};

template <>
struct MessageSchema<FileWriteRequest> {
  static constexpr std::string_view kWhat = "file.write request";
  static constexpr std::string_view kOp = "file.write";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileWriteRequest::path), Field("mode", &FileWriteRequest::mode),
      Field("make_parents", &FileWriteRequest::make_parents),
      Field("append", &FileWriteRequest::append), Field("max_bytes", &FileWriteRequest::max_bytes),
      Field("scope", &FileWriteRequest::scope), Field("metadata", &FileWriteRequest::metadata));
};

template <>
struct MessageSchema<FileListRequest> {
  static constexpr std::string_view kWhat = "file.list request";
  static constexpr std::string_view kOp = "file.list";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileListRequest::path), Field("recursive", &FileListRequest::recursive),
      Field("max_entries", &FileListRequest::max_entries),
      Field("max_bytes", &FileListRequest::max_bytes), Field("scope", &FileListRequest::scope),
      Field("metadata", &FileListRequest::metadata));
};

template <>
struct MessageSchema<FileWatchRequest> {
  static constexpr std::string_view kWhat = "file.watch request";
  static constexpr std::string_view kOp = "file.watch";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileWatchRequest::path), Field("recursive", &FileWatchRequest::recursive),
      Field("max_queue", &FileWatchRequest::max_queue), Field("scope", &FileWatchRequest::scope),
      Field("entries", &FileWatchRequest::entries));
};

template <>
struct MessageSchema<FileWatchArmed> {
  static constexpr std::string_view kWhat = "file.watch armed";
  static constexpr auto kFields =
      std::tuple(Field("path", &FileWatchArmed::path), Field("watches", &FileWatchArmed::watches));
};

template <>
struct MessageSchema<FileWatchEvent> {
  static constexpr std::string_view kWhat = "file.watch event";
  static constexpr auto kFields =
      std::tuple(Field("type", &FileWatchEvent::type), Field("path", &FileWatchEvent::path),
                 Field("dir", &FileWatchEvent::dir), Field("dropped", &FileWatchEvent::dropped),
                 Field("entry", &FileWatchEvent::entry));
};

template <>
struct MessageSchema<FileWatchEnd> {
  static constexpr std::string_view kWhat = "file.watch end";
  static constexpr auto kFields = std::tuple(Field("reason", &FileWatchEnd::reason));
};

template <>
struct MessageSchema<FileStatRequest> {
  static constexpr std::string_view kWhat = "file.stat request";
  static constexpr std::string_view kOp = "file.stat";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileStatRequest::path),
      Field("follow_symlinks", &FileStatRequest::follow_symlinks),
      Field("scope", &FileStatRequest::scope), Field("metadata", &FileStatRequest::metadata));
};

template <>
struct MessageSchema<FileMkdirRequest> {
  static constexpr std::string_view kWhat = "file.mkdir request";
  static constexpr std::string_view kOp = "file.mkdir";
  static constexpr auto kFields = std::tuple(
      Field("path", &FileMkdirRequest::path), Field("mode", &FileMkdirRequest::mode),
      Field("parents", &FileMkdirRequest::parents), Field("scope", &FileMkdirRequest::scope));
};

template <>
struct MessageSchema<FileRemoveRequest> {
  static constexpr std::string_view kWhat = "file.remove request";
  static constexpr std::string_view kOp = "file.remove";
  static constexpr auto kFields = std::tuple(Field("path", &FileRemoveRequest::path),
                                             Field("recursive", &FileRemoveRequest::recursive),
                                             Field("scope", &FileRemoveRequest::scope));
};

template <>
struct MessageSchema<FileMoveRequest> {
  static constexpr std::string_view kWhat = "file.move request";
  static constexpr std::string_view kOp = "file.move";
  static constexpr auto kFields = std::tuple(
      Field("from", &FileMoveRequest::from), Field("to", &FileMoveRequest::to),
      Field("overwrite", &FileMoveRequest::overwrite), Field("scope", &FileMoveRequest::scope));
};

template <>
struct MessageSchema<TarExportRequest> {
  static constexpr std::string_view kWhat = "tar.export request";
  static constexpr std::string_view kOp = "tar.export";
  static constexpr auto kFields =
      std::tuple(Field("path", &TarExportRequest::path), Field("scope", &TarExportRequest::scope));
};

template <>
struct MessageSchema<TarImportRequest> {
  static constexpr std::string_view kWhat = "tar.import request";
  static constexpr std::string_view kOp = "tar.import";
  static constexpr auto kFields = std::tuple(Field("path", &TarImportRequest::path),
                                             Field("max_bytes", &TarImportRequest::max_bytes),
                                             Field("max_entries", &TarImportRequest::max_entries),
                                             Field("clear_first", &TarImportRequest::clear_first),
                                             Field("scope", &TarImportRequest::scope));
};

template <>
struct MessageSchema<TarResult> {
  static constexpr std::string_view kWhat = "tar result";
  static constexpr auto kFields =
      std::tuple(Field("entries", &TarResult::entries), Field("bytes", &TarResult::bytes));
};

// The member sys_errno is "errno" on the wire.
template <>
struct MessageSchema<WireError> {
  static constexpr std::string_view kWhat = "ERROR";
  static constexpr auto kFields =
      std::tuple(Field("code", &WireError::code), Field("errno", &WireError::sys_errno),
                 Field("message", &WireError::message));
};

}  // namespace internal

using internal::Decode;
using internal::Encode;

// ---- errors ----------------------------------------------------------------------------------

// sandboxd's errors travel whole: what its calls failed on (paths, errno words) is inside the
// sandbox, the client's own (docs/design/error-handling.md).
WireError ToWireError(const Error& e) {
  return WireError{std::string(e.code_name()), e.sys_errno(), e.detail()};
}

Error FromWireError(const WireError& w) {
  return Error(ErrorCodeFromName(w.code), w.message, w.sys_errno);
}

std::string ListingTooLargeMessage(uint64_t max_bytes) {
  return "listing exceeds " + std::to_string(max_bytes) +
         " bytes; list a narrower path or without recursive";
}

// ---- handshake and op name -------------------------------------------------------------------

std::string EncodeHello(const Hello& m) { return Encode(m); }
Result<Hello> DecodeHello(std::string_view text) { return Decode<Hello>(text); }

Result<std::string> DecodeOpName(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(internal::json::object obj, internal::ParseObject(text, "OPEN"));
  internal::Reader r(obj, "OPEN");
  std::string op;
  ASB_TRY(r.Get("op", &op));
  if (op.empty()) return Fail(internal::Malformed("OPEN", "missing \"op\""));
  return op;
}

// ---- exec ------------------------------------------------------------------------------------

std::string EncodeExecRequest(const ExecRequest& m) { return Encode(m); }
Result<ExecRequest> DecodeExecRequest(std::string_view text) { return Decode<ExecRequest>(text); }
std::string EncodeExecResult(const ExecResult& m) { return Encode(m); }
Result<ExecResult> DecodeExecResult(std::string_view text) { return Decode<ExecResult>(text); }

// ---- files -----------------------------------------------------------------------------------

std::string EncodeFileStat(const FileStat& m) { return Encode(m); }
Result<FileStat> DecodeFileStat(std::string_view text) { return Decode<FileStat>(text); }

std::string EncodeFileStatList(const std::vector<FileStat>& entries) {
  return internal::EncodeList("entries", entries);
}
Result<std::vector<FileStat>> DecodeFileStatList(std::string_view text) {
  return internal::DecodeList<FileStat>(text, "file list", "entries");
}

std::string EncodeFileReadRequest(const FileReadRequest& m) { return Encode(m); }
Result<FileReadRequest> DecodeFileReadRequest(std::string_view text) {
  return Decode<FileReadRequest>(text);
}
std::string EncodeFileWriteRequest(const FileWriteRequest& m) { return Encode(m); }
Result<FileWriteRequest> DecodeFileWriteRequest(std::string_view text) {
  return Decode<FileWriteRequest>(text);
}
std::string EncodeFileListRequest(const FileListRequest& m) { return Encode(m); }
Result<FileListRequest> DecodeFileListRequest(std::string_view text) {
  return Decode<FileListRequest>(text);
}
std::string EncodeFileStatRequest(const FileStatRequest& m) { return Encode(m); }
Result<FileStatRequest> DecodeFileStatRequest(std::string_view text) {
  return Decode<FileStatRequest>(text);
}
std::string EncodeFileMkdirRequest(const FileMkdirRequest& m) { return Encode(m); }
Result<FileMkdirRequest> DecodeFileMkdirRequest(std::string_view text) {
  return Decode<FileMkdirRequest>(text);
}
std::string EncodeFileRemoveRequest(const FileRemoveRequest& m) { return Encode(m); }
Result<FileRemoveRequest> DecodeFileRemoveRequest(std::string_view text) {
  return Decode<FileRemoveRequest>(text);
}
std::string EncodeFileMoveRequest(const FileMoveRequest& m) { return Encode(m); }
Result<FileMoveRequest> DecodeFileMoveRequest(std::string_view text) {
  return Decode<FileMoveRequest>(text);
}
std::string EncodeFileWatchRequest(const FileWatchRequest& m) { return Encode(m); }
Result<FileWatchRequest> DecodeFileWatchRequest(std::string_view text) {
  return Decode<FileWatchRequest>(text);
}
std::string EncodeFileWatchArmed(const FileWatchArmed& m) { return Encode(m); }
Result<FileWatchArmed> DecodeFileWatchArmed(std::string_view text) {
  return Decode<FileWatchArmed>(text);
}
std::string EncodeFileWatchEvent(const FileWatchEvent& m) { return Encode(m); }
Result<FileWatchEvent> DecodeFileWatchEvent(std::string_view text) {
  return Decode<FileWatchEvent>(text);
}
std::string EncodeFileWatchEnd(const FileWatchEnd& m) { return Encode(m); }
Result<FileWatchEnd> DecodeFileWatchEnd(std::string_view text) {
  return Decode<FileWatchEnd>(text);
}

// ---- tar -------------------------------------------------------------------------------------

std::string EncodeTarExportRequest(const TarExportRequest& m) { return Encode(m); }
Result<TarExportRequest> DecodeTarExportRequest(std::string_view text) {
  return Decode<TarExportRequest>(text);
}
std::string EncodeTarImportRequest(const TarImportRequest& m) { return Encode(m); }
Result<TarImportRequest> DecodeTarImportRequest(std::string_view text) {
  return Decode<TarImportRequest>(text);
}
std::string EncodeTarResult(const TarResult& m) { return Encode(m); }
Result<TarResult> DecodeTarResult(std::string_view text) { return Decode<TarResult>(text); }

// ---- ERROR body ------------------------------------------------------------------------------

std::string EncodeWireError(const WireError& m) { return Encode(m); }
Result<WireError> DecodeWireError(std::string_view text) { return Decode<WireError>(text); }

}  // namespace asb::protocol
