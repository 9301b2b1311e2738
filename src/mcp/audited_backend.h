// A ToolBackend decorator that writes an audit event (store/events.h) for every tool call that
// changes something or runs a command, with the action names of the REST API's audit trail
// (api/audit.cc: sandbox.create, sandbox.destroy, exec, file.write, snapshot.create,
// sandbox.rollback, snapshot.fork, process.*), so work done through /mcp shows up in
// GET /v1/events as the same actions done over REST do. Targets pass api::AuditTarget
// (secrets redacted). Reads (lists, file reads) are not audited, as REST GETs
// are not. status is 200 (the MCP answer); result is "ok", "timed_out", or the error code.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "mcp/backend.h"
#include "store/events.h"

namespace asb::mcp {

class AuditedBackend final : public ToolBackend {
 public:
  /// `base` does the work; `record` receives each event with time_ms, action, target,
  /// sandbox_id, result, exit_code and duration_ms filled in on top of `tmpl` (key_id, owner,
  /// request_id). `now_ms` gives Unix ms, `mono_ms` a monotonic clock.
  AuditedBackend(std::shared_ptr<ToolBackend> base, store::EventRecord tmpl,
                 std::function<void(store::EventRecord)> record, std::function<int64_t()> now_ms,
                 std::function<int64_t()> mono_ms)
      : base_(std::move(base)),
        tmpl_(std::move(tmpl)),
        record_(std::move(record)),
        now_ms_(std::move(now_ms)),
        mono_ms_(std::move(mono_ms)) {}

  ToolResult<boost::json::object> CreateSandbox(const boost::json::object& body) override;
  ToolResult<boost::json::object> ListSandboxes() override { return base_->ListSandboxes(); }
  ToolResult<boost::json::object> ListTemplates() override { return base_->ListTemplates(); }
  ToolResult<boost::json::object> Exec(const std::string& id, const boost::json::object& body,
                                       const ExecHooks& hooks) override;
  ToolResult<std::string> ReadFile(const std::string& id, const std::string& path) override {
    return base_->ReadFile(id, path);
  }
  ToolResult<boost::json::object> WriteFile(const std::string& id, const std::string& path,
                                            std::string_view data,
                                            const std::optional<std::string>& mode) override;
  ToolResult<boost::json::object> ListFiles(const std::string& id, const std::string& path,
                                            bool recursive) override {
    return base_->ListFiles(id, path, recursive);
  }
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

  /// process.start (target: the command line), process.stdin / process.close_stdin /
  /// process.signal / process.kill (target: the pid), as the REST routes are audited.
  ToolResult<boost::json::object> StartProcess(const std::string& id,
                                               const boost::json::object& body) override;
  ToolResult<boost::json::object> ListProcesses(const std::string& id) override {
    return base_->ListProcesses(id);
  }
  ToolResult<ProcessOutput> ReadProcessOutput(const std::string& id,
                                              const OutputRequest& req) override {
    return base_->ReadProcessOutput(id, req);
  }
  ToolResult<boost::json::object> WatchFiles(const std::string& id,
                                             const WatchRequest& req) override {
    return base_->WatchFiles(id, req);
  }
  ToolResult<uint64_t> WriteProcessStdin(const std::string& id, int pid,
                                         std::string_view data) override;
  ToolResult<void> CloseProcessStdin(const std::string& id, int pid) override;
  ToolResult<void> SignalProcess(const std::string& id, int pid,
                                 const std::string& signal) override;
  ToolResult<boost::json::object> KillProcess(const std::string& id, int pid) override;
  /// A request other than GET/HEAD is audited as the proxy route is ("POST /v1/sandboxes/{id}/
  /// ports/{port}/{path}"), with ":port/path" as its target.
  ToolResult<PortResponse> RequestPort(const std::string& id, const PortRequest& req) override;

  /// Code runs and context changes under the REST audit trail's names for those routes
  /// ("POST /v1/sandboxes/{id}/code", "POST /v1/sandboxes/{id}/contexts", ...: api/audit.cc
  /// names un-tabled routes by method and pattern), with the context id (or language) as
  /// target; listing is a read and not audited.
  ToolResult<boost::json::object> RunCode(const std::string& id, const boost::json::object& body,
                                          const ExecHooks& hooks) override;
  ToolResult<boost::json::object> CreateCodeContext(const std::string& id,
                                                    const boost::json::object& body) override;
  ToolResult<boost::json::object> ListCodeContexts(const std::string& id) override {
    return base_->ListCodeContexts(id);
  }
  ToolResult<boost::json::object> RestartCodeContext(const std::string& id,
                                                     const std::string& context_id) override;
  ToolResult<void> DeleteCodeContext(const std::string& id, const std::string& context_id) override;

 private:
  // Records one event; `error` null on success.
  void Record(std::string action, std::string target, std::string sandbox_id, int64_t start_mono,
              int64_t start_unix, const ToolError* error,
              std::optional<int64_t> exit_code = std::nullopt, bool timed_out = false);

  std::shared_ptr<ToolBackend> base_;
  store::EventRecord tmpl_;
  std::function<void(store::EventRecord)> record_;
  std::function<int64_t()> now_ms_;
  std::function<int64_t()> mono_ms_;
};

}  // namespace asb::mcp
