#include "sandboxd/op_factory.h"

#include <time.h>

#include <cerrno>

#include "protocol/clock_messages.h"
#include "protocol/env_messages.h"
#include "protocol/messages.h"
#include "sandboxd/daemon.h"
#include "sandboxd/exec_op.h"
#include "sandboxd/file_ops.h"
#include "sandboxd/file_stream_ops.h"
#include "sandboxd/file_watch_op.h"
#include "sandboxd/kill_all_op.h"
#include "sandboxd/proc_ops.h"
#include "sandboxd/stats_op.h"
#include "sandboxd/sync_op.h"
#include "sandboxd/tar_ops.h"
#include "sandboxd/tcp_connect_op.h"

namespace asb::sandboxd {

namespace {

// Decoder errors are kBackend ("broken peer"); for an OPEN body they are the request's fault.
Error BadRequest(const Error& e) { return Error::InvalidArgument(e.detail()); }

FsContext ContextOf(Daemon& d) { return FsContext{d.workspace_fd(), d.options().workspace}; }

template <typename Req>
Result<Req> Decode(Result<Req> r) {
  if (!r) return Fail(BadRequest(r.error()));
  return r;
}

}  // namespace

Result<std::unique_ptr<Operation>> MakeOperation(Daemon& d, Connection& c, uint32_t ch,
                                                 std::string_view json) {
  auto name = protocol::DecodeOpName(json);
  if (!name) return Fail(BadRequest(name.error()));
  const std::string& op = *name;
  FsContext ctx = ContextOf(d);
  std::unique_ptr<Operation> out;
  if (op == "exec") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeExecRequest(json)));
    out = std::make_unique<ExecOp>(d, c, ch, std::move(req));
  } else if (op == "file.read") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileReadRequest(json)));
    out = std::make_unique<FileReadOp>(d, c, ch, std::move(req));
  } else if (op == "file.write") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileWriteRequest(json)));
    out = std::make_unique<FileWriteOp>(d, c, ch, std::move(req));
  } else if (op == "file.stat") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileStatRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [ctx, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto st, StatFile(ctx, req));
      return protocol::EncodeFileStat(st);
    });
  } else if (op == "file.mkdir") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileMkdirRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [ctx, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto st, MakeDirectory(ctx, req));
      return protocol::EncodeFileStat(st);
    });
  } else if (op == "file.remove") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileRemoveRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [ctx, req](SyncOp&) -> Result<std::string> {
      ASB_TRY(RemovePath(ctx, req));
      return std::string("{}");
    });
  } else if (op == "file.move") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileMoveRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [ctx, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto st, MovePath(ctx, req));
      return protocol::EncodeFileStat(st);
    });
  } else if (op == "file.list") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileListRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [ctx, req](SyncOp& self) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(uint64_t n,
                           ListDirectory(ctx, req, [&](std::vector<protocol::FileStat>&& part) {
                             self.Info(protocol::EncodeFileStatList(part));
                           }));
      return "{\"count\":" + std::to_string(n) + "}";
    });
  } else if (op == "file.watch") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeFileWatchRequest(json)));
    out = std::make_unique<FileWatchOp>(d, c, ch, std::move(req));
  } else if (op == "tar.export") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeTarExportRequest(json)));
    out = std::make_unique<TarExportOp>(d, c, ch, std::move(req));
  } else if (op == "tar.import") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeTarImportRequest(json)));
    out = std::make_unique<TarImportOp>(d, c, ch, std::move(req));
  } else if (op == "kill.all") {
    out = std::make_unique<KillAllOp>(d, c, ch);
  } else if (op == "tcp.connect") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeTcpConnectRequest(json)));
    out = std::make_unique<TcpConnectOp>(d, c, ch, req);
  } else if (op == "clock.set") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeClockSetRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [&d, req](SyncOp&) -> Result<std::string> {
      // Only a VM's PID 1 owns the clock it would set; elsewhere it is the host's.
      if (d.options().port.empty()) {
        return Fail(Error::InvalidArgument("clock.set is for a microVM's guest only"));
      }
      timespec ts{};
      ts.tv_sec = static_cast<time_t>(req.unix_ns / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(req.unix_ns % 1'000'000'000);
      if (req.unix_ns <= 0 || ::clock_settime(CLOCK_REALTIME, &ts) != 0) {
        return Fail(Error::FromErrno(req.unix_ns <= 0 ? EINVAL : errno, "clock.set"));
      }
      return std::string("{}");
    });
  } else if (op == "env.set") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeEnvSetRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [&d, req](SyncOp&) -> Result<std::string> {
      ASB_TRY(d.ReplaceEnv(req.env));
      return std::string("{}");
    });
  } else if (op == "stats") {
    out = std::make_unique<SyncOp>(d, c, ch, [&d](SyncOp&) -> Result<std::string> {
      return protocol::EncodeSandboxStats(ReadSandboxStats(d.options().work_cgroup_fds));
    });
  } else if (op.rfind("proc.", 0) == 0) {  // background processes (proc_ops.h)
    ASB_ASSIGN_OR_RETURN(out, MakeProcOperation(d, c, ch, op, json));
  } else {
    return Fail(Error::InvalidArgument("unknown op \"" + op + "\""));
  }
  return out;
}

}  // namespace asb::sandboxd
