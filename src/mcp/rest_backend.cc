// ToolBackend over the REST API; see rest_backend.h.
#include "mcp/rest_backend.h"

#include <chrono>

#include "api/url.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

std::string Enc(std::string_view s) { return api::PercentEncode(s); }

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ToolError RestBackend::ErrorOfResponse(const api::ClientResponse& r) {
  return {r.error_code.empty() ? "http_" + std::to_string(r.status) : r.error_code,
          r.error_message.empty() ? r.body : r.error_message};
}

ToolError RestBackend::ErrorOfStreamLine(const json::object& line) {
  const json::value* c = line.if_contains("code");
  const json::value* m = line.if_contains("message");
  return {c && c->is_string() ? std::string(c->as_string()) : "backend_error",
          m && m->is_string() ? std::string(m->as_string()) : ""};
}

ToolResult<std::string> RestBackend::Raw(std::string_view method, const std::string& target,
                                         std::string_view body, std::string_view type) const {
  auto r = client_.Request(method, target, body, type);
  if (!r) return ToolFail(std::string(r.error().code_name()), r.error().message());
  if (r->status >= 300) return tl::unexpected<ToolError>(ErrorOfResponse(*r));
  return std::move(r->body);
}

ToolResult<json::object> RestBackend::Json(std::string_view method, const std::string& target,
                                           std::string_view body, std::string_view type) const {
  auto raw = Raw(method, target, body, type);
  if (!raw) return tl::unexpected<ToolError>(raw.error());
  if (raw->empty()) return json::object{};
  json::error_code ec;
  json::value v = json::parse(*raw, ec);
  if (ec || !v.is_object()) return ToolFail("backend_error", "server answered invalid JSON");
  return std::move(v.as_object());
}

ToolResult<json::object> RestBackend::CreateSandbox(const json::object& body) {
  return Json("POST", "/v1/sandboxes", json::serialize(body));
}

ToolResult<json::object> RestBackend::ListSandboxes() { return Json("GET", "/v1/sandboxes"); }

ToolResult<json::object> RestBackend::ListTemplates() {
  auto v = Json("GET", "/v1/templates");
  if (!v && (v.error().code == "not_found" || v.error().code == "http_404")) {
    v.error().message = "this server has no /v1/templates route (" + v.error().message +
                        "); create sandboxes from template \"base\"";
  }
  return v;
}

ToolResult<json::object> RestBackend::Exec(const std::string& id, const json::object& body,
                                           const ExecHooks& hooks) {
  std::string partial;
  json::object exit;
  std::optional<ToolError> stream_error;
  bool stopped = false;
  auto on_data = [&](std::string_view chunk) -> bool {
    if (hooks.cancelled && hooks.cancelled->load()) {
      stopped = true;
      return false;  // closes the connection: the server cancels the command
    }
    partial.append(chunk);
    size_t nl;
    while ((nl = partial.find('\n')) != std::string::npos) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      json::error_code ec;
      json::value ev = json::parse(line, ec);
      if (ec || !ev.is_object()) continue;
      const auto& o = ev.as_object();
      auto t = o.find("type");
      if (t == o.end() || !t->value().is_string()) continue;
      std::string_view type = t->value().as_string();
      if (type == "stdout" || type == "stderr") {
        if (hooks.output) hooks.output(type, o.at("data").as_string());
      } else if (type == "exit") {
        exit = o;
        exit.erase("type");
      } else if (type == "error") {
        stream_error = ErrorOfStreamLine(o);
      }
    }
    return true;
  };
  auto r = client_.Stream("POST", "/v1/sandboxes/" + Enc(id) + "/exec/stream",
                          json::serialize(body), "application/json", on_data);
  if (stopped) return ToolFail("cancelled", "the request was cancelled; command killed");
  if (!r) return ToolFail(std::string(r.error().code_name()), r.error().message());
  if (r->status >= 300) return tl::unexpected<ToolError>(ErrorOfResponse(*r));
  if (stream_error) return tl::unexpected<ToolError>(*stream_error);
  if (exit.empty()) return ToolFail("backend_error", "exec stream ended without an exit");
  return exit;
}

ToolResult<std::string> RestBackend::ReadFile(const std::string& id, const std::string& path) {
  return Raw("GET", "/v1/sandboxes/" + Enc(id) + "/files?path=" + Enc(path));
}

ToolResult<json::object> RestBackend::WriteFile(const std::string& id, const std::string& path,
                                                std::string_view data,
                                                const std::optional<std::string>& mode) {
  std::string target = "/v1/sandboxes/" + Enc(id) + "/files?path=" + Enc(path);
  if (mode) target += "&mode=" + Enc(*mode);
  return Json("PUT", target, data, "application/octet-stream");
}

ToolResult<json::object> RestBackend::ListFiles(const std::string& id, const std::string& path,
                                                bool recursive) {
  std::string target = "/v1/sandboxes/" + Enc(id) + "/files/list?path=" + Enc(path);
  if (recursive) target += "&recursive=true";
  return Json("GET", target);
}

ToolResult<json::object> RestBackend::WatchFiles(const std::string& id, const WatchRequest& req) {
  // The server ends the watch wait_ms after arming it (timeout_ms); the client's own deadline
  // is a safety net that allows for the arming (a recursive watch opens every directory).
  constexpr int64_t kArmGraceMs = 5000;
  std::string partial;
  json::object out;
  json::array events;
  std::optional<ToolError> stream_error;
  bool cancelled = false;
  int64_t deadline = 0;  // set by the start line
  auto on_data = [&](std::string_view chunk) -> bool {
    if (req.cancelled && req.cancelled->load()) {
      cancelled = true;
      return false;  // closes the connection: the server stops the watch
    }
    partial.append(chunk);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      std::string line = partial.substr(0, nl);
      partial.erase(0, nl + 1);
      json::error_code ec;
      json::value ev = json::parse(line, ec);
      if (ec || !ev.is_object()) continue;
      json::object& o = ev.as_object();
      const json::value* t = o.if_contains("type");
      if (t == nullptr || !t->is_string()) continue;
      std::string_view type = t->as_string();
      if (type == "start") {
        if (const json::value* p = o.if_contains("path")) out["path"] = *p;
        deadline = SteadyMs() + req.wait_ms;
      } else if (type == "end") {
        const json::value* r = o.if_contains("reason");
        bool timeout = r && r->is_string() && r->as_string() == "timeout";
        out["ended"] = !timeout;  // the watch's own time is up: not an end of the directory
        if (r && !timeout) out["reason"] = *r;
        return false;
      } else if (type == "error") {
        stream_error = ErrorOfStreamLine(o);
        return false;
      } else if (type != "keepalive") {
        events.emplace_back(std::move(o));
        if (events.size() >= req.max_events) return false;
      }
    }
    return deadline == 0 || SteadyMs() < deadline;
  };
  api::HttpClient c = client_;
  c.SetTimeout(std::max<int64_t>(req.wait_ms, 1) + kArmGraceMs);
  std::string target = "/v1/sandboxes/" + Enc(id) + "/files/watch?path=" + Enc(req.path) +
                       "&timeout_ms=" + std::to_string(std::max<int64_t>(req.wait_ms, 1));
  if (req.recursive) target += "&recursive=true";
  auto r = c.Stream("GET", target, "", "application/json", on_data);
  if (cancelled) return ToolFail("cancelled", "the request was cancelled");
  if (!r && r.error().code() != ErrorCode::kTimeout) {
    return ToolFail(std::string(r.error().code_name()), r.error().message());
  }
  if (r && r->status >= 300) return tl::unexpected<ToolError>(ErrorOfResponse(*r));
  if (stream_error) return tl::unexpected<ToolError>(*stream_error);
  if (!out.contains("path")) return ToolFail("backend_error", "the watch never started");
  if (!out.contains("ended")) out["ended"] = false;
  out["events"] = std::move(events);
  return out;
}

ToolResult<json::object> RestBackend::Snapshot(const std::string& id,
                                               const std::optional<std::string>& name) {
  json::object body;
  if (name) body["name"] = *name;
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/snapshots", json::serialize(body));
}

ToolResult<json::object> RestBackend::Rollback(const std::string& id,
                                               const std::string& snapshot_id) {
  json::object body;
  body["snapshot_id"] = snapshot_id;
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/rollback", json::serialize(body));
}

ToolResult<json::object> RestBackend::Fork(const std::string& snapshot_id,
                                           const json::object& body) {
  return Json("POST", "/v1/snapshots/" + Enc(snapshot_id) + "/fork", json::serialize(body));
}

ToolResult<json::object> RestBackend::ForkSandbox(const std::string& id, const json::object& body) {
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/fork", json::serialize(body));
}

ToolResult<json::object> RestBackend::Pause(const std::string& id, bool keep_memory) {
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/pause",
              keep_memory ? "{}" : "{\"memory\":false}");
}

ToolResult<json::object> RestBackend::Resume(const std::string& id,
                                             std::optional<int64_t> timeout_seconds) {
  json::object body;
  if (timeout_seconds) body["timeout_seconds"] = *timeout_seconds;
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/resume", json::serialize(body));
}

ToolResult<void> RestBackend::Destroy(const std::string& id) {
  auto r = Raw("DELETE", "/v1/sandboxes/" + Enc(id));
  if (!r) return tl::unexpected<ToolError>(r.error());
  return {};
}

}  // namespace asb::mcp
