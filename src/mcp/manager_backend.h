// ToolBackend over the SandboxManager in-process (mcp/backend.h), for Streamable HTTP at /mcp
// on the server itself: the tools act with the caller's owner exactly as the REST routes do
// (tenancy: another owner's sandbox is not_found), with no HTTP round trip.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "core/sandbox_manager.h"
#include "mcp/backend.h"

namespace asb::mcp {

/// Who the tools act for; the auth layer's view of the caller (api/auth.h, Principal).
struct Caller {
  /// The owner every call acts as: the key's lineage, or core::kAnyOwner for admin keys and
  /// --insecure-no-auth.
  std::string owner;
  /// The owner recorded for a new sandbox (an admin's sandboxes belong to its lineage too).
  std::string create_owner;
  /// The key's cap on live sandboxes of `create_owner` (0 = none): create and fork over it
  /// answer limit_exceeded, as POST /v1/sandboxes does.
  int64_t max_sandboxes = 0;
  /// Held around the count and the create/fork when max_sandboxes > 0 (the auth layer's
  /// QuotaLock of `create_owner`, shared with the REST routes); may be null.
  std::mutex* quota_lock = nullptr;
};

class ManagerBackend final : public ToolBackend {
 public:
  /// `manager` must outlive the backend.
  ManagerBackend(core::SandboxManager& manager, Caller caller)
      : m_(manager), caller_(std::move(caller)) {}

  ToolResult<boost::json::object> CreateSandbox(const boost::json::object& body) override;
  ToolResult<boost::json::object> ListSandboxes() override;
  /// The core template catalog (core/templates.h), each as GET /v1/templates shows it.
  ToolResult<boost::json::object> ListTemplates() override;
  ToolResult<boost::json::object> Exec(const std::string& id, const boost::json::object& body,
                                       const ExecHooks& hooks) override;
  ToolResult<std::string> ReadFile(const std::string& id, const std::string& path) override;
  ToolResult<boost::json::object> WriteFile(const std::string& id, const std::string& path,
                                            std::string_view data,
                                            const std::optional<std::string>& mode) override;
  ToolResult<boost::json::object> ListFiles(const std::string& id, const std::string& path,
                                            bool recursive) override;
  ToolResult<boost::json::object> Snapshot(const std::string& id,
                                           const std::optional<std::string>& name) override;
  ToolResult<boost::json::object> Rollback(const std::string& id,
                                           const std::string& snapshot_id) override;
  ToolResult<boost::json::object> Fork(const std::string& snapshot_id,
                                       const boost::json::object& body) override;
  ToolResult<boost::json::object> ForkSandbox(const std::string& id,
                                              const boost::json::object& body) override;
  ToolResult<void> Destroy(const std::string& id) override;
  ToolResult<boost::json::object> Pause(const std::string& id, bool keep_memory) override;
  ToolResult<boost::json::object> Resume(const std::string& id,
                                         std::optional<int64_t> timeout_seconds) override;

  // Processes and ports (manager_backend_procs.cc): the REST routes' parsers and shapes.
  ToolResult<boost::json::object> StartProcess(const std::string& id,
                                               const boost::json::object& body) override;
  ToolResult<boost::json::object> ListProcesses(const std::string& id) override;
  ToolResult<ProcessOutput> ReadProcessOutput(const std::string& id,
                                              const OutputRequest& req) override;
  ToolResult<boost::json::object> WatchFiles(const std::string& id,
                                             const WatchRequest& req) override;
  ToolResult<uint64_t> WriteProcessStdin(const std::string& id, int pid,
                                         std::string_view data) override;
  ToolResult<void> CloseProcessStdin(const std::string& id, int pid) override;
  ToolResult<void> SignalProcess(const std::string& id, int pid,
                                 const std::string& signal) override;
  ToolResult<boost::json::object> KillProcess(const std::string& id, int pid) override;
  /// Connects in the sandbox (NetworkService::ConnectPort) and speaks HTTP itself
  /// (mcp/port_exchange.h), as the proxy would.
  ToolResult<PortResponse> RequestPort(const std::string& id, const PortRequest& req) override;

  // The code interpreter (manager_backend_code.cc): core::CodeService, REST parsers and shapes.
  ToolResult<boost::json::object> RunCode(const std::string& id, const boost::json::object& body,
                                          const ExecHooks& hooks) override;
  ToolResult<boost::json::object> CreateCodeContext(const std::string& id,
                                                    const boost::json::object& body) override;
  ToolResult<boost::json::object> ListCodeContexts(const std::string& id) override;
  ToolResult<boost::json::object> RestartCodeContext(const std::string& id,
                                                     const std::string& context_id) override;
  ToolResult<void> DeleteCodeContext(const std::string& id, const std::string& context_id) override;

 private:
  // limit_exceeded when the caller is at its max_sandboxes.
  ToolResult<void> CheckQuota();
  // caller_.quota_lock, locked, when there is a limit to check; an empty lock otherwise.
  std::unique_lock<std::mutex> QuotaGuard();

  core::SandboxManager& m_;
  Caller caller_;
};

}  // namespace asb::mcp
