// The code interpreter of the REST back end (rest_backend.h): one REST call each; RunCode
// follows the NDJSON stream (handlers_code.cc's header is the wire spec) and answers the
// object the sync POST .../code would have.
#include <boost/json.hpp>
#include <optional>

#include "api/url.h"
#include "mcp/rest_backend.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

std::string ContextsPath(const std::string& id) {
  return "/v1/sandboxes/" + api::PercentEncode(id) + "/contexts";
}

}  // namespace

ToolResult<json::object> RestBackend::RunCode(const std::string& id, const json::object& body,
                                              const ExecHooks& hooks) {
  std::string partial, out, err;
  json::object answer;  // context_id, language, then the end's fields
  json::array results;
  json::value error = nullptr;
  bool ended = false;
  std::optional<ToolError> stream_error;
  bool stopped = false;
  auto on_data = [&](std::string_view chunk) -> bool {
    if (hooks.cancelled && hooks.cancelled->load()) {
      stopped = true;
      return false;  // closes the connection: the server interrupts the code
    }
    partial.append(chunk);
    for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
      json::error_code ec;
      json::value ev = json::parse(std::string_view(partial).substr(0, nl), ec);
      partial.erase(0, nl + 1);
      if (ec || !ev.is_object()) continue;
      json::object& o = ev.as_object();
      const json::value* t = o.if_contains("type");
      if (!t || !t->is_string()) continue;
      std::string type(t->as_string());
      o.erase("type");
      if (type == "context") {
        answer["context_id"] = o["context_id"];
        answer["language"] = o["language"];
      } else if (type == "stdout" || type == "stderr") {
        const json::value* d = o.if_contains("data");
        if (!d || !d->is_string()) continue;
        (type == "stdout" ? out : err).append(d->as_string());
        if (hooks.output) hooks.output(type, d->as_string());
      } else if (type == "result") {
        results.emplace_back(std::move(o));
      } else if (type == "error" && o.contains("code")) {
        // The server's own failure after the head (a kernel's error never has "code").
        stream_error = ErrorOfStreamLine(o);
      } else if (type == "error") {
        error = std::move(o);
      } else if (type == "end") {
        for (auto& kv : o) answer[kv.key()] = std::move(kv.value());
        ended = true;
      }
    }
    return true;
  };
  auto r = client_.Stream("POST", "/v1/sandboxes/" + api::PercentEncode(id) + "/code/stream",
                          json::serialize(body), "application/json", on_data);
  if (stopped) return ToolFail("cancelled", "the request was cancelled; code interrupted");
  if (!r) return ToolFail(std::string(r.error().code_name()), r.error().message());
  if (r->status >= 300) return tl::unexpected<ToolError>(ErrorOfResponse(*r));
  if (stream_error) return tl::unexpected<ToolError>(*stream_error);
  if (!ended) return ToolFail("backend_error", "code stream ended without an end line");
  answer["stdout"] = std::move(out);
  answer["stderr"] = std::move(err);
  answer["results"] = std::move(results);
  answer["error"] = std::move(error);
  return answer;
}

ToolResult<json::object> RestBackend::CreateCodeContext(const std::string& id,
                                                        const json::object& body) {
  return Json("POST", ContextsPath(id), json::serialize(body));
}

ToolResult<json::object> RestBackend::ListCodeContexts(const std::string& id) {
  return Json("GET", ContextsPath(id));
}

ToolResult<json::object> RestBackend::RestartCodeContext(const std::string& id,
                                                         const std::string& context_id) {
  return Json("POST", ContextsPath(id) + "/" + api::PercentEncode(context_id) + "/restart", "{}");
}

ToolResult<void> RestBackend::DeleteCodeContext(const std::string& id,
                                                const std::string& context_id) {
  auto r = Raw("DELETE", ContextsPath(id) + "/" + api::PercentEncode(context_id));
  if (!r) return tl::unexpected<ToolError>(r.error());
  return {};
}

}  // namespace asb::mcp
