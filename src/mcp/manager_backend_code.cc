// The code interpreter of the manager back end (manager_backend.h): core::CodeService with the
// REST routes' parser and shapes (api/code_json.h), so /mcp answers what /v1/.../code does.
#include "api/code_json.h"
#include "api/json_body.h"
#include "mcp/manager_backend.h"
#include "mcp/manager_support.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

ToolResult<void> CheckSandbox(const std::string& id) { return CheckId(id, "sb_", "sandbox " + id); }

ToolResult<void> CheckContext(const std::string& cid) {
  return CheckId(cid, "ctx_", "code context " + cid);
}

}  // namespace

ToolResult<json::object> ManagerBackend::RunCode(const std::string& id, const json::object& body,
                                                 const ExecHooks& hooks) {
  if (auto c = CheckSandbox(id); !c) return tl::unexpected<ToolError>(c.error());
  auto req = api::ParseCodeRequest(json::serialize(body));
  if (!req) return FromError(req.error());
  auto ex = m_.code().Start(caller_.owner, id, *req);
  if (!ex) return FromError(ex.error());
  const std::atomic<bool>* cancelled = hooks.cancelled;
  auto stop = [cancelled] { return cancelled != nullptr && cancelled->load(); };
  auto r = api::CollectCodeExecution(**ex, stop, hooks.output);
  if (stop()) return ToolFail("cancelled", "the request was cancelled; code interrupted");
  if (!r) return FromError(r.error());
  return std::move(*r);
}

ToolResult<json::object> ManagerBackend::CreateCodeContext(const std::string& id,
                                                           const json::object& o) {
  if (auto c = CheckSandbox(id); !c) return tl::unexpected<ToolError>(c.error());
  auto body = api::JsonBody::Parse(json::serialize(o));
  if (!body) return FromError(body.error());
  core::CodeContextOptions opts;
  auto language = body->String("language");
  if (!language) return FromError(language.error());
  auto cwd = body->String("cwd");
  if (!cwd) return FromError(cwd.error());
  if (auto f = body->Finish(); !f) return FromError(f.error());
  if (*language) opts.language = **language;
  if (*cwd) opts.cwd = **cwd;
  auto ctx = m_.code().CreateContext(caller_.owner, id, opts);
  if (!ctx) return FromError(ctx.error());
  return api::CodeContextJson(*ctx);
}

ToolResult<json::object> ManagerBackend::ListCodeContexts(const std::string& id) {
  if (auto c = CheckSandbox(id); !c) return tl::unexpected<ToolError>(c.error());
  return ListJson(m_.code().ListContexts(caller_.owner, id), "contexts",
                  [](const core::CodeContextInfo& c) { return api::CodeContextJson(c); });
}

ToolResult<json::object> ManagerBackend::RestartCodeContext(const std::string& id,
                                                            const std::string& context_id) {
  if (auto c = CheckSandbox(id); !c) return tl::unexpected<ToolError>(c.error());
  if (auto c = CheckContext(context_id); !c) return tl::unexpected<ToolError>(c.error());
  auto ctx = m_.code().RestartContext(caller_.owner, id, context_id);
  if (!ctx) return FromError(ctx.error());
  return api::CodeContextJson(*ctx);
}

ToolResult<void> ManagerBackend::DeleteCodeContext(const std::string& id,
                                                   const std::string& context_id) {
  if (auto c = CheckSandbox(id); !c) return tl::unexpected<ToolError>(c.error());
  if (auto c = CheckContext(context_id); !c) return tl::unexpected<ToolError>(c.error());
  auto s = m_.code().DeleteContext(caller_.owner, id, context_id);
  if (!s) return FromError(s.error());
  return {};
}

}  // namespace asb::mcp
