#include "protocol/proc_client.h"

#include <boost/json.hpp>

namespace asb::protocol {

namespace {

// The RESULT body of `ch` (INFO frames go to `on_info` if given), or the operation's error.
Result<std::string> Await(Channel& ch, std::string_view op,
                          const std::function<Status(const std::string&)>& on_info = {}) {
  while (true) {
    auto ev = ch.Next(kProcAnswerMs);
    if (!ev) {
      (void)ch.Cancel();
      return Fail(Error::Timeout(std::string(op) + ": sandboxd did not answer"));
    }
    switch (ev->kind) {
      case ChannelEvent::Kind::kResult:
        return std::move(ev->payload);
      case ChannelEvent::Kind::kError:
        return Fail(ev->error ? *ev->error : Error::Backend("protocol: ERROR without a body"));
      case ChannelEvent::Kind::kInfo:
        if (on_info) ASB_TRY(on_info(ev->payload));
        continue;
      case ChannelEvent::Kind::kEof:
        continue;
      case ChannelEvent::Kind::kData:
        (void)ch.Cancel();
        return Fail(Error::Backend("protocol: unexpected DATA during " + std::string(op)));
    }
  }
}

Status Simple(Connection& conn, std::string_view open_json, std::string_view op) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(open_json));
  ASB_TRY(Await(*ch, op));
  return {};
}

}  // namespace

Result<ProcInfo> StartProcess(Connection& conn, const ProcStartRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeProcStartRequest(req)));
  ASB_ASSIGN_OR_RETURN(std::string body, Await(*ch, "proc.start"));
  return DecodeProcInfo(body);
}

Result<std::vector<ProcInfo>> ListProcesses(Connection& conn) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(R"({"op":"proc.list"})"));
  std::vector<ProcInfo> out;
  ASB_TRY(Await(*ch, "proc.list", [&out](const std::string& info) -> Status {
    ASB_ASSIGN_OR_RETURN(std::vector<ProcInfo> part, DecodeProcInfoList(info));
    for (auto& p : part) out.push_back(std::move(p));
    return {};
  }));
  return out;
}

Result<std::shared_ptr<Channel>> AttachProcess(Connection& conn, const ProcAttachRequest& req) {
  return conn.Open(EncodeProcAttachRequest(req));
}

Result<uint64_t> WriteProcessStdin(Connection& conn, int pid, std::string_view data) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch,
                       conn.Open(EncodeProcPidRequest("proc.stdin", ProcPidRequest{pid})));
  Status sent = ch->Write(data, kProcAnswerMs);
  if (sent) sent = ch->CloseWrite();
  // sandboxd may end the channel early (no such process): its error is the answer.
  auto body = Await(*ch, "proc.stdin");
  if (!body) return Fail(body.error());
  if (!sent) return Fail(sent.error());
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(*body, ec);
  if (ec || !v.is_object()) return Fail(Error::Backend("protocol: malformed proc.stdin result"));
  const boost::json::value* n = v.as_object().if_contains("bytes");
  if (n && n->is_uint64()) return n->get_uint64();
  if (n && n->is_int64() && n->get_int64() >= 0) return static_cast<uint64_t>(n->get_int64());
  return Fail(Error::Backend("protocol: malformed proc.stdin result"));
}

Status CloseProcessStdin(Connection& conn, int pid) {
  return Simple(conn, EncodeProcPidRequest("proc.close_stdin", ProcPidRequest{pid}),
                "proc.close_stdin");
}

Status SignalProcess(Connection& conn, int pid, int signo) {
  return Simple(conn, EncodeProcSignalRequest(ProcSignalRequest{pid, signo}), "proc.signal");
}

Status ResizeProcess(Connection& conn, int pid, uint16_t cols, uint16_t rows) {
  return Simple(conn, EncodeProcResizeRequest(ProcResizeRequest{pid, cols, rows}), "proc.resize");
}

Result<ProcInfo> KillProcess(Connection& conn, int pid) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch,
                       conn.Open(EncodeProcPidRequest("proc.kill", ProcPidRequest{pid})));
  ASB_ASSIGN_OR_RETURN(std::string body, Await(*ch, "proc.kill"));
  return DecodeProcInfo(body);
}

}  // namespace asb::protocol
