// The code interpreter of `@e2b/code-interpreter` (its server on port 49999 of an E2B sandbox)
// on core::CodeService (ADR 0019), docs/e2b.md:
//   POST   /execute               {code, context_id?, language?}  200 NDJSON, one object a line:
//                                 {"type":"stdout"|"stderr","text"}, {"type":"result", "text",
//                                 "html", "png", ..., "chart", "is_main_result"},
//                                 {"type":"error","name","value","traceback"},
//                                 {"type":"number_of_executions","execution_count"}, and last
//                                 {"type":"end_of_execution"}
//   POST   /contexts              {language?, cwd?}  200 {id, language, cwd}
//   GET    /contexts              200 [{id, language, cwd}]
//   DELETE /contexts/{id}         204
//   POST   /contexts/{id}/restart 204
// Errors are plain {"code": <status>, "message"} (the SDK reads the status).
#include <boost/json.hpp>
#include <chrono>

#include "api/e2b_connect.h"
#include "api/e2b_envd.h"
#include "api/errors.h"
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// Our MIME types under the names E2B's Result has for them; others keep their MIME type.
std::string_view E2bMimeName(std::string_view mime) {
  if (mime == "text/plain") return "text";
  if (mime == "text/html") return "html";
  if (mime == "text/markdown") return "markdown";
  if (mime == "image/svg+xml") return "svg";
  if (mime == "image/png") return "png";
  if (mime == "image/jpeg") return "jpeg";
  if (mime == "application/pdf") return "pdf";
  if (mime == "text/latex") return "latex";
  if (mime == "application/javascript") return "javascript";
  if (mime == "application/json") return "json";
  return mime;
}

json::object ResultJson(const core::CodeResult& r) {
  json::object o;
  o["type"] = "result";
  for (const auto& [mime, value] : r.data) o[E2bMimeName(mime)] = value;
  for (const auto& [mime, text] : r.json_data) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (!ec) o[E2bMimeName(mime)] = std::move(v);
  }
  if (!r.chart_json.empty()) {
    boost::system::error_code ec;
    json::value v = json::parse(r.chart_json, ec);
    if (!ec) o["chart"] = std::move(v);
  }
  o["is_main_result"] = r.is_main_result;
  return o;
}

std::string Line(const json::object& o) { return json::serialize(o) + "\n"; }

class ExecuteBody final : public StreamBody {
 public:
  ExecuteBody(std::unique_ptr<core::CodeExecution> ex, int64_t keepalive_ms)
      : ex_(std::move(ex)), keepalive_ms_(keepalive_ms), last_emit_(Now()) {}
  ~ExecuteBody() override { ex_->SetNotify(nullptr); }  // the destructor interrupts the code

  Chunk Poll() override {
    Chunk c;
    while (c.data.size() < (1u << 20) && !c.done) {
      std::optional<core::CodeEvent> ev = ex_->TryNext();
      if (!ev) break;
      json::object o;
      switch (ev->kind) {
        case core::CodeEvent::Kind::kStdout:
        case core::CodeEvent::Kind::kStderr:
          o["type"] = ev->kind == core::CodeEvent::Kind::kStdout ? "stdout" : "stderr";
          o["text"] = SanitizeUtf8(ev->text);
          c.data += Line(o);
          break;
        case core::CodeEvent::Kind::kResult:
          c.data += Line(ResultJson(ev->result));
          break;
        case core::CodeEvent::Kind::kError: {
          o["type"] = "error";
          o["name"] = ev->error.name;
          o["value"] = ev->error.value;
          std::string tb;
          for (const std::string& l : ev->error.traceback) tb += l + "\n";
          o["traceback"] = tb;
          c.data += Line(o);
          break;
        }
        case core::CodeEvent::Kind::kEnd:
          if (ev->end.execution_count) {
            o["type"] = "number_of_executions";
            o["execution_count"] = *ev->end.execution_count;
            c.data += Line(o);
          }
          c.data += "{\"type\":\"end_of_execution\"}\n";
          c.done = true;
          break;
      }
    }
    const int64_t now = Now();
    if (!c.data.empty()) {
      last_emit_ = now;
    } else if (now - last_emit_ >= keepalive_ms_) {
      c.data = "{\"type\":\"keepalive\"}\n";  // the SDK skips types it does not know
      last_emit_ = now;
    }
    return c;
  }
  void SetNotify(std::function<void()> notify) override { ex_->SetNotify(std::move(notify)); }
  void Cancel() override { ex_->SetNotify(nullptr); }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::unique_ptr<core::CodeExecution> ex_;
  int64_t keepalive_ms_;
  int64_t last_emit_;
};

json::object ContextJson(const core::CodeContextInfo& c) {
  json::object o;
  o["id"] = c.id;
  o["language"] = c.language;
  o["cwd"] = E2bShownPath(c.cwd);
  return o;
}

Result<HttpResponse> Serve(const EnvdCall& c, HttpRequest& req) {
  core::CodeService& code = c.manager->code();
  const std::string& path = req.path;
  if (path == "/execute" && req.method == "POST") {
    ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
    core::CodeRequest cr;
    ASB_ASSIGN_OR_RETURN(auto text, StringOf(body, "code"));
    if (!text) return Fail(Error::InvalidArgument("code: required"));
    cr.code = *text;
    ASB_ASSIGN_OR_RETURN(cr.context_id, StringOf(body, "context_id"));
    ASB_ASSIGN_OR_RETURN(cr.language, StringOf(body, "language"));
    // runCode's envs: for this execution only (core::CodeRequest::env).
    ASB_ASSIGN_OR_RETURN(cr.env, StringMapOf(body, "env_vars"));
    ASB_ASSIGN_OR_RETURN(auto ex, code.Start(c.owner, c.sandbox_id, cr));
    HttpResponse r;
    r.status = 200;
    r.content_type = "application/x-ndjson";
    r.stream = std::make_shared<ExecuteBody>(std::move(ex), c.keepalive_ms);
    return r;
  }
  if (path == "/contexts" && req.method == "POST") {
    ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
    core::CodeContextOptions o;
    ASB_ASSIGN_OR_RETURN(auto lang, StringOf(body, "language"));
    ASB_ASSIGN_OR_RETURN(auto cwd, StringOf(body, "cwd"));
    if (lang) o.language = *lang;
    if (cwd) o.cwd = E2bPath(*cwd);
    ASB_ASSIGN_OR_RETURN(core::CodeContextInfo ctx, code.CreateContext(c.owner, c.sandbox_id, o));
    return JsonResponse(200, json::serialize(ContextJson(ctx)));
  }
  if (path == "/contexts" && req.method == "GET") {
    ASB_ASSIGN_OR_RETURN(auto list, code.ListContexts(c.owner, c.sandbox_id));
    json::array out;
    for (const auto& ctx : list) out.push_back(ContextJson(ctx));
    return JsonResponse(200, json::serialize(out));
  }
  const std::string prefix = "/contexts/";
  if (path.rfind(prefix, 0) == 0) {
    std::string rest = path.substr(prefix.size());
    const bool restart = rest.size() > 8 && rest.substr(rest.size() - 8) == "/restart";
    if (restart) rest.resize(rest.size() - 8);
    if (rest.empty() || rest.find('/') != std::string::npos) {
      return Fail(Error::NotFound("no such route"));
    }
    if (restart && req.method == "POST") {
      ASB_TRY(code.RestartContext(c.owner, c.sandbox_id, rest));
      return NoContent();
    }
    if (!restart && req.method == "DELETE") {
      ASB_TRY(code.DeleteContext(c.owner, c.sandbox_id, rest));
      return NoContent();
    }
  }
  return Fail(Error::NotFound("the code interpreter has no such route"));
}

}  // namespace

HttpResponse CodeInterpreterCall(const EnvdCall& call, HttpRequest& req) {
  Result<HttpResponse> r = Serve(call, req);
  HttpResponse out;
  if (r) {
    out = std::move(*r);
  } else {
    out = E2bHttpError(r.error());
  }
  out.sandbox_id = call.sandbox_id;
  return out;
}

}  // namespace asb::api
