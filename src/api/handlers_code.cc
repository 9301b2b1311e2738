// Code interpreter routes (ADR 0019; core/code_service.h):
//   POST   /v1/sandboxes/{id}/contexts                   {"language", "cwd"} -> 201 context
//   GET    /v1/sandboxes/{id}/contexts                   200 {"contexts": [context...]}
//   GET    /v1/sandboxes/{id}/contexts/{cid}             200 context
//   DELETE /v1/sandboxes/{id}/contexts/{cid}             204
//   POST   /v1/sandboxes/{id}/contexts/{cid}/restart     200 context (a fresh kernel)
//   POST   /v1/sandboxes/{id}/contexts/{cid}/interrupt   204
//   POST   /v1/sandboxes/{id}/code                       200 execution (below)
//   POST   /v1/sandboxes/{id}/code/stream                200 application/x-ndjson
// A context is {"id", "language", "cwd", "pid", "state": "running"|"dead", "default",
// "created_at"}. The code body is {"code", "context_id"?, "language"?, "timeout"? (seconds;
// alias timeout_seconds), "max_output_bytes"? (stdout+stderr+results share it; at most 1 MiB, the
// default)}.
// The execution is {"context_id", "language", "stdout", "stderr", "results": [result...],
// "error": {"name", "value", "traceback": [...]} | null, "status": "ok"|"error"|"timeout"|
// "dead", "execution_count", "duration_ms", "timed_out", "truncated", "truncated_outputs"
// (["results", "stderr", "stdout"]: which lost something), "dropped_results", "exit_code"?
// (bash)}.
// Without context_id and language, a Node template's sandbox runs javascript, others python. A
// result is {"is_main_result", "data": {mime: value}, "chart"?}. The stream's lines are
// {"type": "context", "context_id", "language"} first, then {"type": "stdout"|"stderr",
// "data"}, {"type": "result", ...result}, {"type": "error", "name", "value", "traceback"},
// keepalives, and last {"type": "end", "status", "execution_count", "duration_ms",
// "timed_out", "truncated", "truncated_outputs", "dropped_results", "exit_code"?}. A stream
// that fails after its head ends with the shared error line {"type": "error", "code",
// "message"} (it has "code", a kernel's error never does).
#include <boost/json.hpp>
#include <chrono>

#include "api/code_json.h"
#include "api/handlers.h"
#include "api/json_body.h"
#include "api/text.h"
#include "common/ids.h"
#include "core/code_service.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

HttpResponse ContextResponse(int status, const std::string& sandbox_id,
                             const core::CodeContextInfo& c) {
  HttpResponse r = JsonResponse(status, json::serialize(CodeContextJson(c)));
  r.sandbox_id = sandbox_id;
  return r;
}

Result<std::string> ContextIdParam(const HttpRequest& req) {
  const std::string& id = req.Param("cid");
  if (!IsValidId(id, "ctx_")) return Fail(Error::NotFound("code context " + id + " not found"));
  return id;
}

// The NDJSON form: relays the execution's events as they come (never blocks in Poll).
class CodeStreamBody final : public StreamBody {
 public:
  CodeStreamBody(std::unique_ptr<core::CodeExecution> ex, int64_t keepalive_ms)
      : ex_(std::move(ex)), keepalive_ms_(keepalive_ms) {
    json::object o;
    o["type"] = "context";
    o["context_id"] = ex_->context().id;
    o["language"] = ex_->context().language;
    first_ = json::serialize(o) + "\n";
    last_emit_ = Now();
  }
  ~CodeStreamBody() override { ex_->SetNotify(nullptr); }

  Chunk Poll() override {
    Chunk c;
    c.data = std::move(first_);
    first_.clear();
    while (c.data.size() < (1u << 20)) {
      std::optional<core::CodeEvent> ev = ex_->TryNext();
      if (!ev) break;
      json::object o;
      switch (ev->kind) {
        case core::CodeEvent::Kind::kStdout:
        case core::CodeEvent::Kind::kStderr:
          o["type"] = ev->kind == core::CodeEvent::Kind::kStdout ? "stdout" : "stderr";
          o["data"] = SanitizeUtf8(ev->text);
          break;
        case core::CodeEvent::Kind::kResult:
          o = CodeResultJson(ev->result);
          o["type"] = "result";
          break;
        case core::CodeEvent::Kind::kError:
          o = CodeErrorJson(ev->error);
          o["type"] = "error";
          break;
        case core::CodeEvent::Kind::kEnd:
          o["type"] = "end";
          PutCodeEnd(ev->end, o);
          c.done = true;
          break;
      }
      c.data += json::serialize(o);
      c.data += '\n';
      if (c.done) break;
    }
    const int64_t now = Now();
    if (!c.data.empty()) {
      last_emit_ = now;
    } else if (now - last_emit_ >= keepalive_ms_) {
      c.data = "{\"type\":\"keepalive\"}\n";
      last_emit_ = now;
    }
    return c;
  }
  void SetNotify(std::function<void()> notify) override { ex_->SetNotify(std::move(notify)); }
  void Cancel() override { ex_->SetNotify(nullptr); }  // the destructor interrupts the code

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::unique_ptr<core::CodeExecution> ex_;
  int64_t keepalive_ms_;
  std::string first_;
  int64_t last_emit_;
};

}  // namespace

void AddCodeRoutes(Router& router, ApiContext& ctx) {
  core::CodeService* m = &ctx.manager->code();
  int64_t keepalive_ms = ctx.stream_keepalive_ms;

  router.Add("POST", "/v1/sandboxes/{id}/contexts",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               core::CodeContextOptions o;
               ASB_ASSIGN_OR_RETURN(auto language, body.String("language"));
               ASB_ASSIGN_OR_RETURN(auto cwd, body.String("cwd"));
               ASB_TRY(body.Finish());
               if (language) o.language = *language;
               if (cwd) o.cwd = *cwd;
               ASB_ASSIGN_OR_RETURN(auto c, m->CreateContext(OwnerOf(req), id, o));
               return ContextResponse(201, id, c);
             }));
  router.Add("GET", "/v1/sandboxes/{id}/contexts",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(auto all, m->ListContexts(OwnerOf(req), id));
               json::array a;
               for (const auto& c : all) a.push_back(CodeContextJson(c));
               json::object o;
               o["contexts"] = std::move(a);
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }));
  router.Add("GET", "/v1/sandboxes/{id}/contexts/{cid}",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string cid, ContextIdParam(req));
               ASB_ASSIGN_OR_RETURN(auto c, m->GetContext(OwnerOf(req), id, cid));
               return ContextResponse(200, id, c);
             }));
  router.Add("DELETE", "/v1/sandboxes/{id}/contexts/{cid}",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string cid, ContextIdParam(req));
               ASB_TRY(m->DeleteContext(OwnerOf(req), id, cid));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));
  router.Add("POST", "/v1/sandboxes/{id}/contexts/{cid}/restart",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string cid, ContextIdParam(req));
               ASB_ASSIGN_OR_RETURN(auto c, m->RestartContext(OwnerOf(req), id, cid));
               return ContextResponse(200, id, c);
             }));
  router.Add("POST", "/v1/sandboxes/{id}/contexts/{cid}/interrupt",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(std::string cid, ContextIdParam(req));
               ASB_TRY(m->InterruptContext(OwnerOf(req), id, cid));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));
  router.Add("POST", "/v1/sandboxes/{id}/code", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(core::CodeRequest cr, ParseCodeRequest(req.body));
               ASB_ASSIGN_OR_RETURN(auto ex, m->Start(OwnerOf(req), id, cr));
               std::shared_ptr<std::atomic<bool>> gone = req.client_gone;
               ASB_ASSIGN_OR_RETURN(
                   json::object o,
                   CollectCodeExecution(*ex, [gone] { return gone && gone->load(); }, {}));
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = id;
               return r;
             }));
  router.Add("POST", "/v1/sandboxes/{id}/code/stream",
             Wrap([m, keepalive_ms](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(core::CodeRequest cr, ParseCodeRequest(req.body));
               ASB_ASSIGN_OR_RETURN(auto ex, m->Start(OwnerOf(req), id, cr));
               HttpResponse r;
               r.status = 200;
               r.content_type = "application/x-ndjson";
               r.stream = std::make_shared<CodeStreamBody>(std::move(ex), keepalive_ms);
               r.sandbox_id = id;
               return r;
             }));
}

}  // namespace asb::api
