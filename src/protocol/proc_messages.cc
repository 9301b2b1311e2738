// JSON codecs of the proc.* messages (proc_messages.h): one field table per message
// (field_table.h) drives both directions, with the conventions of messages.cc; the golden
// strings of proc_messages_test.cc pin the bytes.
#include "protocol/proc_messages.h"

#include <tuple>

#include "protocol/command_json.h"
#include "protocol/field_table.h"
#include "protocol/json_util.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<ProcStartRequest> {
  static constexpr std::string_view kWhat = "proc.start request";
  static constexpr std::string_view kOp = "proc.start";
  static constexpr auto kFields =
      std::tuple_cat(CommandFields<ProcStartRequest>(),
                     std::tuple(Field("tag", &ProcStartRequest::tag),
                                Field("stdin_pipe", &ProcStartRequest::stdin_pipe),
                                Field("ring_bytes", &ProcStartRequest::ring_bytes),
                                Field("pty", &ProcStartRequest::pty)));
};

template <>
struct MessageSchema<ProcInfo> {
  static constexpr std::string_view kWhat = "ProcInfo";
  static constexpr auto kFields = std::tuple(
      Field("pid", &ProcInfo::pid), Field("tag", &ProcInfo::tag), Field("argv", &ProcInfo::argv),
      Field("command", &ProcInfo::command), Field("started_at_ms", &ProcInfo::started_at_ms),
      Field("ended_at_ms", &ProcInfo::ended_at_ms), Field("state", &ProcInfo::state),
      Field("exit_code", &ProcInfo::exit_code), Field("signal", &ProcInfo::signal),
      Field("pty", &ProcInfo::pty), Field("stdin_open", &ProcInfo::stdin_open),
      Field("output_bytes", &ProcInfo::output_bytes));
};

template <>
struct MessageSchema<ProcAttachRequest> {
  static constexpr std::string_view kWhat = "proc.attach request";
  static constexpr std::string_view kOp = "proc.attach";
  static constexpr auto kFields =
      std::tuple(Field("pid", &ProcAttachRequest::pid),
                 Field("replay_bytes", &ProcAttachRequest::replay_bytes),
                 Field("stdin", &ProcAttachRequest::stdin));
};

// Three ops share this body (proc.stdin, proc.close_stdin, proc.kill), so it has no kOp: the
// encoder is given the op and the decoder does not check it.
template <>
struct MessageSchema<ProcPidRequest> {
  static constexpr std::string_view kWhat = "proc request";
  static constexpr auto kFields = std::tuple(Field("pid", &ProcPidRequest::pid));
};

template <>
struct MessageSchema<ProcSignalRequest> {
  static constexpr std::string_view kWhat = "proc.signal request";
  static constexpr std::string_view kOp = "proc.signal";
  static constexpr auto kFields = std::tuple(Field("pid", &ProcSignalRequest::pid),
                                             Field("signal", &ProcSignalRequest::signal));
};

template <>
struct MessageSchema<ProcResizeRequest> {
  static constexpr std::string_view kWhat = "proc.resize request";
  static constexpr std::string_view kOp = "proc.resize";
  static constexpr auto kFields =
      std::tuple(Field("pid", &ProcResizeRequest::pid), Field("cols", &ProcResizeRequest::cols),
                 Field("rows", &ProcResizeRequest::rows));
};

}  // namespace internal

using internal::Decode;
using internal::Encode;

std::string EncodeProcStartRequest(const ProcStartRequest& m) { return Encode(m); }
Result<ProcStartRequest> DecodeProcStartRequest(std::string_view text) {
  return Decode<ProcStartRequest>(text);
}

std::string EncodeProcInfo(const ProcInfo& m) { return Encode(m); }
Result<ProcInfo> DecodeProcInfo(std::string_view text) { return Decode<ProcInfo>(text); }

std::string EncodeProcInfoList(const std::vector<ProcInfo>& procs) {
  return internal::EncodeList("processes", procs);
}
Result<std::vector<ProcInfo>> DecodeProcInfoList(std::string_view text) {
  return internal::DecodeList<ProcInfo>(text, "process list", "processes");
}

std::string EncodeProcAttachRequest(const ProcAttachRequest& m) { return Encode(m); }
Result<ProcAttachRequest> DecodeProcAttachRequest(std::string_view text) {
  return Decode<ProcAttachRequest>(text);
}

std::string EncodeProcPidRequest(std::string_view op, const ProcPidRequest& m) {
  internal::json::object o = internal::WithOp(op);
  internal::PutFields(m, &o);
  return internal::Serialize(o);
}
Result<ProcPidRequest> DecodeProcPidRequest(std::string_view text) {
  return Decode<ProcPidRequest>(text);
}

std::string EncodeProcSignalRequest(const ProcSignalRequest& m) { return Encode(m); }
Result<ProcSignalRequest> DecodeProcSignalRequest(std::string_view text) {
  return Decode<ProcSignalRequest>(text);
}

std::string EncodeProcResizeRequest(const ProcResizeRequest& m) { return Encode(m); }
Result<ProcResizeRequest> DecodeProcResizeRequest(std::string_view text) {
  return Decode<ProcResizeRequest>(text);
}

}  // namespace asb::protocol
