// Sandbox lifecycle routes (ADR 0007):
//   POST   /v1/sandboxes               create       201 sandbox (Idempotency-Key: once per key,
//                                                   api/idempotency.h)
// Seed B's create fields (ADR 0007): "image", an alias of "template"; "read_only_rootfs", which
// can only be true (every sandbox's root is its template, mounted read-only). Its answers carry
// "image" beside "template".
//   GET    /v1/sandboxes               list         200 {"sandboxes":[...]}
//   GET    /v1/sandboxes/{id}          inspect      200 sandbox
//   DELETE /v1/sandboxes/{id}          destroy      204
//   POST   /v1/sandboxes/{id}/timeout  set the TTL  200 sandbox
//   GET    /v1/backends                the isolation backends: availability, capabilities
//   POST   /v1/sandboxes/{id}/pause    pause        200 sandbox (status "paused"; ADR 0024)
//   POST   /v1/sandboxes/{id}/resume   resume       200 sandbox; body {"timeout_seconds"}
//                                                   optional: the TTL from now (default: its
//                                                   last TTL)
#include <boost/json.hpp>
#include <limits>

#include "api/handlers.h"
#include "api/idempotency.h"
#include "api/json_body.h"
#include "api/json_number.h"
#include "api/resource_json.h"
#include "api/sandbox_list_query.h"
#include "api/text.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

constexpr int64_t kMinInt = std::numeric_limits<int64_t>::min() / 2;
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max() / 2;

}  // namespace

// The body of a create (api/resource_json.h).
Result<core::CreateRequest> ParseCreateRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(text));
  core::CreateRequest req;
  ASB_ASSIGN_OR_RETURN(auto tmpl, body.String("template"));
  ASB_ASSIGN_OR_RETURN(auto image, body.String("image"));
  ASB_ASSIGN_OR_RETURN(tmpl, MergeAlias("template", std::move(tmpl), "image", std::move(image)));
  if (tmpl) req.template_name = *tmpl;
  ASB_ASSIGN_OR_RETURN(auto read_only, body.Bool("read_only_rootfs"));
  if (read_only && !*read_only) {
    return Fail(Error::InvalidArgument(
        "read_only_rootfs: false is not supported: every sandbox's root file system is its "
        "template, mounted read-only; write under /workspace or /tmp, or build a template with "
        "what you need (agent-sandbox template build)"));
  }
  ASB_ASSIGN_OR_RETURN(req.cpus, body.Number("cpus"));
  ASB_ASSIGN_OR_RETURN(req.memory_mb, body.Integer("memory_mb", kMinInt, kMaxInt));
  ASB_ASSIGN_OR_RETURN(req.pids_limit, body.Integer("pids_limit", kMinInt, kMaxInt));
  ASB_ASSIGN_OR_RETURN(req.workspace_mb, body.Integer("workspace_mb", kMinInt, kMaxInt));
  ASB_ASSIGN_OR_RETURN(req.timeout_seconds, body.Integer("timeout_seconds", kMinInt, kMaxInt));
  ASB_ASSIGN_OR_RETURN(req.idle_timeout_seconds,
                       body.Integer("idle_timeout_seconds", kMinInt, kMaxInt));
  ASB_ASSIGN_OR_RETURN(auto env, body.StringMap("env"));
  if (env) req.env = std::move(*env);
  ASB_ASSIGN_OR_RETURN(auto network, body.Bool("network"));
  if (network) req.network = *network;
  ASB_ASSIGN_OR_RETURN(auto auto_pause, body.Bool("auto_pause"));
  if (auto_pause) req.auto_pause = *auto_pause;
  ASB_ASSIGN_OR_RETURN(auto keep_memory, body.Bool("auto_pause_keep_memory"));
  if (keep_memory) req.auto_pause_keep_memory = *keep_memory;
  ASB_ASSIGN_OR_RETURN(auto auto_resume, body.Bool("auto_resume"));
  if (auto_resume) req.auto_resume = *auto_resume;
  ASB_ASSIGN_OR_RETURN(auto public_traffic, body.Bool("allow_public_traffic"));
  if (public_traffic) req.allow_public_traffic = *public_traffic;
  ASB_ASSIGN_OR_RETURN(auto host_mask, body.String("mask_request_host"));
  if (host_mask) req.mask_request_host = std::move(*host_mask);
  ASB_ASSIGN_OR_RETURN(auto backend, body.String("backend"));
  if (backend) {
    if (backend->empty()) return Fail(Error::InvalidArgument("backend: must not be empty"));
    req.backend = std::move(*backend);
  }
  ASB_ASSIGN_OR_RETURN(auto policy, body.ObjectJson("network_policy"));
  if (policy) {
    auto p = isolation::net::PolicyFromJson(*policy);
    if (!p) return Fail(std::move(p).error().WithContext("network_policy"));
    req.network_policy = std::move(*p);
  }
  ASB_TRY(body.Finish());
  return req;
}

// The sandbox as the API shows it (api/resource_json.h).
json::object SandboxJson(const core::SandboxInfo& s) {
  json::object o;
  o["id"] = s.id;
  o["status"] = core::SandboxStateName(s.state);
  o["template"] = s.template_name;
  o["image"] = s.template_name;  // seed B's name for the same
  o["backend"] = s.backend;
  o["cpus"] = JsonNumber(s.cpus);
  o["memory_mb"] = s.memory_mb;
  o["pids_limit"] = s.pids_limit;
  o["workspace_mb"] = s.workspace_mb;
  o["network"] = s.network;
  o["read_only_rootfs"] = s.read_only_rootfs;
  json::array keys;
  for (const auto& kv : s.env) keys.emplace_back(kv.first);
  o["env_keys"] = std::move(keys);
  o["default_workdir"] = s.default_workdir;
  o["default_user"] = s.default_user;
  o["created_at"] = FormatRfc3339(s.created_at_ms);
  o["expires_at"] = FormatRfc3339(s.expires_at_ms);
  o["timeout_seconds"] = s.timeout_seconds;
  o["idle_timeout_seconds"] = s.idle_timeout_seconds;
  o["auto_pause"] = s.auto_pause;
  o["auto_pause_keep_memory"] = s.auto_pause_keep_memory;
  o["auto_resume"] = s.auto_resume;
  o["allow_public_traffic"] = s.allow_public_traffic;
  o["mask_request_host"] =
      s.mask_request_host.empty() ? json::value(nullptr) : json::value(s.mask_request_host);
  if (s.paused_at_ms != 0) {
    o["paused_at"] = FormatRfc3339(s.paused_at_ms);
  } else {
    o["paused_at"] = nullptr;
  }
  // Whether its pause kept the memory (resume continues) or only the files (resume starts
  // afresh); null unless paused.
  if (s.state == core::SandboxState::kPaused) {
    o["paused_memory"] = !s.paused_workspace_snapshot_id.has_value();
  } else {
    o["paused_memory"] = nullptr;
  }
  if (s.source_snapshot_id) {
    o["source_snapshot_id"] = *s.source_snapshot_id;
  } else {
    o["source_snapshot_id"] = nullptr;
  }
  // Origin and last rollback apart (source_snapshot_id is either, seed B's field).
  o["forked_from_snapshot_id"] =
      s.forked_from_snapshot_id ? json::value(*s.forked_from_snapshot_id) : json::value(nullptr);
  if (s.rolled_back_to_snapshot_id) {
    json::object rb;
    rb["snapshot_id"] = *s.rolled_back_to_snapshot_id;
    rb["at"] = FormatRfc3339(s.rolled_back_at_ms);
    o["last_rollback"] = std::move(rb);
  } else {
    o["last_rollback"] = nullptr;
  }
  if (!s.error_message.empty()) o["error_message"] = s.error_message;
  return o;
}

HttpResponse SandboxResponse(int status, const core::SandboxInfo& s) {
  HttpResponse r = JsonResponse(status, json::serialize(SandboxJson(s)));
  r.sandbox_id = s.id;
  return r;
}

void AddSandboxRoutes(Router& router, ApiContext& ctx) {
  core::SandboxLifecycle* m = &ctx.manager->lifecycle();

  store::Store* st = ctx.store;
  router.Add("POST", "/v1/sandboxes", Wrap([m, st](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(core::CreateRequest cr, ParseCreateRequest(req.body));
               auto create = [&]() -> Result<HttpResponse> {
                 ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, m->Create(OwnerOf(req), cr));
                 return SandboxResponse(201, s);
               };
               auto key = req.headers.find("idempotency-key");
               if (key == req.headers.end()) return create();
               return RunIdempotent(st, req, key->second, create);  // api/idempotency.h
             }));

  router.Add("GET", "/v1/sandboxes", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               // Oldest first unless ?order=desc; ?template, ?status, ?started_after and
               // ?started_before filter (sandbox_list_query.h).
               ASB_ASSIGN_OR_RETURN(const SandboxListQuery query,
                                    ParseSandboxListQuery(req, {.template_name = "template",
                                                                .started_after = "started_after",
                                                                .started_before = "started_before",
                                                                .newest_first_default = false}));
               std::optional<core::SandboxState> status;
               if (const std::string* st = req.Query("status"); st != nullptr && !st->empty()) {
                 status = core::ParseSandboxState(*st);
                 if (!status || *status == core::SandboxState::kDestroyed) {
                   return Fail(Error::InvalidArgument(
                       "status: creating, running, paused, stopping or error"));
                 }
               }
               ASB_ASSIGN_OR_RETURN(std::vector<core::SandboxInfo> all, m->List(OwnerOf(req)));
               FilterAndOrder(query, &all);
               if (status) {
                 std::erase_if(all, [&](const core::SandboxInfo& s) { return s.state != *status; });
               }
               json::array list;
               // An admin sees every tenant's sandboxes; each says whose (the console's owner
               // column). A tenant's own list never names owners.
               const bool admin = OwnerOf(req) == core::kAnyOwner;
               for (const auto& s : all) {
                 json::object o = SandboxJson(s);
                 if (admin) o["owner"] = s.owner;
                 list.emplace_back(std::move(o));
               }
               json::object o;
               o["sandboxes"] = std::move(list);
               return JsonResponse(200, json::serialize(o));
             }));

  router.Add("GET", "/v1/sandboxes/{id}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, m->Get(OwnerOf(req), id));
               return SandboxResponse(200, s);
             }));

  router.Add("DELETE", "/v1/sandboxes/{id}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_TRY(m->Destroy(OwnerOf(req), id));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));

  router.Add("POST", "/v1/sandboxes/{id}/timeout",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto secs, body.Integer("timeout_seconds", kMinInt, kMaxInt));
               ASB_TRY(body.Finish());
               if (!secs) return Fail(Error::InvalidArgument("timeout_seconds: required"));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, m->SetTimeout(OwnerOf(req), id, *secs));
               return SandboxResponse(200, s);
             }));

  router.Add("GET", "/v1/backends", Wrap([m](HttpRequest&) -> Result<HttpResponse> {
               json::array list;
               std::string default_name;
               for (const core::BackendInfo& b : m->Backends()) {
                 json::object o;
                 o["name"] = b.name;
                 o["available"] = b.available;
                 if (b.available) {
                   o["reason"] = nullptr;
                 } else {
                   o["reason"] = b.reason;
                 }
                 if (b.accelerator.empty()) {
                   o["accelerator"] = nullptr;
                 } else {
                   o["accelerator"] = b.accelerator;
                 }
                 json::object caps;
                 for (const auto& [k, v] : b.capabilities) caps[k] = v;
                 o["capabilities"] = std::move(caps);
                 if (b.is_default) default_name = b.name;
                 list.emplace_back(std::move(o));
               }
               json::object out;
               out["default"] = default_name;
               out["backends"] = std::move(list);
               return JsonResponse(200, json::serialize(out));
             }));

  router.Add("POST", "/v1/sandboxes/{id}/pause",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               // memory: false keeps only the files (SandboxLifecycle::Pause).
               ASB_ASSIGN_OR_RETURN(std::optional<bool> memory, body.Bool("memory"));
               ASB_TRY(body.Finish());  // an unknown field is refused, not ignored
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s,
                                    m->Pause(OwnerOf(req), id, memory.value_or(true)));
               return SandboxResponse(200, s);
             }));

  router.Add("POST", "/v1/sandboxes/{id}/resume",
             Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(req.body));
               ASB_ASSIGN_OR_RETURN(auto secs, body.Integer("timeout_seconds", kMinInt, kMaxInt));
               // memory: false resumes by a reboot (SandboxLifecycle::Resume).
               ASB_ASSIGN_OR_RETURN(std::optional<bool> memory, body.Bool("memory"));
               ASB_TRY(body.Finish());
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s,
                                    m->Resume(OwnerOf(req), id, secs, memory.value_or(true)));
               return SandboxResponse(200, s);
             }));
}

}  // namespace asb::api
