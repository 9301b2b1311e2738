// Audit events for MCP tool calls; see audited_backend.h.
#include "mcp/audited_backend.h"

#include "api/audit.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

std::string StringField(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().as_string()) : "";
}

template <typename T>
const ToolError* ErrorOf(const ToolResult<T>& r) {
  return r ? nullptr : &r.error();
}

}  // namespace

void AuditedBackend::Record(std::string action, std::string target, std::string sandbox_id,
                            int64_t start_mono, int64_t start_unix, const ToolError* error,
                            std::optional<int64_t> exit_code, bool timed_out) {
  store::EventRecord e = tmpl_;
  e.time_ms = start_unix;
  e.action = std::move(action);
  e.target = api::AuditTarget(target);
  e.sandbox_id = std::move(sandbox_id);
  e.status = 200;
  e.result = error ? error->code : (timed_out ? "timed_out" : "ok");
  e.exit_code = exit_code;
  e.duration_ms = mono_ms_() - start_mono;
  record_(std::move(e));
}

ToolResult<json::object> AuditedBackend::CreateSandbox(const json::object& body) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->CreateSandbox(body);
  Record("sandbox.create", StringField(body, "template"), r ? StringField(*r, "id") : "", m, u,
         ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::Exec(const std::string& id, const json::object& body,
                                              const ExecHooks& hooks) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Exec(id, body, hooks);
  std::optional<int64_t> code;
  bool timed_out = false;
  if (r) {
    if (auto c = r->find("exit_code"); c != r->end() && c->value().is_int64()) {
      code = c->value().as_int64();
    }
    if (auto t = r->find("timed_out"); t != r->end() && t->value().is_bool()) {
      timed_out = t->value().as_bool();
    }
  }
  Record("exec", api::AuditCommandOf(body).value_or(""), id, m, u, ErrorOf(r), code, timed_out);
  return r;
}

ToolResult<json::object> AuditedBackend::WriteFile(const std::string& id, const std::string& path,
                                                   std::string_view data,
                                                   const std::optional<std::string>& mode) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->WriteFile(id, path, data, mode);
  Record("file.write", path, id, m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::Snapshot(const std::string& id,
                                                  const std::optional<std::string>& name) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Snapshot(id, name);
  Record("snapshot.create", name.value_or(""), id, m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::Rollback(const std::string& id,
                                                  const std::string& snapshot_id) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Rollback(id, snapshot_id);
  Record("sandbox.rollback", snapshot_id, id, m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::Fork(const std::string& snapshot_id,
                                              const json::object& body) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Fork(snapshot_id, body);
  Record("snapshot.fork", snapshot_id, r ? StringField(*r, "id") : "", m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::ForkSandbox(const std::string& id,
                                                     const json::object& body) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->ForkSandbox(id, body);
  Record("sandbox.fork", "", id, m, u, ErrorOf(r));
  return r;
}

ToolResult<void> AuditedBackend::Destroy(const std::string& id) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Destroy(id);
  Record("sandbox.destroy", "", id, m, u, r ? nullptr : &r.error());
  return r;
}

ToolResult<json::object> AuditedBackend::Pause(const std::string& id, bool keep_memory) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Pause(id, keep_memory);
  Record("sandbox.pause", "", id, m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::Resume(const std::string& id,
                                                std::optional<int64_t> timeout_seconds) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->Resume(id, timeout_seconds);
  Record("sandbox.resume", "", id, m, u, ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::StartProcess(const std::string& id,
                                                      const json::object& body) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->StartProcess(id, body);
  Record("process.start", api::AuditCommandOf(body).value_or(""), id, m, u, ErrorOf(r));
  return r;
}

ToolResult<uint64_t> AuditedBackend::WriteProcessStdin(const std::string& id, int pid,
                                                       std::string_view data) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->WriteProcessStdin(id, pid, data);
  Record("process.stdin", std::to_string(pid), id, m, u, ErrorOf(r));
  return r;
}

ToolResult<void> AuditedBackend::CloseProcessStdin(const std::string& id, int pid) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->CloseProcessStdin(id, pid);
  Record("process.close_stdin", std::to_string(pid), id, m, u, r ? nullptr : &r.error());
  return r;
}

ToolResult<void> AuditedBackend::SignalProcess(const std::string& id, int pid,
                                               const std::string& signal) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->SignalProcess(id, pid, signal);
  Record("process.signal", std::to_string(pid), id, m, u, r ? nullptr : &r.error());
  return r;
}

ToolResult<json::object> AuditedBackend::KillProcess(const std::string& id, int pid) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->KillProcess(id, pid);
  Record("process.kill", std::to_string(pid), id, m, u, ErrorOf(r));
  return r;
}

ToolResult<PortResponse> AuditedBackend::RequestPort(const std::string& id,
                                                     const PortRequest& req) {
  if (req.method == "GET" || req.method == "HEAD") return base_->RequestPort(id, req);
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->RequestPort(id, req);
  Record(req.method + " /v1/sandboxes/{id}/ports/{port}/{path}",
         ":" + std::to_string(req.port) + req.path, id, m, u, ErrorOf(r));
  return r;
}

namespace {

// The target of a code call: the context it names, else its language, else "".
std::string CodeTarget(const json::object& body, const json::object* answer) {
  for (const char* k : {"context_id", "id"}) {
    if (answer) {
      if (const json::value* v = answer->if_contains(k); v && v->is_string()) {
        return std::string(v->as_string());
      }
    }
    if (const json::value* v = body.if_contains(k); v && v->is_string()) {
      return std::string(v->as_string());
    }
  }
  if (const json::value* v = body.if_contains("language"); v && v->is_string()) {
    return std::string(v->as_string());
  }
  return "";
}

}  // namespace

ToolResult<json::object> AuditedBackend::RunCode(const std::string& id, const json::object& body,
                                                 const ExecHooks& hooks) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->RunCode(id, body, hooks);
  bool timed_out = false;
  if (r) {
    if (auto t = r->find("timed_out"); t != r->end() && t->value().is_bool()) {
      timed_out = t->value().as_bool();
    }
  }
  Record("POST /v1/sandboxes/{id}/code", CodeTarget(body, r ? &*r : nullptr), id, m, u, ErrorOf(r),
         std::nullopt, timed_out);
  return r;
}

ToolResult<json::object> AuditedBackend::CreateCodeContext(const std::string& id,
                                                           const json::object& body) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->CreateCodeContext(id, body);
  Record("POST /v1/sandboxes/{id}/contexts", CodeTarget(body, r ? &*r : nullptr), id, m, u,
         ErrorOf(r));
  return r;
}

ToolResult<json::object> AuditedBackend::RestartCodeContext(const std::string& id,
                                                            const std::string& context_id) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->RestartCodeContext(id, context_id);
  Record("POST /v1/sandboxes/{id}/contexts/{cid}/restart", context_id, id, m, u, ErrorOf(r));
  return r;
}

ToolResult<void> AuditedBackend::DeleteCodeContext(const std::string& id,
                                                   const std::string& context_id) {
  int64_t m = mono_ms_(), u = now_ms_();
  auto r = base_->DeleteCodeContext(id, context_id);
  Record("DELETE /v1/sandboxes/{id}/contexts/{cid}", context_id, id, m, u, ErrorOf(r));
  return r;
}

}  // namespace asb::mcp
