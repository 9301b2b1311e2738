// JSON encoders and decoders of the protocol messages (see messages.h and
// docs/design/sandbox-protocol.md, section 7 for the conventions).
//
// Encoders build a boost::json::object member by member; boost::json::object keeps insertion
// order, so the serialized bytes follow the struct's member order and are deterministic.
// Decoders parse with invalid UTF-8 allowed (file names are bytes), check each member's type
// strictly, ignore unknown members, and convert every failure into a kBackend "protocol: ..."
// error; no exception leaves this file.
#include "protocol/messages.h"

#include <boost/json.hpp>

#include "protocol/command_json.h"
#include "protocol/json_util.h"

namespace asb::protocol {

namespace json = boost::json;

namespace {

using namespace internal;  // NOLINT: the JSON helpers shared with proc_messages.cc

// ---- FileScope (nested object "scope") -------------------------------------------------------

json::object ScopeToJson(const FileScope& s) {
  json::object o;
  o["user"] = Sv(s.user);
  o["beneath_workspace"] = s.beneath_workspace;
  return o;
}

Status ReadScope(const Reader& parent, FileScope* out) {
  ASB_ASSIGN_OR_RETURN(const json::object* o, parent.Object("scope"));
  if (o == nullptr) return {};
  Reader r(*o, "scope");
  ASB_TRY(r.Get("user", &out->user));
  ASB_TRY(r.Get("beneath_workspace", &out->beneath_workspace));
  return {};
}

// ---- FileStat --------------------------------------------------------------------------------

json::object FileStatToJson(const FileStat& m) {
  json::object o;
  o["path"] = Sv(m.path);
  o["name"] = Sv(m.name);
  o["type"] = Sv(m.type);
  o["size"] = m.size;
  o["mode"] = m.mode;
  o["uid"] = m.uid;
  o["gid"] = m.gid;
  o["mtime_ms"] = m.mtime_ms;
  o["link_target"] = Sv(m.link_target);
  return o;
}

Result<FileStat> FileStatFromJson(const json::object& obj) {
  Reader r(obj, "FileStat");
  FileStat m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("name", &m.name));
  ASB_TRY(r.Get("type", &m.type));
  ASB_TRY(r.Get("size", &m.size));
  ASB_TRY(r.Get("mode", &m.mode));
  ASB_TRY(r.Get("uid", &m.uid));
  ASB_TRY(r.Get("gid", &m.gid));
  ASB_TRY(r.Get("mtime_ms", &m.mtime_ms));
  ASB_TRY(r.Get("link_target", &m.link_target));
  return m;
}

}  // namespace

// ---- errors ----------------------------------------------------------------------------------

WireError ToWireError(const Error& e) {
  return WireError{std::string(e.code_name()), e.sys_errno(), e.message()};
}

Error FromWireError(const WireError& w) {
  return Error(ErrorCodeFromName(w.code), w.message, w.sys_errno);
}

// ---- handshake -------------------------------------------------------------------------------

std::string EncodeHello(const Hello& m) {
  json::object o;
  o["min_version"] = m.min_version;
  o["max_version"] = m.max_version;
  if (m.version != 0) o["version"] = m.version;
  o["software"] = Sv(m.software);
  return Serialize(o);
}

Result<Hello> DecodeHello(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "HELLO"));
  Reader r(obj, "HELLO");
  Hello m;
  ASB_TRY(r.Get("min_version", &m.min_version));
  ASB_TRY(r.Get("max_version", &m.max_version));
  ASB_TRY(r.Get("version", &m.version));
  ASB_TRY(r.Get("software", &m.software));
  return m;
}

Result<std::string> DecodeOpName(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "OPEN"));
  Reader r(obj, "OPEN");
  std::string op;
  ASB_TRY(r.Get("op", &op));
  if (op.empty()) return Fail(Malformed("OPEN", "missing \"op\""));
  return op;
}

// ---- exec ------------------------------------------------------------------------------------

std::string EncodeExecRequest(const ExecRequest& m) {
  json::object o = WithOp("exec");
  PutCommandFields(m, &o);
  o["timeout_ms"] = m.timeout_ms;
  o["kill_grace_ms"] = m.kill_grace_ms;
  o["stdin_pipe"] = m.stdin_pipe;
  o["max_stdout_bytes"] = m.max_stdout_bytes;
  o["max_stderr_bytes"] = m.max_stderr_bytes;
  o["max_output_bytes"] = m.max_output_bytes;
  PutPty(m.pty, &o);
  return Serialize(o);
}

Result<ExecRequest> DecodeExecRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "exec request"));
  Reader r(obj, "exec request");
  ASB_TRY(CheckOp(r, "exec"));
  ExecRequest m;
  ASB_TRY(ReadCommandFields(r, &m));
  ASB_TRY(r.Get("timeout_ms", &m.timeout_ms));
  ASB_TRY(r.Get("kill_grace_ms", &m.kill_grace_ms));
  ASB_TRY(r.Get("stdin_pipe", &m.stdin_pipe));
  ASB_TRY(r.Get("max_stdout_bytes", &m.max_stdout_bytes));
  ASB_TRY(r.Get("max_stderr_bytes", &m.max_stderr_bytes));
  ASB_TRY(r.Get("max_output_bytes", &m.max_output_bytes));
  ASB_TRY(ReadPty(r, &m.pty));
  return m;
}

std::string EncodeExecResult(const ExecResult& m) {
  json::object o;
  o["exit_code"] = m.exit_code;
  o["signal"] = m.signal;
  o["timed_out"] = m.timed_out;
  o["stdout_truncated"] = m.stdout_truncated;
  o["stderr_truncated"] = m.stderr_truncated;
  o["stdout_bytes"] = m.stdout_bytes;
  o["stderr_bytes"] = m.stderr_bytes;
  o["duration_ms"] = m.duration_ms;
  o["oom_killed"] = m.oom_killed;
  return Serialize(o);
}

Result<ExecResult> DecodeExecResult(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "exec result"));
  Reader r(obj, "exec result");
  ExecResult m;
  ASB_TRY(r.Get("exit_code", &m.exit_code));
  ASB_TRY(r.Get("signal", &m.signal));
  ASB_TRY(r.Get("timed_out", &m.timed_out));
  ASB_TRY(r.Get("stdout_truncated", &m.stdout_truncated));
  ASB_TRY(r.Get("stderr_truncated", &m.stderr_truncated));
  ASB_TRY(r.Get("stdout_bytes", &m.stdout_bytes));
  ASB_TRY(r.Get("stderr_bytes", &m.stderr_bytes));
  ASB_TRY(r.Get("duration_ms", &m.duration_ms));
  ASB_TRY(r.Get("oom_killed", &m.oom_killed));
  return m;
}

// ---- files -----------------------------------------------------------------------------------

std::string EncodeFileStat(const FileStat& m) { return Serialize(FileStatToJson(m)); }

Result<FileStat> DecodeFileStat(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "FileStat"));
  return FileStatFromJson(obj);
}

std::string EncodeFileStatList(const std::vector<FileStat>& entries) {
  json::array arr;
  arr.reserve(entries.size());
  for (const auto& e : entries) arr.emplace_back(FileStatToJson(e));
  json::object o;
  o["entries"] = std::move(arr);
  return Serialize(o);
}

Result<std::vector<FileStat>> DecodeFileStatList(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file list"));
  std::vector<FileStat> out;
  const json::value* v = obj.if_contains("entries");
  if (v == nullptr) return out;
  if (!v->is_array()) return Fail(Malformed("file list", "\"entries\" must be an array"));
  out.reserve(v->get_array().size());
  for (const json::value& e : v->get_array()) {
    if (!e.is_object()) return Fail(Malformed("file list", "entries must be objects"));
    ASB_ASSIGN_OR_RETURN(FileStat st, FileStatFromJson(e.get_object()));
    out.push_back(std::move(st));
  }
  return out;
}

std::string EncodeFileReadRequest(const FileReadRequest& m) {
  json::object o = WithOp("file.read");
  o["path"] = Sv(m.path);
  o["offset"] = m.offset;
  o["length"] = m.length;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileReadRequest> DecodeFileReadRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.read request"));
  Reader r(obj, "file.read request");
  ASB_TRY(CheckOp(r, "file.read"));
  FileReadRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("offset", &m.offset));
  ASB_TRY(r.Get("length", &m.length));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileWriteRequest(const FileWriteRequest& m) {
  json::object o = WithOp("file.write");
  o["path"] = Sv(m.path);
  o["mode"] = m.mode;
  o["make_parents"] = m.make_parents;
  o["append"] = m.append;
  o["max_bytes"] = m.max_bytes;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileWriteRequest> DecodeFileWriteRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.write request"));
  Reader r(obj, "file.write request");
  ASB_TRY(CheckOp(r, "file.write"));
  FileWriteRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("mode", &m.mode));
  ASB_TRY(r.Get("make_parents", &m.make_parents));
  ASB_TRY(r.Get("append", &m.append));
  ASB_TRY(r.Get("max_bytes", &m.max_bytes));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileListRequest(const FileListRequest& m) {
  json::object o = WithOp("file.list");
  o["path"] = Sv(m.path);
  o["recursive"] = m.recursive;
  o["max_entries"] = m.max_entries;
  o["max_bytes"] = m.max_bytes;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

std::string ListingTooLargeMessage(uint64_t max_bytes) {
  return "listing exceeds " + std::to_string(max_bytes) +
         " bytes; list a narrower path or without recursive";
}

Result<FileListRequest> DecodeFileListRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.list request"));
  Reader r(obj, "file.list request");
  ASB_TRY(CheckOp(r, "file.list"));
  FileListRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("recursive", &m.recursive));
  ASB_TRY(r.Get("max_entries", &m.max_entries));
  ASB_TRY(r.Get("max_bytes", &m.max_bytes));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileStatRequest(const FileStatRequest& m) {
  json::object o = WithOp("file.stat");
  o["path"] = Sv(m.path);
  o["follow_symlinks"] = m.follow_symlinks;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileStatRequest> DecodeFileStatRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.stat request"));
  Reader r(obj, "file.stat request");
  ASB_TRY(CheckOp(r, "file.stat"));
  FileStatRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("follow_symlinks", &m.follow_symlinks));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileMkdirRequest(const FileMkdirRequest& m) {
  json::object o = WithOp("file.mkdir");
  o["path"] = Sv(m.path);
  o["mode"] = m.mode;
  o["parents"] = m.parents;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileMkdirRequest> DecodeFileMkdirRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.mkdir request"));
  Reader r(obj, "file.mkdir request");
  ASB_TRY(CheckOp(r, "file.mkdir"));
  FileMkdirRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("mode", &m.mode));
  ASB_TRY(r.Get("parents", &m.parents));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileRemoveRequest(const FileRemoveRequest& m) {
  json::object o = WithOp("file.remove");
  o["path"] = Sv(m.path);
  o["recursive"] = m.recursive;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileRemoveRequest> DecodeFileRemoveRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.remove request"));
  Reader r(obj, "file.remove request");
  ASB_TRY(CheckOp(r, "file.remove"));
  FileRemoveRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("recursive", &m.recursive));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeFileMoveRequest(const FileMoveRequest& m) {
  json::object o = WithOp("file.move");
  o["from"] = Sv(m.from);
  o["to"] = Sv(m.to);
  o["overwrite"] = m.overwrite;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<FileMoveRequest> DecodeFileMoveRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "file.move request"));
  Reader r(obj, "file.move request");
  ASB_TRY(CheckOp(r, "file.move"));
  FileMoveRequest m;
  ASB_TRY(r.Get("from", &m.from));
  ASB_TRY(r.Get("to", &m.to));
  ASB_TRY(r.Get("overwrite", &m.overwrite));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

// ---- tar -------------------------------------------------------------------------------------

std::string EncodeTarExportRequest(const TarExportRequest& m) {
  json::object o = WithOp("tar.export");
  o["path"] = Sv(m.path);
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<TarExportRequest> DecodeTarExportRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "tar.export request"));
  Reader r(obj, "tar.export request");
  ASB_TRY(CheckOp(r, "tar.export"));
  TarExportRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeTarImportRequest(const TarImportRequest& m) {
  json::object o = WithOp("tar.import");
  o["path"] = Sv(m.path);
  o["max_bytes"] = m.max_bytes;
  o["max_entries"] = m.max_entries;
  o["clear_first"] = m.clear_first;
  o["scope"] = ScopeToJson(m.scope);
  return Serialize(o);
}

Result<TarImportRequest> DecodeTarImportRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "tar.import request"));
  Reader r(obj, "tar.import request");
  ASB_TRY(CheckOp(r, "tar.import"));
  TarImportRequest m;
  ASB_TRY(r.Get("path", &m.path));
  ASB_TRY(r.Get("max_bytes", &m.max_bytes));
  ASB_TRY(r.Get("max_entries", &m.max_entries));
  ASB_TRY(r.Get("clear_first", &m.clear_first));
  ASB_TRY(ReadScope(r, &m.scope));
  return m;
}

std::string EncodeTarResult(const TarResult& m) {
  json::object o;
  o["entries"] = m.entries;
  o["bytes"] = m.bytes;
  return Serialize(o);
}

Result<TarResult> DecodeTarResult(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "tar result"));
  Reader r(obj, "tar result");
  TarResult m;
  ASB_TRY(r.Get("entries", &m.entries));
  ASB_TRY(r.Get("bytes", &m.bytes));
  return m;
}

// ---- ERROR body ------------------------------------------------------------------------------

std::string EncodeWireError(const WireError& m) {
  json::object o;
  o["code"] = Sv(m.code);
  o["errno"] = m.sys_errno;
  o["message"] = Sv(m.message);
  return Serialize(o);
}

Result<WireError> DecodeWireError(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "ERROR"));
  Reader r(obj, "ERROR");
  WireError m;
  ASB_TRY(r.Get("code", &m.code));
  ASB_TRY(r.Get("errno", &m.sys_errno));
  ASB_TRY(r.Get("message", &m.message));
  return m;
}

}  // namespace asb::protocol
