// ToolBackend over the REST API of a running server (api::HttpClient), for `agent-sandbox mcp`
// on stdio (see mcp/backend.h). Every call is one REST request; Exec uses the NDJSON stream
// route so output arrives as it is written and a cancelled call closes the connection, which
// makes the server kill the command.
#pragma once

#include "api/http_client.h"
#include "mcp/backend.h"

namespace asb::mcp {

class RestBackend final : public ToolBackend {
 public:
  explicit RestBackend(api::HttpClient client) : client_(std::move(client)) {}

  ToolResult<boost::json::object> CreateSandbox(const boost::json::object& body) override;
  ToolResult<boost::json::object> ListSandboxes() override;
  /// GET /v1/templates; a server without that route answers not_found with a note.
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

  // Processes and ports (rest_backend_procs.cc).
  ToolResult<boost::json::object> StartProcess(const std::string& id,
                                               const boost::json::object& body) override;
  ToolResult<boost::json::object> ListProcesses(const std::string& id) override;
  /// GET the process, follow GET .../stream?encoding=base64&replay_bytes=N, GET it again.
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
  /// Through the ports proxy. An upstream answer in our error shape with one of our wire
  /// codes (not_found, unavailable, ...) reads as the proxy's own failure.
  ToolResult<PortResponse> RequestPort(const std::string& id, const PortRequest& req) override;

  // The code interpreter (rest_backend_code.cc). RunCode follows POST .../code/stream, so that
  // output arrives as it is written and a cancelled call closes the connection (the server
  // interrupts the code), and assembles the sync /code answer from its lines.
  ToolResult<boost::json::object> RunCode(const std::string& id, const boost::json::object& body,
                                          const ExecHooks& hooks) override;
  ToolResult<boost::json::object> CreateCodeContext(const std::string& id,
                                                    const boost::json::object& body) override;
  ToolResult<boost::json::object> ListCodeContexts(const std::string& id) override;
  ToolResult<boost::json::object> RestartCodeContext(const std::string& id,
                                                     const std::string& context_id) override;
  ToolResult<void> DeleteCodeContext(const std::string& id, const std::string& context_id) override;

 private:
  // The error of a non-2xx answer: its wire code ("http_<status>" without one) and message.
  static ToolError ErrorOfResponse(const api::ClientResponse& r);
  /// The ToolError of an NDJSON stream's {"type":"error","code","message"} line.
  static ToolError ErrorOfStreamLine(const boost::json::object& line);
  // One request whose 2xx body is returned raw.
  ToolResult<std::string> Raw(std::string_view method, const std::string& target,
                              std::string_view body = {},
                              std::string_view type = "application/json") const;
  // One request whose 2xx body is a JSON object (an empty body is {}).
  ToolResult<boost::json::object> Json(std::string_view method, const std::string& target,
                                       std::string_view body = {},
                                       std::string_view type = "application/json") const;

  api::HttpClient client_;
};

}  // namespace asb::mcp
