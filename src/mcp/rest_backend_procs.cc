// Background processes and ports of the REST back end (rest_backend.h): one REST call each,
// except sandbox_process_output, which reads the process (GET), follows its NDJSON stream
// (base64, so that bytes are counted exactly) and reads it again for its state after.
#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <optional>

#include "api/text.h"
#include "api/url.h"
#include "mcp/process_output.h"
#include "mcp/rest_backend.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

std::string Enc(std::string_view s) { return api::PercentEncode(s); }

std::string ProcPath(const std::string& id, int pid) {
  return "/v1/sandboxes/" + Enc(id) + "/processes/" + std::to_string(pid);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Codes the ports proxy itself answers with (api/errors.cc); an upstream's answer in our
// error shape with one of these cannot be told from the proxy's own (documented limit).
bool IsProxyFailure(const api::ClientResponse& r) {
  static const char* kCodes[] = {"not_found",    "conflict",      "unavailable",
                                 "timeout",      "backend_error", "invalid_request",
                                 "unauthorized", "forbidden",     "limit_exceeded"};
  for (const char* c : kCodes) {
    if (r.error_code == c) return true;
  }
  return false;
}

}  // namespace

ToolResult<json::object> RestBackend::StartProcess(const std::string& id,
                                                   const json::object& body) {
  return Json("POST", "/v1/sandboxes/" + Enc(id) + "/processes", json::serialize(body));
}

ToolResult<json::object> RestBackend::ListProcesses(const std::string& id) {
  return Json("GET", "/v1/sandboxes/" + Enc(id) + "/processes");
}

ToolResult<ProcessOutput> RestBackend::ReadProcessOutput(const std::string& id,
                                                         const OutputRequest& req) {
  auto before = Json("GET", ProcPath(id, req.pid));
  if (!before) return tl::unexpected<ToolError>(before.error());
  const json::value* written = before->if_contains("output_bytes");
  const uint64_t n = written && written->is_number() ? written->to_number<uint64_t>() : 0;
  OutputCollector col(req, n, NowMs());
  const json::value* state = before->if_contains("state");
  bool running = state && state->is_string() && state->as_string() == "running";
  if (n == 0 && (req.wait_ms == 0 || !running)) return col.Finish(std::move(*before));
  std::string partial;
  std::optional<ToolError> stream_error;
  bool exited = false;
  bool cancelled = false;
  auto on_data = [&](std::string_view chunk) -> bool {
    if (req.cancelled && req.cancelled->load()) {
      cancelled = true;
      return false;
    }
    partial.append(chunk);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      json::error_code ec;
      json::value ev = json::parse(std::string_view(partial).substr(0, nl), ec);
      partial.erase(0, nl + 1);
      if (ec || !ev.is_object()) continue;
      const json::object& o = ev.as_object();
      const json::value* t = o.if_contains("type");
      std::string_view type = t && t->is_string() ? std::string_view(t->as_string()) : "";
      if (type == "stdout" || type == "stderr") {
        const json::value* d = o.if_contains("data");
        if (d && d->is_string()) {
          auto bytes = api::Base64Decode(d->as_string(), "data");
          if (bytes) col.Add(*bytes);
        }
      } else if (type == "skipped") {
        const json::value* n = o.if_contains("bytes");
        if (n && n->is_number()) col.Skip(n->to_number<uint64_t>());
      } else if (type == "exit") {
        exited = true;
      } else if (type == "error") {
        stream_error = ErrorOfStreamLine(o);
      }
    }
    return !exited && !stream_error && !col.Done(NowMs());
  };
  // The stream is given until the collector's last moment (on_data ends it sooner when a line
  // arrives once Done(); a silent process keeps it to that moment).
  api::HttpClient c = client_;
  c.SetTimeout(std::max<int64_t>(req.wait_ms + (n > 0 ? kReplayGraceMs : 0), 1));
  auto r = c.Stream("GET",
                    ProcPath(id, req.pid) +
                        "/stream?encoding=base64&replay_bytes=" + std::to_string(req.tail_bytes),
                    "", "application/json", on_data);
  if (cancelled) return ToolFail("cancelled", "the request was cancelled");
  if (!r && r.error().code() != ErrorCode::kTimeout) {
    return ToolFail(std::string(r.error().code_name()), r.error().message());
  }
  if (r && r->status >= 300) return tl::unexpected<ToolError>(ErrorOfResponse(*r));
  if (stream_error) return tl::unexpected<ToolError>(*stream_error);
  auto after = Json("GET", ProcPath(id, req.pid));
  return col.Finish(after ? std::move(*after) : std::move(*before));
}

ToolResult<uint64_t> RestBackend::WriteProcessStdin(const std::string& id, int pid,
                                                    std::string_view data) {
  json::object body;
  body["data"] = api::Base64Encode(data);
  body["encoding"] = "base64";
  auto v = Json("POST", ProcPath(id, pid) + "/stdin", json::serialize(body));
  if (!v) return tl::unexpected<ToolError>(v.error());
  const json::value* n = v->if_contains("bytes");
  return n && n->is_number() ? n->to_number<uint64_t>() : 0;
}

ToolResult<void> RestBackend::CloseProcessStdin(const std::string& id, int pid) {
  auto r = Raw("POST", ProcPath(id, pid) + "/close-stdin");
  if (!r) return tl::unexpected<ToolError>(r.error());
  return {};
}

ToolResult<void> RestBackend::SignalProcess(const std::string& id, int pid,
                                            const std::string& signal) {
  json::object body;
  body["signal"] = signal;
  auto r = Raw("POST", ProcPath(id, pid) + "/signal", json::serialize(body));
  if (!r) return tl::unexpected<ToolError>(r.error());
  return {};
}

ToolResult<json::object> RestBackend::KillProcess(const std::string& id, int pid) {
  return Json("DELETE", ProcPath(id, pid));
}

ToolResult<PortResponse> RestBackend::RequestPort(const std::string& id, const PortRequest& req) {
  api::HttpClient c = client_;
  c.SetTimeout(req.timeout_ms);
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : req.headers) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "content-type") {
      content_type = value;
    } else {
      c.SetHeader(name, value);
    }
  }
  PortResponse out;
  bool cancelled = false;
  auto on_data = [&](std::string_view chunk) -> bool {
    if (req.cancelled && req.cancelled->load()) {
      cancelled = true;
      return false;
    }
    out.body.append(chunk);
    if (out.body.size() <= req.max_body_bytes) return true;
    out.body.resize(req.max_body_bytes);
    out.truncated = true;
    return false;
  };
  auto r = c.Stream(req.method,
                    "/v1/sandboxes/" + Enc(id) + "/ports/" + std::to_string(req.port) + req.path,
                    req.body, content_type, on_data);
  if (cancelled) return ToolFail("cancelled", "the request was cancelled");
  if (!r) {
    if (r.error().code() == ErrorCode::kTimeout) {
      return ToolFail("timeout", "port " + std::to_string(req.port) + " did not answer within " +
                                     std::to_string(req.timeout_ms) + " ms");
    }
    return ToolFail(std::string(r.error().code_name()), r.error().message());
  }
  if (r->status >= 400 && IsProxyFailure(*r)) return ToolFail(r->error_code, r->error_message);
  out.status = r->status;
  for (const auto& [name, value] : r->headers) out.headers.emplace_back(name, value);
  if (r->status >= 300 || out.body.empty()) {  // a body Stream collected instead of streaming
    if (!r->body.empty()) out.body = std::move(r->body);
    if (out.body.size() > req.max_body_bytes) {
      out.body.resize(req.max_body_bytes);
      out.truncated = true;
    }
  }
  return out;
}

}  // namespace asb::mcp
