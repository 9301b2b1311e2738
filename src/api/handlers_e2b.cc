// E2B compatibility (docs/e2b.md, ADR 0023): the official `e2b` SDKs, unmodified, against our
// server. Two surfaces on the server's own port, both on the core services (a sandbox made
// here is the same sandbox in /v1, the console and the CLI):
//   control plane  POST /sandboxes, POST /v2/sandboxes, GET /sandboxes, GET /v2/sandboxes,
//                  GET|DELETE /sandboxes/{id}, POST /sandboxes/{id}/timeout,
//                  POST /sandboxes/{id}/connect and /v2/sandboxes/{id}/connect,
//                  GET /sandboxes/{id}/metrics (the history in a window, and now),
//                  POST /sandboxes/{id}/pause and /resume (ADR 0024: the sandbox's processes
//                  stop where they are, memory kept; connect and resume continue it),
//                  POST /sandboxes/{id}/fork (count children of a running sandbox),
//                  POST /sandboxes/{id}/snapshots, GET /snapshots, DELETE /templates/{id}
//                  (E2B's snapshots are our workspace snapshots; create boots one by id or
//                  name).
//                  The API key (X-API-KEY) goes through the auth layer like every /v1 call:
//                  tenancy, scopes, rate limits, quotas and audit hold. Errors are E2B's
//                  {"code": <HTTP status>, "message"}; an empty success is 204.
//   sandbox traffic  every request with E2b-Sandbox-Id (and E2b-Sandbox-Port) headers, which
//                  the SDKs send when E2B_SANDBOX_URL points here, or whose Host is
//                  <port>-<sandbox id>.<preview domain> for ports 49983 and 49999: envd
//                  (e2b_envd.h) on port 49983, the code interpreter on 49999. The SDKs send no API
//                  key there but the sandbox's envdAccessToken (X-Access-Token, api/e2b_token.h),
//                  which opens that one sandbox and acts for its tenant.
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <thread>

#include "api/config.h"
#include "api/e2b_connect.h"
#include "api/e2b_envd.h"
#include "api/e2b_network.h"
#include "api/e2b_token.h"
#include "api/e2b_watchers.h"
#include "api/errors.h"
#include "api/handlers.h"
#include "api/preview.h"
#include "api/sandbox_list_query.h"
#include "api/text.h"
#include "api/url.h"
#include "common/clock.h"
#include "common/ids.h"
#include "core/sandbox_manager.h"

namespace asb::api {
namespace {

namespace json = boost::json;

// E2B's ports inside a sandbox: envd, and the code interpreter's server.
constexpr int64_t kEnvdPort = 49983;
constexpr int64_t kCodeInterpreterPort = 49999;
// GET /v2/sandboxes: page size default and most (E2B's API).
constexpr int64_t kDefaultPageSize = 100;
constexpr int64_t kMaxPageSize = 100;

struct Deps {
  core::SandboxManager* manager = nullptr;
  std::string secret;  // api/e2b_token.h; "" = no sandbox traffic
  int64_t keepalive_ms = 50'000;
  std::shared_ptr<E2bWatchers> watchers;
  std::string domain;  // the preview domain: sandbox.getHost(port) is <port>-<id>.<domain>
  bool internet_default = true;  // ApiContext::e2b_internet_default
};

int64_t NowMs() { return SystemClock::Instance().NowUnixMs(); }

Handler E2bWrap(std::function<Result<HttpResponse>(HttpRequest&)> fn) {
  return [fn = std::move(fn)](HttpRequest& req) -> HttpResponse {
    Result<HttpResponse> r = fn(req);
    if (!r) return E2bHttpError(r.error());
    return std::move(*r);
  };
}

// E2B's template names on ours: "code-interpreter-v1" is E2B's interpreter template, which is
// our python template.
std::string OurTemplate(std::string_view e2b) {
  if (e2b == "code-interpreter-v1" || e2b == "code-interpreter") return "python";
  return std::string(e2b);
}

// Seconds above this are "as long as allowed": the manager clamps to max_timeout_seconds, and
// now + seconds * 1000 stays far inside int64 milliseconds.
constexpr int64_t kSecondsCap = 100LL * 365 * 24 * 3600;

Result<std::optional<int64_t>> Seconds(const json::object& o, std::string_view name) {
  const json::value* v = FieldOf(o, name);
  if (v == nullptr) return std::optional<int64_t>();
  if (v->is_int64() && v->as_int64() > 0) {
    return std::optional<int64_t>(std::min(v->as_int64(), kSecondsCap));
  }
  if (v->is_uint64()) return std::optional<int64_t>(kSecondsCap);
  return Fail(
      Error::InvalidArgument(std::string(name) + ": must be a whole number of seconds > 0"));
}

// ?limit= of a paged list: 1..kMaxPageSize, kDefaultPageSize when absent.
Result<int64_t> PageLimit(const HttpRequest& req) {
  const std::string* l = req.Query("limit");
  if (l == nullptr) return kDefaultPageSize;
  char* end = nullptr;
  long long n = std::strtoll(l->c_str(), &end, 10);
  if (l->empty() || *end != '\0' || n < 1 || n > kMaxPageSize) {
    return Fail(Error::InvalidArgument("limit: must be 1.." + std::to_string(kMaxPageSize)));
  }
  return static_cast<int64_t>(n);
}

// E2B's memory switches (pause's and connect's `memory`, create's `autoPauseMemory`): true or
// absent keeps the memory (a freeze; a resume where it stopped), false keeps only the files (a
// files-only pause; a resume by a reboot). Another type is refused, never ignored.
Result<bool> MemorySwitch(const json::object& body, std::string_view field) {
  const json::value* m = FieldOf(body, field);
  if (m == nullptr || m->is_null()) return true;
  if (!m->is_bool()) return Fail(Error::InvalidArgument(std::string(field) + ": a boolean"));
  return m->as_bool();
}

json::object MetadataJson(const core::SandboxInfo& s) {
  json::object md;
  for (const auto& [k, v] : s.metadata) md[k] = v;
  return md;
}

// E2B's whole-CPU count of a sandbox whose limit is `cpus` cores (0.5 -> 1, 1.5 -> 2).
int64_t CpuCount(double cpus) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(cpus)));
}

// The Sandbox of create and connect.
json::object SandboxJson(const Deps& d, const core::SandboxInfo& s) {
  json::object o;
  o["sandboxID"] = s.id;
  o["templateID"] = s.template_name;
  o["alias"] = s.template_name;
  o["clientID"] = "agent-sandbox";
  o["envdVersion"] = kEnvdVersion;
  o["envdAccessToken"] = E2bAccessToken(d.secret, s.id);
  o["trafficAccessToken"] = E2bTrafficToken(d.secret, s.id);
  o["domain"] = d.domain;
  return o;
}

// E2B's two states: a paused sandbox is "paused", every other visible one "running".
std::string_view E2bState(const core::SandboxInfo& s) {
  return s.state == core::SandboxState::kPaused ? "paused" : "running";
}

// ListedSandbox and SandboxDetail.
json::object ListedJson(const core::SandboxInfo& s) {
  json::object o;
  o["sandboxID"] = s.id;
  o["templateID"] = s.template_name;
  o["alias"] = s.template_name;
  o["clientID"] = "agent-sandbox";
  o["startedAt"] = FormatRfc3339(s.created_at_ms);
  o["endAt"] = FormatRfc3339(s.expires_at_ms);
  o["cpuCount"] = CpuCount(s.cpus);
  o["memoryMB"] = s.memory_mb;
  o["diskSizeMB"] = s.workspace_mb;
  o["metadata"] = MetadataJson(s);
  o["state"] = E2bState(s);
  o["envdVersion"] = kEnvdVersion;
  json::object lifecycle;
  lifecycle["onTimeout"] = s.auto_pause ? "pause" : "kill";
  lifecycle["autoResume"] = s.auto_resume;
  o["lifecycle"] = std::move(lifecycle);
  return o;
}

Result<std::optional<core::SnapshotInfo>> SnapshotToBoot(const Deps& d, const HttpRequest& req,
                                                         const std::string& template_id);

// SandboxDetail's allowInternetAccess and network: the enforced egress in E2B's terms
// (e2b_network.h; a sandbox without network has no internet access and no lists), and its
// ports' public traffic and Host mask.
void AddNetworkJson(const core::SandboxInfo& s, json::object* o) {
  json::object net;
  net["allowPublicTraffic"] = s.allow_public_traffic;
  if (!s.mask_request_host.empty()) net["maskRequestHost"] = s.mask_request_host;
  if (!s.network) {
    (*o)["allowInternetAccess"] = false;
    (*o)["network"] = std::move(net);
    return;
  }
  const E2bEgress e = E2bEgressOf(s.network_policy);
  (*o)["allowInternetAccess"] = e.allow_internet_access.value_or(true);
  json::array allow, deny;
  for (const std::string& r : e.allow_out) allow.emplace_back(r);
  for (const std::string& r : e.deny_out) deny.emplace_back(r);
  if (!allow.empty()) net["allowOut"] = std::move(allow);
  if (!deny.empty()) net["denyOut"] = std::move(deny);
  (*o)["network"] = std::move(net);
}

// A list of strings, or absent (empty). At most isolation::net::kMaxRules entries.
Result<std::vector<std::string>> RuleListOf(const json::object& o, std::string_view name) {
  std::vector<std::string> out;
  const json::value* v = FieldOf(o, name);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array() || v->as_array().size() > isolation::net::kMaxRules) {
    return Fail(Error::InvalidArgument(std::string(name) + ": a list of at most " +
                                       std::to_string(isolation::net::kMaxRules) + " strings"));
  }
  for (const json::value& e : v->as_array()) {
    if (!e.is_string()) return Fail(Error::InvalidArgument(std::string(name) + ": strings only"));
    out.emplace_back(e.as_string());
  }
  return out;
}

// The egress E2B asks for: the switch `allow_internet_access` of `body`, the lists of `lists`
// (create's `network` object, or the update's body itself; nullptr: none).
Result<E2bEgress> EgressOf(const json::object& body, const json::object* lists) {
  E2bEgress e;
  if (const json::value* a = FieldOf(body, "allow_internet_access"); a && !a->is_null()) {
    if (!a->is_bool()) return Fail(Error::InvalidArgument("allow_internet_access: a boolean"));
    e.allow_internet_access = a->as_bool();
  }
  if (lists != nullptr) {
    ASB_ASSIGN_OR_RETURN(e.allow_out, RuleListOf(*lists, "allowOut"));
    ASB_ASSIGN_OR_RETURN(e.deny_out, RuleListOf(*lists, "denyOut"));
  }
  return e;
}

// The fields of E2B's network config (create's `network`, the update's body) that are not
// offered here: each refused by name with the reason, never ignored. `also_ok` names the
// fields the caller reads besides the egress lists.
Status RefuseUnofferedNetwork(const json::object& o, std::string_view where,
                              std::initializer_list<std::string_view> also_ok) {
  for (const auto& [key, value] : o) {
    if (key == "allowOut" || key == "denyOut" || value.is_null()) continue;
    if (std::find(also_ok.begin(), also_ok.end(), std::string_view(key)) != also_ok.end()) {
      continue;
    }
    const std::string field = std::string(where) + std::string(key);
    if (key == "rules") {
      if (value.is_object() && value.as_object().empty()) continue;
      return Fail(Error::InvalidArgument(
          field + ": rewriting outbound HTTPS requests is not offered (docs/e2b.md)"));
    }
    if (key == "egressProxy") {
      return Fail(Error::InvalidArgument(
          field + ": tunnelling egress through a SOCKS5 proxy is not offered (docs/e2b.md)"));
    }
    if (key == "httpsPorts") {
      if (value.is_array() && value.as_array().empty()) continue;
      return Fail(Error::InvalidArgument(
          field +
          ": ports that serve HTTPS are not offered; reach them as TCP through "
          "/v1/sandboxes/{id}/ports (docs/e2b.md)"));
    }
    return Fail(Error::InvalidArgument(field + ": unknown field"));
  }
  return {};
}

// E2B's network.allowPublicTraffic and network.maskRequestHost: whether the sandbox's ports
// answer without the traffic token (absent: they need it; E2B's own default is public, ours is
// not: docs/e2b.md), and the Host header they see.
Status PortTrafficOf(const json::object& body, core::CreateRequest* cr) {
  const json::value* n = FieldOf(body, "network");
  if (n == nullptr || !n->is_object()) return {};
  if (const json::value* p = FieldOf(n->as_object(), "allowPublicTraffic"); p && !p->is_null()) {
    if (!p->is_bool()) return Fail(Error::InvalidArgument("network.allowPublicTraffic: a boolean"));
    cr->allow_public_traffic = p->as_bool();
  }
  ASB_ASSIGN_OR_RETURN(auto mask,
                       StringOf(n->as_object(), "maskRequestHost", "network.maskRequestHost"));
  if (mask) cr->mask_request_host = std::move(*mask);
  return {};
}

// What an E2B create or snapshot boot asks of the network: outbound network on or off, or on
// where the server offers it, and the policy (absent: the server's default).
struct NetworkAsk {
  std::optional<bool> network;  // absent: as the server offers (when_offered) or inherited
  bool when_offered = false;
  std::optional<core::NetworkPolicy> policy;
};

// E2B's create: internet on by default where the server has networking (ApiContext::
// e2b_internet_default), allow_internet_access: false and the lists as e2b_network.h turns them
// into a policy. A sandbox that may reach nothing still gets its network where offered (all
// traffic denied), so that updateNetwork can open it later, as on E2B.
Result<NetworkAsk> CreateNetworkAsk(const Deps& d, const json::object& body) {
  const json::object* lists = nullptr;
  if (const json::value* n = FieldOf(body, "network"); n && !n->is_null()) {
    if (!n->is_object()) return Fail(Error::InvalidArgument("network: an object"));
    lists = &n->as_object();
    ASB_TRY(RefuseUnofferedNetwork(*lists, "network.", {"allowPublicTraffic", "maskRequestHost"}));
  }
  ASB_ASSIGN_OR_RETURN(E2bEgress egress, EgressOf(body, lists));
  NetworkAsk ask;
  const bool said = egress.allow_internet_access.has_value() || !egress.allow_out.empty() ||
                    !egress.deny_out.empty();
  if (!said) {
    ask.when_offered = d.internet_default;
    return ask;
  }
  ASB_ASSIGN_OR_RETURN(ask.policy,
                       E2bEgressPolicy(egress, d.manager->config().default_network_policy));
  if (isolation::net::DeniesAllTraffic(*ask.policy)) {
    ask.network = false;
    ask.when_offered = true;
  } else {
    ask.network = true;  // asked for egress: refused where the server has no networking
  }
  return ask;
}

Result<HttpResponse> Create(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
  core::CreateRequest cr;
  if (const json::value* t = FieldOf(body, "templateID")) {
    if (!t->is_string()) return Fail(Error::InvalidArgument("templateID: must be a string"));
    cr.template_name = OurTemplate(t->as_string());
  }
  ASB_ASSIGN_OR_RETURN(cr.timeout_seconds, Seconds(body, "timeout"));
  // E2B's timeout past our longest is the longest, as setTimeout and connect treat it.
  if (cr.timeout_seconds) {
    cr.timeout_seconds =
        std::min(*cr.timeout_seconds, d.manager->config().limits.max_timeout_seconds);
  }
  ASB_ASSIGN_OR_RETURN(cr.env, StringMapOf(body, "envVars"));
  ASB_ASSIGN_OR_RETURN(cr.metadata, StringMapOf(body, "metadata"));
  ASB_ASSIGN_OR_RETURN(const NetworkAsk net, CreateNetworkAsk(d, body));
  ASB_TRY(PortTrafficOf(body, &cr));
  cr.network = net.network.value_or(false);
  cr.network_when_offered = net.when_offered;
  if (cr.network || cr.network_when_offered) cr.network_policy = net.policy;
  if (const json::value* p = FieldOf(body, "autoPause")) {
    if (!p->is_bool()) return Fail(Error::InvalidArgument("autoPause: a boolean"));
    cr.auto_pause = p->as_bool();
  }
  // onTimeout: {action: 'pause', keepMemory: false}: the auto-pause keeps only the files.
  ASB_ASSIGN_OR_RETURN(cr.auto_pause_keep_memory, MemorySwitch(body, "autoPauseMemory"));
  // The SDKs send secure: true unless told otherwise. false asks for an envd that takes calls
  // without the envdAccessToken: anyone who learns a sandbox's id could then run commands in
  // it, which no tenant of a shared server may allow (ADR 0023), so it is refused.
  if (const json::value* sec = FieldOf(body, "secure")) {
    if (!sec->is_bool()) return Fail(Error::InvalidArgument("secure: a boolean"));
    if (!sec->as_bool()) {
      return Fail(Error::InvalidArgument(
          "secure: false is not offered: every sandbox's envd requires its envdAccessToken, "
          "which create and connect answer (docs/e2b.md)"));
    }
  }
  if (const json::value* r = FieldOf(body, "autoResume")) {
    const json::value* on = r->is_object() ? FieldOf(r->as_object(), "enabled") : nullptr;
    if (!r->is_object() || (on != nullptr && !on->is_bool())) {
      return Fail(Error::InvalidArgument("autoResume: {\"enabled\": <boolean>}"));
    }
    // Its commands, files and envd traffic resume it while paused (SandboxLifecycle::
    // WakeIfAutoResume); a backend that cannot pause refuses it at create.
    cr.auto_resume = on != nullptr && on->as_bool();
  }
  if (const json::value* v = FieldOf(body, "volumeMounts");
      v && v->is_array() && !v->as_array().empty()) {
    return Fail(Error::InvalidArgument("volumeMounts: volumes are not supported (docs/e2b.md)"));
  }
  // A snapshot's id or name boots a sandbox from it (E2B's Sandbox.create(snapshotId)): its
  // template, limits and workspace, with this request's TTL, env and metadata.
  ASB_ASSIGN_OR_RETURN(std::optional<core::SnapshotInfo> snap,
                       SnapshotToBoot(d, req, cr.template_name));
  core::SandboxInfo s;
  if (snap) {
    core::ForkRequest fr;
    fr.timeout_seconds = cr.timeout_seconds;
    // A snapshot's sandbox keeps its own network unless the create says otherwise.
    if (net.network || net.policy) {
      fr.network = cr.network;
      fr.network_when_offered = cr.network_when_offered;
      fr.network_policy = net.policy;
    }
    fr.env = cr.env;
    fr.metadata = cr.metadata;
    if (FieldOf(body, "autoPause") != nullptr) fr.auto_pause = cr.auto_pause;
    ASB_ASSIGN_OR_RETURN(s, d.manager->snapshots().Fork(OwnerOf(req), snap->id, fr));
  } else {
    ASB_ASSIGN_OR_RETURN(s, d.manager->lifecycle().Create(OwnerOf(req), cr));
  }
  HttpResponse r = JsonResponse(201, json::serialize(SandboxJson(d, s)));
  r.sandbox_id = s.id;
  return r;
}

// The caller's sandbox as E2B sees one: running or paused (others are not found).
Result<core::SandboxInfo> CallersSandbox(const Deps& d, const HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, d.manager->lifecycle().Get(OwnerOf(req), id));
  if (s.state != core::SandboxState::kRunning && s.state != core::SandboxState::kPaused) {
    return Fail(Error::NotFound("sandbox " + s.id + " is not running"));
  }
  return s;
}

// E2B's fork (POST /sandboxes/{id}/fork {count?, timeout?}): the running sandbox's workspace at
// one instant in `count` new sandboxes (core's ForkSandbox), 201 with one {"sandbox"} (as create
// answers it) or {"error": {code, message}} per fork, in order; E2B's SDKs read each on its
// own. A fork that cannot start at all (unknown or killed sandbox, count < 1) is the request's
// error. Children start their processes fresh: no memory is copied here (docs/e2b.md). Without a
// timeout a child lives as long as its parent's TTL.
Result<HttpResponse> Fork(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
  core::SandboxForkRequest fr;
  if (const json::value* c = FieldOf(body, "count")) {
    if (!c->is_int64()) return Fail(Error::InvalidArgument("count: must be a whole number"));
    fr.count = c->as_int64();
  }
  ASB_ASSIGN_OR_RETURN(fr.timeout_seconds, Seconds(body, "timeout"));
  if (fr.timeout_seconds) {
    fr.timeout_seconds =
        std::min(*fr.timeout_seconds, d.manager->config().limits.max_timeout_seconds);
  }
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  if (req.new_sandboxes_left >= 0) fr.quota_left = req.new_sandboxes_left;
  ASB_ASSIGN_OR_RETURN(std::vector<core::ForkedChild> children,
                       d.manager->snapshots().ForkSandbox(OwnerOf(req), s.id, fr));
  json::array out;
  for (const core::ForkedChild& c : children) {
    json::object f;
    if (c.sandbox) {
      f["sandbox"] = SandboxJson(d, *c.sandbox);
    } else if (c.error) {
      const ClientError ce = ForClient(*c.error, req.request_id);
      json::object e;
      e["code"] = HttpStatusOf(ce.code);
      e["message"] = ce.message;
      f["error"] = std::move(e);
    }
    out.emplace_back(std::move(f));
  }
  HttpResponse r = JsonResponse(201, json::serialize(out));
  r.sandbox_id = s.id;
  return r;
}

// E2B's snapshots are our workspace snapshots (a name reused is another snapshot under the same
// name, the newest of which a create by that name boots): {"snapshotID", "names"}.
json::object E2bSnapshotJson(const core::SnapshotInfo& s) {
  json::object o;
  o["snapshotID"] = s.id;
  json::array names;
  if (!s.name.empty()) names.emplace_back(s.name);
  o["names"] = std::move(names);
  return o;
}

// POST /sandboxes/{id}/snapshots {name?}: 201 with the snapshot (E2B's createSnapshot).
Result<HttpResponse> CreateSnapshot(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
  std::string name;
  if (const json::value* n = FieldOf(body, "name")) {
    if (!n->is_string()) return Fail(Error::InvalidArgument("name: must be a string"));
    name = n->as_string();
  }
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  ASB_ASSIGN_OR_RETURN(core::SnapshotInfo snap,
                       d.manager->snapshots().CreateSnapshot(OwnerOf(req), s.id, name));
  HttpResponse r = JsonResponse(201, json::serialize(E2bSnapshotJson(snap)));
  r.sandbox_id = s.id;
  return r;
}

// GET /snapshots?sandboxID=&name=&limit=&nextToken=: the caller's snapshots, newest first,
// limit a page (X-Next-Token names where the next one starts, as GET /v2/sandboxes pages).
Result<HttpResponse> ListSnapshots(const Deps& d, HttpRequest& req) {
  std::optional<std::string> sandbox;
  if (const std::string* q = req.Query("sandboxID"); q != nullptr && !q->empty()) sandbox = *q;
  const std::string* name = req.Query("name");
  ASB_ASSIGN_OR_RETURN(const int64_t limit, PageLimit(req));
  const std::string* after = req.Query("nextToken");
  ASB_ASSIGN_OR_RETURN(auto all, d.manager->snapshots().ListSnapshots(OwnerOf(req), sandbox));
  std::reverse(all.begin(), all.end());
  json::array out;
  std::string next;
  bool skipping = after != nullptr && !after->empty();
  for (const core::SnapshotInfo& s : all) {
    if (skipping) {
      if (s.id == *after) skipping = false;
      continue;
    }
    if (name != nullptr && !name->empty() && s.name != *name) continue;
    if (static_cast<int64_t>(out.size()) == limit) {
      next = out.back().as_object().at("snapshotID").as_string().c_str();
      break;
    }
    out.push_back(E2bSnapshotJson(s));
  }
  HttpResponse r = JsonResponse(200, json::serialize(out));
  if (!next.empty()) r.headers.emplace_back("X-Next-Token", next);
  return r;
}

// The snapshot a create's templateID names, if it names one of the caller's: its id, or (when
// no template has that name) the name of its snapshots, the newest of which. nullopt: it names
// a template (or nothing known, which create then reports).
Result<std::optional<core::SnapshotInfo>> SnapshotToBoot(const Deps& d, const HttpRequest& req,
                                                         const std::string& template_id) {
  core::SnapshotService& snaps = d.manager->snapshots();
  if (template_id.rfind("snap_", 0) == 0) {
    ASB_ASSIGN_OR_RETURN(core::SnapshotInfo s, snaps.GetSnapshot(OwnerOf(req), template_id));
    return std::optional<core::SnapshotInfo>(std::move(s));
  }
  if (template_id.empty() || d.manager->templates().Find(template_id)) {
    return std::optional<core::SnapshotInfo>();
  }
  ASB_ASSIGN_OR_RETURN(auto all, snaps.ListSnapshots(OwnerOf(req), std::nullopt));
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->name == template_id) return std::optional<core::SnapshotInfo>(*it);
  }
  return std::optional<core::SnapshotInfo>();
}

// ?metadata= of GET /v2/sandboxes: "k=v&k2=v2", each part form-encoded (the SDK encodes the
// pairs with URLSearchParams, then the whole as one query value).
Result<std::map<std::string, std::string>> MetadataQuery(std::string_view q) {
  std::map<std::string, std::string> out;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    auto k = PercentDecode(pair.substr(0, eq), true);
    auto v = PercentDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!k || !v || k->empty()) return Fail(Error::InvalidArgument("metadata: not k=v pairs"));
    out[*k] = *v;
  }
  return out;
}

Result<HttpResponse> List(const Deps& d, HttpRequest& req, bool paged) {
  std::map<std::string, std::string> want;
  if (const std::string* md = req.Query("metadata")) {
    ASB_ASSIGN_OR_RETURN(want, MetadataQuery(*md));
  }
  // ?state=running,paused (the SDK joins the values with commas). Without it, /v2 lists both
  // and the older /sandboxes running ones only, as E2B's API does.
  bool want_running = true, want_paused = paged;
  if (const std::string* st = req.Query("state"); st != nullptr && !st->empty()) {
    want_running = want_paused = false;
    std::string_view rest = *st;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view one = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (one == "running") {
        want_running = true;
      } else if (one == "paused") {
        want_paused = true;
      } else if (!one.empty()) {
        return Fail(Error::InvalidArgument("state: running, paused or both (comma-separated)"));
      }
    }
  }
  ASB_ASSIGN_OR_RETURN(const int64_t limit, PageLimit(req));
  // Newest first unless ?order=asc, as E2B's API lists (an unknown order is refused, never
  // ignored), filtered by template and start time; nextToken pages on in the same order.
  ASB_ASSIGN_OR_RETURN(const SandboxListQuery query,
                       ParseSandboxListQuery(req, {.template_name = "template",
                                                   .started_after = "startedAfter",
                                                   .started_before = "startedBefore",
                                                   .newest_first_default = true}));
  const std::string* after = req.Query("nextToken");
  ASB_ASSIGN_OR_RETURN(auto all, d.manager->lifecycle().List(OwnerOf(req)));
  FilterAndOrder(query, &all);
  json::array out;
  std::string next;
  bool skipping = paged && after != nullptr && !after->empty();
  for (const core::SandboxInfo& s : all) {
    if (skipping) {
      if (s.id == *after) skipping = false;
      continue;
    }
    const bool shown = (want_running && s.state == core::SandboxState::kRunning) ||
                       (want_paused && s.state == core::SandboxState::kPaused);
    if (!shown) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.metadata.find(k);
      match = match && it != s.metadata.end() && it->second == v;
    }
    if (!match) continue;
    if (paged && static_cast<int64_t>(out.size()) == limit) {
      next = out.back().as_object().at("sandboxID").as_string().c_str();
      break;
    }
    out.push_back(ListedJson(s));
  }
  HttpResponse r = JsonResponse(200, json::serialize(out));
  if (!next.empty()) r.headers.emplace_back("X-Next-Token", next);
  return r;
}

// E2B resumes a paused sandbox with a TTL of 300 s when the request names none.
constexpr int64_t kResumeTimeoutDefault = 300;

// Resumes paused sandbox `s` (connect and resume): 201 with the Sandbox. `memory: false`
// (connect's `onResume: 'reboot'`) starts it afresh from its files: no process survives.
Result<HttpResponse> ResumePaused(const Deps& d, HttpRequest& req, const json::object& body,
                                  const core::SandboxInfo& s, std::optional<int64_t> timeout) {
  ASB_ASSIGN_OR_RETURN(const bool memory, MemorySwitch(body, "memory"));
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo resumed,
                       d.manager->lifecycle().Resume(
                           OwnerOf(req), s.id, timeout.value_or(kResumeTimeoutDefault), memory));
  HttpResponse r = JsonResponse(201, json::serialize(SandboxJson(d, resumed)));
  r.sandbox_id = s.id;
  return r;
}

Result<HttpResponse> Connect(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
  ASB_ASSIGN_OR_RETURN(auto timeout, Seconds(body, "timeout"));
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  if (s.state == core::SandboxState::kPaused) return ResumePaused(d, req, body, s, timeout);
  // Connecting only ever extends a sandbox's life (E2B's rule): a shorter timeout is ignored.
  if (timeout) timeout = std::min(*timeout, d.manager->config().limits.max_timeout_seconds);
  if (timeout && NowMs() + *timeout * 1000 > s.expires_at_ms) {
    ASB_ASSIGN_OR_RETURN(s, d.manager->lifecycle().SetTimeout(OwnerOf(req), s.id, *timeout));
  }
  HttpResponse r = JsonResponse(200, json::serialize(SandboxJson(d, s)));
  r.sandbox_id = s.id;
  return r;
}

// GET /sandboxes/{id}/metrics?start&end (Unix seconds, both optional): the samples of the
// sandbox's metrics history (core/metrics_history.h, every few seconds) within the window,
// oldest first, and, when the window reaches now and the sandbox runs, one sample taken now
// (CPU measured over kCpuSampleMs between two readings, as a share of its CPU limit). A window
// with no sample answers [].
constexpr int64_t kCpuSampleMs = 200;

json::object MetricJson(int64_t at_ms, double cpu_pct, double cpus, uint64_t mem,
                        uint64_t mem_total, uint64_t disk, uint64_t disk_total) {
  json::object m;
  m["timestamp"] = FormatRfc3339(at_ms);
  m["cpuCount"] = CpuCount(cpus);
  m["cpuUsedPct"] = std::round(cpu_pct * 100) / 100;
  m["memUsed"] = mem;
  m["memTotal"] = mem_total;
  m["diskUsed"] = disk;
  m["diskTotal"] = disk_total;
  return m;
}

// Half a second: how far the SDKs' rounding of a window bound may move it.
constexpr int64_t kWindowRoundingMs = 500;

// A window bound: Unix seconds, or absent.
Result<std::optional<int64_t>> WindowSeconds(const HttpRequest& req, const char* name) {
  const std::string* v = req.Query(name);
  if (v == nullptr || v->empty()) return std::optional<int64_t>();
  auto n = ParseInteger(*v, 0, INT64_MAX / 2000);
  if (!n) return Fail(Error::InvalidArgument(std::string(name) + ": Unix seconds"));
  return std::optional<int64_t>(*n);
}

Result<HttpResponse> Metrics(const Deps& d, HttpRequest& req) {
  ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(d, req));
  ASB_ASSIGN_OR_RETURN(const std::optional<int64_t> start, WindowSeconds(req, "start"));
  ASB_ASSIGN_OR_RETURN(const std::optional<int64_t> end, WindowSeconds(req, "end"));
  if (start && end && *end < *start) {
    return Fail(Error::InvalidArgument("end: must not be before start"));
  }
  // The SDKs round a Date to the nearest second (Math.round), so second S stands for
  // [S - 0.5 s, S + 0.5 s): a start rounded up past the last sample, or past now, must not
  // leave out what the caller's Date still covers.
  const int64_t from_ms = start ? *start * 1000 - kWindowRoundingMs : 0;
  const int64_t to_ms = end ? *end * 1000 + kWindowRoundingMs : INT64_MAX;
  ASB_ASSIGN_OR_RETURN(auto history,
                       d.manager->metrics().Samples(OwnerOf(req), s.id, from_ms, to_ms));
  json::array out;
  for (const core::MetricSample& m : history) {
    out.push_back(MetricJson(m.at_ms, m.cpu_used_pct, m.cpus, m.memory_bytes, m.memory_limit_bytes,
                             m.workspace_used_bytes, m.workspace_limit_bytes));
  }
  // Nothing runs in a paused sandbox, so nothing is sampled now; a window that ends in the past
  // wants only its history.
  const int64_t now_ms = NowMs();
  if (s.state == core::SandboxState::kRunning && to_ms >= now_ms && from_ms <= now_ms) {
    core::SandboxLifecycle& life = d.manager->lifecycle();
    ASB_ASSIGN_OR_RETURN(core::SandboxUsageInfo a, life.Usage(OwnerOf(req), s.id));
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(kCpuSampleMs));
    ASB_ASSIGN_OR_RETURN(core::SandboxUsageInfo b, life.Usage(OwnerOf(req), s.id));
    const double wall_ns = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    const double used_ns =
        b.cpu_usage_ns > a.cpu_usage_ns ? static_cast<double>(b.cpu_usage_ns - a.cpu_usage_ns) : 0;
    const double cpus = s.cpus > 0 ? s.cpus : 1;
    out.push_back(MetricJson(b.sampled_at_ms, std::min(100.0, used_ns / (wall_ns * cpus) * 100.0),
                             cpus, b.memory_bytes, b.memory_limit_bytes, b.workspace_used_bytes,
                             b.workspace_limit_bytes));
  }
  HttpResponse r = JsonResponse(200, json::serialize(out));
  r.sandbox_id = s.id;
  return r;
}

// ---- sandbox traffic ----------------------------------------------------------------------

// The user of an envd request: Authorization: Basic base64("<user>:") or ?username=.
Result<std::string> RequestUser(const HttpRequest& req) {
  std::string_view auth = req.Header("authorization");
  std::string name;
  if (auth.size() > 6 && AsciiLower(auth.substr(0, 6)) == "basic ") {
    ASB_ASSIGN_OR_RETURN(std::string pair, Base64Decode(auth.substr(6), "authorization"));
    name = pair.substr(0, pair.find(':'));
  } else if (const std::string* u = req.Query("username")) {
    name = *u;
  }
  return EnvdUser(name);
}

int64_t HeaderMs(const HttpRequest& req, std::string_view name, int64_t scale) {
  std::string_view v = req.Header(name);
  if (v.empty() || v.size() > 12) return 0;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n * scale;
}

// The Connect services' path prefixes: /<package.Service>/<Method>.
constexpr std::string_view kProcessService = "/process.Process/";
constexpr std::string_view kFilesystemService = "/filesystem.Filesystem/";

bool IsConnectPath(std::string_view path) {
  return path.rfind(kProcessService, 0) == 0 || path.rfind(kFilesystemService, 0) == 0;
}

HttpResponse TrafficError(const HttpRequest& req, const Error& e) {
  return IsConnectPath(req.path) ? ConnectUnaryError(e) : E2bHttpError(e);
}

// The sandbox port a traffic request is for: E2b-Sandbox-Port or the preview host's, else envd.
Result<int64_t> TrafficPort(const HttpRequest& req) {
  if (const std::string& p = req.Param("port"); !p.empty()) return ParsePort(p);
  return kEnvdPort;
}

// Whether the traffic token alone may make this call on the code interpreter's port: its
// context management (/contexts...), which @e2b/code-interpreter sends with the traffic token
// only. Running code (POST /execute) needs the envd token as in E2B, where runCode sends both:
// a token handed to a browser in a getHost() URL must never run commands (ADR 0015).
bool TrafficTokenOpens(const HttpRequest& req) {
  return req.path == "/contexts" || req.path.rfind("/contexts/", 0) == 0;
}

// Whether `req` is envd's file route opened by a signed URL of sandbox `id` (downloadUrl for
// GET, uploadUrl for POST; e2b_token.h): no header then, the signature in the query.
bool SignedFileUrl(const Deps& d, const HttpRequest& req, const std::string& id) {
  if (req.path != "/files" || (req.method != "GET" && req.method != "POST")) return false;
  const std::string* signature = req.Query("signature");
  if (signature == nullptr || !IsValidId(id, "sb_")) return false;
  auto q = [&](const char* name) -> std::string_view {
    const std::string* v = req.Query(name);
    return v == nullptr ? std::string_view() : std::string_view(*v);
  };
  E2bFileSignature sig;
  sig.path = q("path");
  sig.operation = req.method == "GET" ? "read" : "write";
  sig.user = q("username");
  sig.signature = *signature;
  sig.expiration = q("signature_expiration");
  return CheckE2bFileSignature(d.secret, id, sig, NowMs() / 1000);
}

// The sandbox whose signed URL `req` is, when it names none (E2B_SANDBOX_URL points at this
// server, so the SDK's URL is <server>/files?...): the signature binds the URL to one
// sandbox's access token, so at most one running sandbox verifies it. "" when none does.
std::string SandboxOfSignedUrl(const Deps& d, const HttpRequest& req) {
  if (req.Query("signature") == nullptr) return "";
  auto all = d.manager->lifecycle().List(core::kAnyOwner);
  if (!all) return "";
  for (const core::SandboxInfo& s : *all) {
    if (s.state != core::SandboxState::kRunning && s.state != core::SandboxState::kPaused) {
      continue;
    }
    if (SignedFileUrl(d, req, s.id)) return s.id;
  }
  return "";
}

// The token check of sandbox traffic, from the head alone: it is the route's HeadGate too, so
// that nobody without a token makes the server read a body (ADR 0014, round 3). Without a valid
// token a caller learns nothing, not even whether the sandbox exists. envd takes only the
// envdAccessToken (X-Access-Token); the code interpreter (port 49999) takes it for everything
// and the trafficAccessToken (E2B-Traffic-Access-Token) for its contexts (TrafficTokenOpens).
std::optional<HttpResponse> TrafficRefusal(const Deps& d, const HttpRequest& req) {
  const std::string& id = req.Param("id");
  auto port = TrafficPort(req);
  if (!port) return TrafficError(req, port.error());
  if (d.secret.empty()) {
    return TrafficError(req, Error::Unavailable("E2B sandbox traffic is not enabled"));
  }
  const std::string_view access = req.Header("x-access-token");
  const std::string_view traffic = req.Header("e2b-traffic-access-token");
  const bool token_ok =
      IsValidId(id, "sb_") && ((*port == kEnvdPort && SignedFileUrl(d, req, id)) ||
                               CheckE2bAccessToken(d.secret, id, access) ||
                               (*port == kCodeInterpreterPort && TrafficTokenOpens(req) &&
                                CheckE2bTrafficToken(d.secret, id, traffic)));
  if (!token_ok) {
    return TrafficError(
        req, Error::Unauthenticated("invalid or missing X-Access-Token for this sandbox (the "
                                    "envdAccessToken that create and connect answered)"));
  }
  return std::nullopt;
}

HttpResponse Traffic(const Deps& d, HttpRequest& req) {
  if (auto refused = TrafficRefusal(d, req)) return std::move(*refused);
  const std::string& id = req.Param("id");
  const int64_t port = *TrafficPort(req);
  // A paused sandbox made with autoResume wakes for its traffic, which is then served.
  if (Status st = d.manager->lifecycle().WakeIfAutoResume(core::kAnyOwner, id);
      !st && st.error().code() != ErrorCode::kNotFound) {
    return TrafficError(req, st.error());
  }
  auto s = d.manager->lifecycle().Get(core::kAnyOwner, id);
  const bool running = s && s->state == core::SandboxState::kRunning;
  if (req.path == "/health" && req.method == "GET" && port == kEnvdPort) {
    if (!running) return E2bHttpError(502, "sandbox " + id + " is not running");
    HttpResponse r = NoContent();
    r.sandbox_id = id;
    return r;
  }
  if (!running) {
    if (s && s->state == core::SandboxState::kPaused) {
      return TrafficError(req, Error::Unavailable("sandbox " + id +
                                                  " is paused: resume it with Sandbox.connect()"));
    }
    return TrafficError(req, Error::Unavailable("sandbox " + id + " is not running"));
  }
  if (port != kEnvdPort && port != kCodeInterpreterPort) {
    return TrafficError(req,
                        Error::NotFound("port " + std::to_string(port) +
                                        ": reach a sandbox's own servers at sandbox.getHost(port) "
                                        "with the E2B-Traffic-Access-Token header, through "
                                        "/v1/sandboxes/{id}/ports/{port}, or a preview URL "
                                        "(docs/e2b.md)"));
  }
  EnvdCall call;
  call.manager = d.manager;
  call.owner = s->owner;
  call.sandbox_id = id;
  call.keepalive_ms = HeaderMs(req, "keepalive-ping-interval", 1000);
  if (call.keepalive_ms == 0) call.keepalive_ms = d.keepalive_ms;
  call.deadline_ms = HeaderMs(req, "connect-timeout-ms", 1);
  call.watchers = d.watchers.get();
  call.default_workdir = s->default_workdir;
  call.default_user = s->default_user;
  auto user = RequestUser(req);
  if (!user) return TrafficError(req, user.error());
  call.user = *user;
  // Only an upload (envd's POST /files) reads its body as it arrives (api/file_upload.h); every
  // other call takes it whole, under the server's budget for held bodies.
  const bool upload = port == kEnvdPort && req.path == "/files" && req.method == "POST";
  if (req.body_reader && !upload) {
    auto body = req.body_reader->ReadAll();
    if (!body) return TrafficError(req, body.error());
    req.body = std::move(*body);
    req.body_reader.reset();
  }
  HttpResponse out;
  if (port == kCodeInterpreterPort) {
    out = CodeInterpreterCall(call, req);
  } else if (req.path == "/files") {
    out = EnvdFiles(call, req);
  } else if (IsConnectPath(req.path)) {
    if (req.method != "POST") {
      out = ConnectUnaryError("unimplemented", "Connect calls are POST requests");
      out.status = 405;
      out.headers.emplace_back("Allow", "POST");
    } else if (req.path.rfind(kProcessService, 0) == 0) {
      out = EnvdProcessCall(call, std::string_view(req.path).substr(kProcessService.size()), req);
    } else {
      out = EnvdFilesystemCall(call, std::string_view(req.path).substr(kFilesystemService.size()),
                               req);
    }
  } else {
    out = E2bHttpError(404, "envd has no such route");
  }
  out.sandbox_id = id;
  return out;
}

}  // namespace

void AddE2bRoutes(Router& router, ApiContext& ctx) {
  auto d = std::make_shared<Deps>();
  d->manager = ctx.manager;
  d->secret = ctx.e2b_secret;
  d->keepalive_ms = ctx.stream_keepalive_ms;
  d->domain = ctx.preview.domain;
  d->internet_default = ctx.e2b_internet_default;
  core::SandboxManager* manager = ctx.manager;
  d->watchers = std::make_shared<E2bWatchers>([manager](const std::string& id) {
    auto s = manager->lifecycle().Get(core::kAnyOwner, id);
    return s &&
           (s->state == core::SandboxState::kRunning || s->state == core::SandboxState::kPaused);
  });

  // Sandbox traffic first: a request that carries E2b-Sandbox-Id is never a control-plane call.
  RouteOptions traffic;
  traffic.token_auth = true;   // X-Access-Token, checked in Traffic()
  traffic.file_body = true;    // uploads up to max_file_bytes
  traffic.stream_body = true;  // uploads stream into the sandbox; other calls ReadAll()
  traffic.gate = [d](const HttpRequest& req) { return TrafficRefusal(*d, req); };
  const std::string domain = ctx.preview.domain;
  router.AddHost(
      "e2b-sandbox-traffic",
      [domain](std::string_view host, const std::map<std::string, std::string>& headers,
               std::map<std::string, std::string>* params) {
        if (auto it = headers.find("e2b-sandbox-id"); it != headers.end()) {
          (*params)["id"] = it->second;
          auto port = headers.find("e2b-sandbox-port");
          (*params)["port"] = port != headers.end() ? port->second : std::to_string(kEnvdPort);
          return true;
        }
        // E2B's SDKs put the id as it is into <port>-<id>.<domain>: "sb_" (DNS-unusual but
        // sent) as well as our preview hosts' "sb-".
        std::string h(host);
        if (size_t at = h.find("-sb_"); at != std::string::npos && at <= 5) h[at + 3] = '-';
        std::optional<PreviewHost> p = ParsePreviewHost(h, domain);
        if (!p || (p->port != std::to_string(kEnvdPort) &&
                   p->port != std::to_string(kCodeInterpreterPort))) {
          return false;  // other ports stay the preview hosts' (handlers_previews.cc)
        }
        (*params)["id"] = p->sandbox_id;
        (*params)["port"] = p->port;
        return true;
      },
      [d](HttpRequest& req) { return Traffic(*d, req); }, traffic);

  // envd's file route under E2B_SANDBOX_URL with no E2B header: a signed URL (downloadUrl,
  // uploadUrl) names its sandbox only through its signature.
  RouteOptions signed_files = traffic;
  signed_files.gate = [d](const HttpRequest& req) -> std::optional<HttpResponse> {
    if (!SandboxOfSignedUrl(*d, req).empty()) return std::nullopt;
    return E2bHttpError(Error::Unauthenticated(
        "invalid, expired or missing signature for this file URL (sandbox.downloadUrl / "
        "uploadUrl make one)"));
  };
  auto signed_file = [d](HttpRequest& req) -> HttpResponse {
    const std::string id = SandboxOfSignedUrl(*d, req);
    if (id.empty()) {
      return E2bHttpError(Error::Unauthenticated(
          "invalid, expired or missing signature for this file URL (sandbox.downloadUrl / "
          "uploadUrl make one)"));
    }
    req.params["id"] = id;
    req.params["port"] = std::to_string(kEnvdPort);
    return Traffic(*d, req);
  };
  router.Add("GET", "/files", signed_file, signed_files);
  router.Add("POST", "/files", signed_file, signed_files);

  auto create = E2bWrap([d](HttpRequest& req) { return Create(*d, req); });
  router.Add("POST", "/sandboxes", create);
  router.Add("POST", "/v2/sandboxes", create);
  router.Add("GET", "/sandboxes", E2bWrap([d](HttpRequest& req) { return List(*d, req, false); }));
  router.Add("GET", "/v2/sandboxes",
             E2bWrap([d](HttpRequest& req) { return List(*d, req, true); }));
  router.Add("GET", "/sandboxes/{id}", E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(*d, req));
               json::object o = ListedJson(s);
               o["envdAccessToken"] = E2bAccessToken(d->secret, s.id);
               o["domain"] = d->domain;
               AddNetworkJson(s, &o);
               HttpResponse r = JsonResponse(200, json::serialize(o));
               r.sandbox_id = s.id;
               return r;
             }));
  router.Add("DELETE", "/sandboxes/{id}", E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(std::string id, SandboxIdParam(req));
               ASB_TRY(d->manager->lifecycle().Destroy(OwnerOf(req), id));
               HttpResponse r = NoContent();
               r.sandbox_id = id;
               return r;
             }));
  router.Add("POST", "/sandboxes/{id}/timeout",
             E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
               ASB_ASSIGN_OR_RETURN(auto timeout, Seconds(body, "timeout"));
               if (!timeout) return Fail(Error::InvalidArgument("timeout: required, seconds"));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(*d, req));
               ASB_TRY(d->manager->lifecycle().SetTimeout(OwnerOf(req), s.id, *timeout));
               HttpResponse r = NoContent();
               r.sandbox_id = s.id;
               return r;
             }));
  // E2B's updateNetwork: the egress rules replaced at once, omitted fields cleared; 204.
  router.Add(
      "PUT", "/sandboxes/{id}/network", E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
        ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
        ASB_TRY(RefuseUnofferedNetwork(body, "", {"allow_internet_access"}));
        ASB_ASSIGN_OR_RETURN(E2bEgress egress, EgressOf(body, &body));
        ASB_ASSIGN_OR_RETURN(core::NetworkPolicy policy,
                             E2bEgressPolicy(egress, d->manager->config().default_network_policy));
        ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(*d, req));
        if (!s.network) {
          return Fail(Error::InvalidArgument(
              "sandbox " + s.id +
              " has no network: this server does not offer networking, or the sandbox "
              "was made before it did"));
        }
        ASB_TRY(d->manager->network().SetNetwork(OwnerOf(req), s.id, policy));
        HttpResponse r = NoContent();
        r.sandbox_id = s.id;
        return r;
      }));
  auto connect = E2bWrap([d](HttpRequest& req) { return Connect(*d, req); });
  router.Add("POST", "/sandboxes/{id}/connect", connect);
  router.Add("POST", "/v2/sandboxes/{id}/connect", connect);
  router.Add("POST", "/sandboxes/{id}/pause",
             E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
               // keepMemory: false keeps only the files (SandboxLifecycle::Pause).
               ASB_ASSIGN_OR_RETURN(const bool memory, MemorySwitch(body, "memory"));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(*d, req));
               // Already paused: 409, which the SDK's pause() answers as false.
               ASB_TRY(d->manager->lifecycle().Pause(OwnerOf(req), s.id, memory));
               HttpResponse r = NoContent();
               r.sandbox_id = s.id;
               return r;
             }));
  // The older resume: 201 with the Sandbox; 409 when it is not paused.
  router.Add("POST", "/sandboxes/{id}/resume",
             E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               ASB_ASSIGN_OR_RETURN(json::object body, JsonObject(req.body));
               ASB_ASSIGN_OR_RETURN(auto timeout, Seconds(body, "timeout"));
               ASB_ASSIGN_OR_RETURN(core::SandboxInfo s, CallersSandbox(*d, req));
               if (s.state != core::SandboxState::kPaused) {
                 return Fail(Error::Conflict("sandbox " + s.id + " is already running"));
               }
               return ResumePaused(*d, req, body, s, timeout);
             }));
  router.Add("GET", "/sandboxes/{id}/metrics",
             E2bWrap([d](HttpRequest& req) { return Metrics(*d, req); }));
  router.Add("POST", "/sandboxes/{id}/fork",
             E2bWrap([d](HttpRequest& req) { return Fork(*d, req); }));
  router.Add("POST", "/sandboxes/{id}/snapshots",
             E2bWrap([d](HttpRequest& req) { return CreateSnapshot(*d, req); }));
  router.Add("GET", "/snapshots",
             E2bWrap([d](HttpRequest& req) { return ListSnapshots(*d, req); }));
  // E2B deletes a snapshot as a template: 404 for anything but one of the caller's snapshots
  // (the SDK's deleteSnapshot answers that as false).
  router.Add("DELETE", "/templates/{id}", E2bWrap([d](HttpRequest& req) -> Result<HttpResponse> {
               const std::string& id = req.Param("id");
               if (!IsValidId(id, "snap_")) return Fail(Error::NotFound("snapshot not found"));
               ASB_TRY(d->manager->snapshots().DeleteSnapshot(OwnerOf(req), id));
               return NoContent();
             }));
}

}  // namespace asb::api
