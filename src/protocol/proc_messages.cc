// JSON codecs of the proc.* messages (proc_messages.h), with the conventions of messages.cc.
#include "protocol/proc_messages.h"

#include "protocol/command_json.h"
#include "protocol/json_util.h"

namespace asb::protocol {

namespace {

using namespace internal;  // NOLINT: the shared JSON helpers

json::object ProcInfoToJson(const ProcInfo& m) {
  json::object o;
  o["pid"] = m.pid;
  o["tag"] = Sv(m.tag);
  o["argv"] = StringArray(m.argv);
  if (m.command) o["command"] = Sv(*m.command);
  o["started_at_ms"] = m.started_at_ms;
  o["ended_at_ms"] = m.ended_at_ms;
  o["state"] = Sv(m.state);
  o["exit_code"] = m.exit_code;
  o["signal"] = m.signal;
  o["pty"] = m.pty;
  o["stdin_open"] = m.stdin_open;
  o["output_bytes"] = m.output_bytes;
  return o;
}

Result<ProcInfo> ProcInfoFromJson(const json::object& obj) {
  Reader r(obj, "ProcInfo");
  ProcInfo m;
  ASB_TRY(r.Get("pid", &m.pid));
  ASB_TRY(r.Get("tag", &m.tag));
  ASB_TRY(r.Get("argv", &m.argv));
  ASB_TRY(ReadOptionalString(r, "command", &m.command));
  ASB_TRY(r.Get("started_at_ms", &m.started_at_ms));
  ASB_TRY(r.Get("ended_at_ms", &m.ended_at_ms));
  ASB_TRY(r.Get("state", &m.state));
  ASB_TRY(r.Get("exit_code", &m.exit_code));
  ASB_TRY(r.Get("signal", &m.signal));
  ASB_TRY(r.Get("pty", &m.pty));
  ASB_TRY(r.Get("stdin_open", &m.stdin_open));
  ASB_TRY(r.Get("output_bytes", &m.output_bytes));
  return m;
}

}  // namespace

std::string EncodeProcStartRequest(const ProcStartRequest& m) {
  json::object o = WithOp("proc.start");
  PutCommandFields(m, &o);
  o["tag"] = Sv(m.tag);
  o["stdin_pipe"] = m.stdin_pipe;
  o["ring_bytes"] = m.ring_bytes;
  PutPty(m.pty, &o);
  return Serialize(o);
}

Result<ProcStartRequest> DecodeProcStartRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "proc.start request"));
  Reader r(obj, "proc.start request");
  ASB_TRY(CheckOp(r, "proc.start"));
  ProcStartRequest m;
  ASB_TRY(ReadCommandFields(r, &m));
  ASB_TRY(r.Get("tag", &m.tag));
  ASB_TRY(r.Get("stdin_pipe", &m.stdin_pipe));
  ASB_TRY(r.Get("ring_bytes", &m.ring_bytes));
  ASB_TRY(ReadPty(r, &m.pty));
  return m;
}

std::string EncodeProcInfo(const ProcInfo& m) { return Serialize(ProcInfoToJson(m)); }

Result<ProcInfo> DecodeProcInfo(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "ProcInfo"));
  return ProcInfoFromJson(obj);
}

std::string EncodeProcInfoList(const std::vector<ProcInfo>& procs) {
  json::array a;
  for (const auto& p : procs) a.emplace_back(ProcInfoToJson(p));
  json::object o;
  o["processes"] = std::move(a);
  return Serialize(o);
}

Result<std::vector<ProcInfo>> DecodeProcInfoList(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "process list"));
  std::vector<ProcInfo> out;
  const json::value* v = obj.if_contains("processes");
  if (v == nullptr) return out;
  if (!v->is_array()) return Fail(Malformed("process list", "\"processes\" must be an array"));
  for (const json::value& e : v->get_array()) {
    if (!e.is_object()) return Fail(Malformed("process list", "entries must be objects"));
    ASB_ASSIGN_OR_RETURN(ProcInfo p, ProcInfoFromJson(e.get_object()));
    out.push_back(std::move(p));
  }
  return out;
}

std::string EncodeProcAttachRequest(const ProcAttachRequest& m) {
  json::object o = WithOp("proc.attach");
  o["pid"] = m.pid;
  o["replay_bytes"] = m.replay_bytes;
  o["stdin"] = m.stdin;
  return Serialize(o);
}

Result<ProcAttachRequest> DecodeProcAttachRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "proc.attach request"));
  Reader r(obj, "proc.attach request");
  ASB_TRY(CheckOp(r, "proc.attach"));
  ProcAttachRequest m;
  ASB_TRY(r.Get("pid", &m.pid));
  ASB_TRY(r.Get("replay_bytes", &m.replay_bytes));
  ASB_TRY(r.Get("stdin", &m.stdin));
  return m;
}

std::string EncodeProcPidRequest(std::string_view op, const ProcPidRequest& m) {
  json::object o = WithOp(op);
  o["pid"] = m.pid;
  return Serialize(o);
}

Result<ProcPidRequest> DecodeProcPidRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "proc request"));
  Reader r(obj, "proc request");
  ProcPidRequest m;
  ASB_TRY(r.Get("pid", &m.pid));
  return m;
}

std::string EncodeProcSignalRequest(const ProcSignalRequest& m) {
  json::object o = WithOp("proc.signal");
  o["pid"] = m.pid;
  o["signal"] = m.signal;
  return Serialize(o);
}

Result<ProcSignalRequest> DecodeProcSignalRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "proc.signal request"));
  Reader r(obj, "proc.signal request");
  ASB_TRY(CheckOp(r, "proc.signal"));
  ProcSignalRequest m;
  ASB_TRY(r.Get("pid", &m.pid));
  ASB_TRY(r.Get("signal", &m.signal));
  return m;
}

std::string EncodeProcResizeRequest(const ProcResizeRequest& m) {
  json::object o = WithOp("proc.resize");
  o["pid"] = m.pid;
  o["cols"] = m.cols;
  o["rows"] = m.rows;
  return Serialize(o);
}

Result<ProcResizeRequest> DecodeProcResizeRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(json::object obj, ParseObject(text, "proc.resize request"));
  Reader r(obj, "proc.resize request");
  ASB_TRY(CheckOp(r, "proc.resize"));
  ProcResizeRequest m;
  ASB_TRY(r.Get("pid", &m.pid));
  ASB_TRY(r.Get("cols", &m.cols));
  ASB_TRY(r.Get("rows", &m.rows));
  return m;
}

}  // namespace asb::protocol
