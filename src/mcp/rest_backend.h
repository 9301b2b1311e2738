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
  ToolResult<void> Destroy(const std::string& id) override;

 private:
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
