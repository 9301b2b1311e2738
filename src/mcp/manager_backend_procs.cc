// Background processes and ports of the manager back end (manager_backend.h): the REST
// routes' parsers and shapes (api/resource_json.h) over the SandboxManager, with the caller's
// owner, so another owner's sandbox is not_found here as over REST.
#include <boost/json.hpp>
#include <chrono>
#include <optional>

#include "api/resource_json.h"
#include "mcp/manager_backend.h"
#include "mcp/manager_support.h"
#include "mcp/port_exchange.h"
#include "mcp/process_output.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

constexpr int64_t kCancelPollMs = 200;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

#define ASB_MCP_CHECK_SANDBOX(id)                         \
  if (auto c = CheckId(id, "sb_", "sandbox " + id); !c) { \
    return tl::unexpected<ToolError>(c.error());          \
  }

// GET /v1/sandboxes/{id}/processes/{pid}'s choice: the running one of that pid, else the
// last exited one.
const core::ProcessInfo* FindProcess(const std::vector<core::ProcessInfo>& all, int pid) {
  const core::ProcessInfo* found = nullptr;
  for (const auto& p : all) {
    if (p.pid == pid && (found == nullptr || p.state == "running")) found = &p;
  }
  return found;
}

}  // namespace

ToolResult<json::object> ManagerBackend::StartProcess(const std::string& id,
                                                      const json::object& body) {
  ASB_MCP_CHECK_SANDBOX(id);
  auto opts = api::ParseProcessStart(json::serialize(body));
  if (!opts) return FromError(opts.error());
  auto p = m_.processes().StartProcess(caller_.owner, id, *opts);
  if (!p) return FromError(p.error());
  return api::ProcessJson(*p);
}

ToolResult<json::object> ManagerBackend::ListProcesses(const std::string& id) {
  ASB_MCP_CHECK_SANDBOX(id);
  return ListJson(m_.processes().ListProcesses(caller_.owner, id), "processes",
                  [](const core::ProcessInfo& p) { return api::ProcessJson(p); });
}

ToolResult<ProcessOutput> ManagerBackend::ReadProcessOutput(const std::string& id,
                                                            const OutputRequest& req) {
  ASB_MCP_CHECK_SANDBOX(id);
  auto a = m_.processes().AttachProcess(caller_.owner, id, req.pid, req.tail_bytes, false);
  if (!a) return FromError(a.error());
  core::EventStream& ch = *a->events;
  std::optional<OutputCollector> col;
  json::object state;
  bool exited = false;
  for (int64_t now = NowMs(); !exited && !(col && col->Done(now)); now = NowMs()) {
    if (req.cancelled && req.cancelled->load()) {
      (void)ch.Cancel();
      return ToolFail("cancelled", "the request was cancelled");
    }
    int64_t wait = col ? std::min(col->NextWaitMs(now), kCancelPollMs) : kCancelPollMs;
    auto ev = ch.Next(wait);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) continue;
      (void)ch.Cancel();
      return FromError(ev.error());
    }
    using Kind = core::StreamEvent::Kind;
    switch (ev->kind) {
      case Kind::kInfo:  // output the replay ring no longer held
        if (ev->skipped_bytes > 0) {
          if (!col) col.emplace(req, 0, NowMs());
          col->Skip(ev->skipped_bytes);
        }
        break;
      case Kind::kOutput:
        if (!col) col.emplace(req, 0, NowMs());
        col->Add(ev->data);
        break;
      case Kind::kEnd:
        break;
      case Kind::kDone: {
        if (!ev->process) return FromError(Error::Backend("process ended without its state"));
        state = api::ProcessJson(*ev->process);
        exited = true;
        break;
      }
      case Kind::kError:
        return FromError(ev->error ? *ev->error : Error::Backend("attach failed"));
    }
  }
  if (!exited) {
    (void)ch.Cancel();  // detach; the process runs on
    // The state now (output_bytes grew while we read).
    if (auto all = m_.processes().ListProcesses(caller_.owner, id); all) {
      if (const core::ProcessInfo* p = FindProcess(*all, req.pid)) state = api::ProcessJson(*p);
    }
  }
  if (!col) col.emplace(req, 0, NowMs());
  return col->Finish(std::move(state));
}

ToolResult<uint64_t> ManagerBackend::WriteProcessStdin(const std::string& id, int pid,
                                                       std::string_view data) {
  ASB_MCP_CHECK_SANDBOX(id);
  auto n = m_.processes().WriteProcessStdin(caller_.owner, id, pid, data);
  if (!n) return FromError(n.error());
  return *n;
}

ToolResult<void> ManagerBackend::CloseProcessStdin(const std::string& id, int pid) {
  ASB_MCP_CHECK_SANDBOX(id);
  if (auto st = m_.processes().CloseProcessStdin(caller_.owner, id, pid); !st)
    return FromError(st.error());
  return {};
}

ToolResult<void> ManagerBackend::SignalProcess(const std::string& id, int pid,
                                               const std::string& signal) {
  ASB_MCP_CHECK_SANDBOX(id);
  if (auto st = m_.processes().SignalProcess(caller_.owner, id, pid, signal); !st) {
    return FromError(st.error());
  }
  return {};
}

ToolResult<json::object> ManagerBackend::KillProcess(const std::string& id, int pid) {
  ASB_MCP_CHECK_SANDBOX(id);
  auto p = m_.processes().KillProcess(caller_.owner, id, pid);
  if (!p) return FromError(p.error());
  return api::ProcessJson(*p);
}

ToolResult<PortResponse> ManagerBackend::RequestPort(const std::string& id,
                                                     const PortRequest& req) {
  ASB_MCP_CHECK_SANDBOX(id);
  auto conn = m_.network().ConnectPort(caller_.owner, id, req.port);
  if (!conn) return FromError(conn.error());
  std::shared_ptr<void> keepalive = std::move(conn->keepalive);  // the sandbox is active
  return ExchangeOverSocket(UniqueFd(conn->fd), id, req);
}

}  // namespace asb::mcp
