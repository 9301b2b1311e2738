// Template routes (ADR 0012):
//   GET    /v1/templates                 200 {"templates":[template...]}, sorted by name
//   GET    /v1/templates/{name}          200 template | 404
//   DELETE /admin/templates/{name}       204 | 404 | 409 while a sandbox uses it or it is the
//                                        server's default template (admin scope, as /admin/*)
// A template carries seed A's manifest fields (name, display_name, version, description, tools,
// base, resources, created_at) plus source, packages, env and size_bytes. `resources` are the
// defaults a create without its own values gets: the template's, within the server's limits,
// else the server's defaults.
#include <algorithm>
#include <boost/json.hpp>

#include "api/handlers.h"
#include "api/json_number.h"
#include "api/resource_json.h"
#include "core/sandbox_manager.h"
#include "core/sandbox_resources.h"
#include "core/template_defaults.h"
#include "core/template_install.h"

namespace asb::api {

namespace json = boost::json;

json::object TemplateJson(const core::TemplateInfo& t, const core::Limits& lim) {
  const core::TemplateManifest& m = t.manifest;
  json::object o;
  o["name"] = t.name;
  o["display_name"] = t.display_name.empty() ? t.name : t.display_name;
  o["description"] = t.description;
  o["version"] = m.version;
  o["base"] = m.base;
  o["source"] = m.source;
  json::array tools;
  for (const auto& x : t.tools) tools.emplace_back(x);
  o["tools"] = std::move(tools);
  json::array packages;
  for (const auto& x : m.packages) packages.emplace_back(x);
  o["packages"] = std::move(packages);
  json::object env;
  for (const auto& [k, v] : m.env) env[k] = v;
  o["env"] = std::move(env);
  // What a sandbox of this template gets when the request names none: the same resolution as
  // create's (core/sandbox_resources.h). An empty request cannot be out of range.
  json::object r;
  const core::SandboxResources res = *core::ResolveResources(lim, m.resources, {});
  r["cpus"] = JsonNumber(res.cpus);
  r["memory_mb"] = res.memory_mb;
  r["workspace_mb"] = res.workspace_mb;
  o["resources"] = std::move(r);
  // What its sandboxes' commands default to (core/template_defaults.h); a manifest those
  // cannot honour (installed before the check) shows its raw values, and creates fail.
  auto d = core::ResolveTemplateDefaults(m);
  o["default_workdir"] = d ? d->workdir : m.workdir;
  o["default_user"] = d ? d->user : m.user;
  o["size_bytes"] = m.size_bytes;
  if (m.created_at.empty()) {
    o["created_at"] = nullptr;
  } else {
    o["created_at"] = m.created_at;
  }
  return o;
}

namespace {

Result<core::TemplateInfo> FindByName(core::SandboxManager& m, const std::string& name) {
  if (!core::ValidateTemplateName(name)) {
    return Fail(Error::NotFound("template '" + name.substr(0, 64) + "' not found"));
  }
  auto t = m.templates().Find(name);
  if (!t) return Fail(Error::NotFound(t.error().message()));
  return t;
}

Result<HttpResponse> Remove(core::SandboxManager& m, const std::string& name) {
  ASB_ASSIGN_OR_RETURN(core::TemplateInfo t, FindByName(m, name));
  if (t.name == m.config().default_template) {
    return Fail(Error::Conflict("template '" + t.name + "' is the server's default template"));
  }
  ASB_ASSIGN_OR_RETURN(auto live, m.lifecycle().List(core::kAnyOwner));
  std::string users;
  for (const auto& s : live) {
    if (s.template_name == t.name) users += (users.empty() ? "" : ", ") + s.id;
  }
  if (!users.empty()) {
    return Fail(Error::Conflict("template '" + t.name + "' is in use by sandbox(es) " + users));
  }
  ASB_TRY(core::RemoveTemplate(core::TemplateLayout(m.config().TemplatesDir()), t.name));
  return NoContent();
}

}  // namespace

void AddTemplateRoutes(Router& router, ApiContext& ctx) {
  core::SandboxManager* m = ctx.manager;
  router.Add("GET", "/v1/templates", Wrap([m](HttpRequest&) -> Result<HttpResponse> {
               json::array list;
               for (const auto& t : m->templates().List()) {
                 list.emplace_back(TemplateJson(t, m->config().limits));
               }
               json::object o;
               o["templates"] = std::move(list);
               return JsonResponse(200, json::serialize(o));
             }));
  router.Add("GET", "/v1/templates/{name}", Wrap([m](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(core::TemplateInfo t, FindByName(*m, req.Param("name")));
               return JsonResponse(200, json::serialize(TemplateJson(t, m->config().limits)));
             }));
  router.Add("DELETE", "/admin/templates/{name}",
             Wrap([m](HttpRequest& req) { return Remove(*m, req.Param("name")); }));
}

}  // namespace asb::api
