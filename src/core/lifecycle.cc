// SandboxLifecycle: create, get, list, destroy and timeout (lifecycle.h). Recovery and the
// reaper are in lifecycle_recovery.cc.
#include "core/lifecycle.h"

#include <algorithm>

#include "common/ids.h"
#include "common/log.h"
#include "core/sandbox_record.h"
#include "core/sandbox_registry.h"
#include "core/sandbox_resources.h"
#include "core/warm_pool.h"
#include "protocol/stats_client.h"
#include "store/store.h"

namespace asb::core {

namespace {

// How long a claim waits for a pooled sandbox's sandboxd to take the claim's environment; past
// it the claim fails and the create makes a sandbox of its own.
constexpr int64_t kClaimCallTimeoutMs = 5000;

constexpr std::pair<SandboxState, std::string_view> kStateNames[] = {
    {SandboxState::kCreating, "creating"},   {SandboxState::kRunning, "running"},
    {SandboxState::kPaused, "paused"},       {SandboxState::kStopping, "stopping"},
    {SandboxState::kDestroyed, "destroyed"}, {SandboxState::kError, "error"},
};

// What the backend is asked to make for `info` (its id, template and resolved resources): at
// create, and again when a files-only pause is resumed.
isolation::SandboxSpec SpecOf(const SandboxInfo& info, const TemplateInfo& tmpl,
                              const std::string& workspace_image) {
  isolation::SandboxSpec spec;
  spec.id = info.id;
  spec.template_name = tmpl.name;
  spec.rootfs = tmpl.rootfs;
  ApplyResources({.cpus = info.cpus,
                  .memory_mb = info.memory_mb,
                  .pids_limit = info.pids_limit,
                  .workspace_mb = info.workspace_mb,
                  .tmp_size_mb = info.tmp_size_mb},
                 &spec);
  spec.network = info.network;
  spec.network_policy = info.network_policy;
  spec.env = info.env;
  spec.workspace_image = workspace_image;
  return spec;
}

}  // namespace

std::string_view SandboxStateName(SandboxState s) {
  for (const auto& [st, name] : kStateNames) {
    if (st == s) return name;
  }
  return "error";
}

std::optional<SandboxState> ParseSandboxState(std::string_view name) {
  for (const auto& [st, n] : kStateNames) {
    if (n == name) return st;
  }
  return std::nullopt;
}

// ---- transitions ----------------------------------------------------------------------------

Status SandboxLifecycle::DestroyLocked(Entry& e, std::string_view why) {
  const SandboxInfo info = e.Snapshot();
  if (info.state == SandboxState::kDestroyed) {
    return Fail(Error::NotFound("sandbox " + info.id + " not found"));
  }
  // Before the side effect: a crash from here on leaves "stopping", which Recover finishes.
  ASB_TRY_CTX(reg_.WriteState(e, SandboxState::kStopping, info.error_message),
              "destroy sandbox " + info.id);
  reg_.ReleaseSlot(e);
  std::shared_ptr<isolation::Sandbox> sandbox;
  {
    std::lock_guard l(e.info_mu);
    sandbox = std::move(e.sandbox);
  }
  // A record of a backend this server does not run has nothing here to destroy; what that
  // backend left is removed by the first server that runs it again (Recover's ListOwned pass).
  auto backend = reg_.BackendOf(info);
  Status st = backend ? (*backend)->Destroy(info.id) : Status{};
  if (!backend) {
    spdlog::warn("sandbox_id={} destroy: {}", info.id, backend.error().ToString());
  }
  if (sandbox) {
    // Ends execs still streaming on the connection (their channels see an error event).
    if (auto conn = sandbox->connection()) conn->Close();
  }
  if (!st) {
    spdlog::warn("sandbox_id={} destroy failed ({}): {}", info.id, why, st.error().ToString());
    return Fail(std::move(st)
                    .error()
                    .WithCode(ErrorCode::kBackend)
                    .WithContext("destroy sandbox " + info.id));
  }
  // After the side effect.
  ASB_TRY_CTX(reg_.WriteState(e, SandboxState::kDestroyed, info.error_message),
              "destroy sandbox " + info.id);
  // The workspace a files-only pause kept goes with it (after the record: a crash before this
  // leaves a snapshot no live record names, which RecoverSnapshots removes).
  if (info.paused_workspace_snapshot_id && keeper_ != nullptr) {
    keeper_->ReleaseWorkspace(*info.paused_workspace_snapshot_id);
  }
  reg_.Erase(info.id);
  spdlog::info("sandbox_id={} destroyed ({})", info.id, why);
  return {};
}

// ---- lifecycle ------------------------------------------------------------------------------

Result<SandboxInfo> SandboxLifecycle::Create(const std::string& owner, const CreateRequest& req) {
  return CreateWith(owner, req, "");
}

Result<SandboxInfo> SandboxLifecycle::CreateWith(const std::string& owner, const CreateRequest& req,
                                                 const std::string& workspace_image,
                                                 const std::optional<CommandDefaults>& inherited) {
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Entry> e,
                       CreateEntry(owner, req, workspace_image, inherited, /*pooled=*/false));
  return e->Snapshot();
}

Result<std::shared_ptr<Entry>> SandboxLifecycle::MakePooled(const std::string& template_name,
                                                            bool network) {
  CreateRequest req;
  req.template_name = template_name;
  req.network = network;
  return CreateEntry(kPoolOwner, req, "", std::nullopt, /*pooled=*/true);
}

void SandboxLifecycle::DestroyPooled(Entry& e) {
  std::lock_guard op(e.op_mu);
  if (Status st = DestroyLocked(e, "warm pool: not needed"); !st) {
    spdlog::warn("warm pool: {}", st.error().ToString());
  }
}

Result<SandboxInfo> SandboxLifecycle::ClaimPooled(const std::shared_ptr<Entry>& e, SandboxInfo info,
                                                  isolation::Backend& backend) {
  std::lock_guard op(e->op_mu);
  const SandboxInfo pooled = e->Snapshot();
  // The claim's memory and CPU (taken only where the backend changes them in place).
  if (info.memory_mb != pooled.memory_mb || info.cpus != pooled.cpus) {
    Status st =
        backend.UpdateLimits(pooled.id, static_cast<uint64_t>(info.memory_mb) << 20, info.cpus);
    if (!st) {
      (void)DestroyLocked(*e, "warm pool: claim could not set the limits");
      return Fail(std::move(st).error().WithContext("claim pooled sandbox"));
    }
  }
  // The pooled sandbox was made with its template's environment; the claim's replaces it before
  // anyone can run a command there.
  if (info.env != pooled.env) {
    std::shared_ptr<protocol::Connection> conn;
    {
      std::lock_guard l(e->info_mu);
      if (e->sandbox) conn = e->sandbox->connection();
    }
    Status st = Fail(Error::Unavailable("the pooled sandbox has no connection"));
    if (conn) st = protocol::SetSandboxEnv(*conn, info.env, kClaimCallTimeoutMs);
    if (!st) {
      (void)DestroyLocked(*e, "warm pool: claim could not set the environment");
      return Fail(std::move(st).error().WithContext("claim pooled sandbox"));
    }
  }
  const int64_t now = reg_.clock.NowUnixMs();
  info.id = pooled.id;
  info.state = SandboxState::kRunning;
  info.created_at_ms = info.updated_at_ms = info.last_activity_at_ms = now;
  info.expires_at_ms = now + info.timeout_seconds * 1000;
  if (Status st = reg_.store.UpdateSandbox(ToRecord(info), /*with_created_at=*/true); !st) {
    (void)DestroyLocked(*e, "warm pool: claim not recorded");
    return Fail(std::move(st).error().WithContext("create sandbox"));
  }
  {
    std::lock_guard l(e->info_mu);
    e->info = info;  // e->sandbox, made for the pool, is this sandbox's from now on
  }
  reg_.Insert(e);
  spdlog::info("sandbox_id={} created template={} cpus={} memory_mb={} backend={} (warm pool)",
               info.id, info.template_name, info.cpus, info.memory_mb, info.backend);
  return e->Snapshot();
}

Result<std::shared_ptr<Entry>> SandboxLifecycle::CreateEntry(
    const std::string& owner, const CreateRequest& req, const std::string& workspace_image,
    const std::optional<CommandDefaults>& inherited, bool pooled) {
  const Limits& lim = reg_.cfg.limits;
  SandboxInfo info;
  info.owner = owner;

  // Validation, field by field, before anything is reserved or written.
  const std::string template_name =
      req.template_name.empty() ? reg_.cfg.default_template : req.template_name;
  ASB_ASSIGN_OR_RETURN(TemplateInfo tmpl, reg_.templates.Find(template_name));
  // The template's WORKDIR and USER become the defaults of every command (a fork keeps its
  // source's); a template the sandbox cannot honour is refused here, not silently ignored.
  CommandDefaults defaults;
  if (inherited) {
    ASB_ASSIGN_OR_RETURN(defaults.workdir, ResolveTemplateWorkdir(inherited->workdir));
    ASB_ASSIGN_OR_RETURN(defaults.user, ResolveTemplateUser(inherited->user));
  } else {
    ASB_ASSIGN_OR_RETURN(defaults, ResolveTemplateDefaults(tmpl.manifest));
  }
  // CPU, memory, processes, workspace: the template's default resources (its manifest; ADR
  // 0012) within the limits, the request's own values winning (core/sandbox_resources.h).
  ASB_ASSIGN_OR_RETURN(
      const SandboxResources res,
      ResolveResources(lim, tmpl.manifest.resources,
                       {req.cpus, req.memory_mb, req.pids_limit, req.workspace_mb}));
  info.cpus = res.cpus;
  info.memory_mb = res.memory_mb;
  info.pids_limit = res.pids_limit;
  info.workspace_mb = res.workspace_mb;
  ASB_ASSIGN_OR_RETURN(info.timeout_seconds,
                       CheckInt("timeout_seconds", req.timeout_seconds, lim.default_timeout_seconds,
                                lim.min_timeout_seconds, lim.max_timeout_seconds));
  ASB_ASSIGN_OR_RETURN(info.idle_timeout_seconds,
                       CheckInt("idle_timeout_seconds", req.idle_timeout_seconds,
                                lim.default_idle_timeout_seconds, 0, lim.max_timeout_seconds));
  ASB_TRY(ValidateEnv(req.env, "env"));
  ASB_TRY(ValidateMetadata(req.metadata));
  if (req.network || req.network_when_offered) {
    ASB_ASSIGN_OR_RETURN(
        info.network_policy,
        isolation::net::Canonicalize(req.network_policy.value_or(reg_.cfg.default_network_policy)));
  } else if (req.network_policy) {
    return Fail(Error::InvalidArgument("network_policy needs network: true"));
  }

  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.backends.Find(req.backend));
  const bool network = req.network || (req.network_when_offered && backend->Capabilities().network);
  if (!network) info.network_policy = {};
  // A files-only auto-pause needs no freezer: every backend can keep files.
  if (req.auto_pause && req.auto_pause_keep_memory && !backend->Capabilities().pause) {
    return Fail(Error::InvalidArgument("auto_pause: the " + std::string(backend->name()) +
                                       " backend cannot pause sandboxes on this host"));
  }
  if (req.auto_resume && !backend->Capabilities().pause) {
    return Fail(Error::InvalidArgument("auto_resume: the " + std::string(backend->name()) +
                                       " backend cannot pause sandboxes on this host"));
  }
  info.auto_pause = req.auto_pause;
  info.auto_pause_keep_memory = req.auto_pause_keep_memory;
  info.auto_resume = req.auto_resume;
  ASB_TRY(ValidRequestHostMask(req.mask_request_host));
  info.allow_public_traffic = req.allow_public_traffic;
  info.mask_request_host = req.mask_request_host;
  info.template_name = tmpl.name;
  info.env = tmpl.manifest.env;  // the template's environment; the request's own wins
  for (const auto& [k, v] : req.env) info.env[k] = v;
  info.metadata = req.metadata;
  info.default_workdir = defaults.workdir;
  info.default_user = defaults.user;
  info.network = network;
  info.read_only_rootfs = true;
  info.tmp_size_mb = res.tmp_size_mb;
  info.backend = std::string(backend->name());
  info.state = SandboxState::kCreating;

  // A warm pool's sandbox of exactly this shape, when one is ready (warm_pool.h): it only
  // needs this create's owner, TTL and lifecycle. A failed claim falls back to a fresh create.
  if (pool_ != nullptr && !pooled && workspace_image.empty() && !inherited) {
    const bool live_limits = backend->Capabilities().live_limits;
    if (std::shared_ptr<Entry> ready = pool_->Take(ShapeOf(info, live_limits), live_limits)) {
      auto claimed = ClaimPooled(ready, info, *backend);
      if (claimed) return ready;
      spdlog::warn("warm pool: claim failed: {}", claimed.error().ToString());
    }
  }

  auto entry = std::make_shared<Entry>(info);
  if (Status st = reg_.ReserveSlot(*entry); !st) {
    // A full server makes room for a create by ending a pooled sandbox nobody asked for yet:
    // its slot passes to this create directly (a refill cannot take it in between).
    std::shared_ptr<Entry> spare = pooled || pool_ == nullptr ? nullptr : pool_->TakeAny();
    if (!spare) return Fail(std::move(st).error());
    const bool moved = reg_.TransferSlot(*spare, *entry);
    DestroyPooled(*spare);  // out of its pool either way: it must not be left behind
    if (!moved) return Fail(std::move(st).error());
  }
  std::unique_lock op(entry->op_mu);

  const int64_t now = reg_.clock.NowUnixMs();
  info.id = NewId("sb_");
  info.created_at_ms = info.updated_at_ms = info.last_activity_at_ms = now;
  info.expires_at_ms = now + info.timeout_seconds * 1000;
  {
    std::lock_guard l(entry->info_mu);
    entry->info = info;
  }
  // Before the side effect: the record says "creating", so a crash during the backend's
  // create is finished (destroyed) by Recover.
  if (Status st = reg_.store.InsertSandbox(ToRecord(info)); !st) {
    reg_.ReleaseSlot(*entry);
    return Fail(std::move(st).error().WithContext("create sandbox"));
  }
  if (!pooled) reg_.Insert(entry);

  auto created = backend->Create(SpecOf(info, tmpl, workspace_image));
  if (!created) {
    Error err = std::move(created).error();
    spdlog::warn("sandbox_id={} create failed: {}", info.id, err.ToString());
    // The record stays visible in state "error" (deletable; reaped at its TTL); the slot is
    // freed; whatever the backend left behind is removed now (Destroy is idempotent).
    // The record's error_message is shown to clients: what a client may read of it. A pooled
    // sandbox has no client: its record ends here.
    (void)reg_.WriteState(*entry, pooled ? SandboxState::kDestroyed : SandboxState::kError,
                          err.ClientSafeMessage());
    reg_.ReleaseSlot(*entry);
    if (Status st = backend->Destroy(info.id); !st) {
      spdlog::warn("sandbox_id={} cleanup after failed create: {}", info.id, st.error().ToString());
    }
    return Fail(std::move(err).WithContext("create sandbox"));
  }
  {
    std::lock_guard l(entry->info_mu);
    entry->sandbox = *created;
  }
  // A pooled sandbox stays "creating" until claimed: a crash before that finishes it like any
  // interrupted create (Recover destroys it).
  if (pooled) return entry;
  // After the side effect.
  if (Status st = reg_.WriteState(*entry, SandboxState::kRunning); !st) {
    (void)DestroyLocked(*entry, "record update failed after create");
    reg_.ReleaseSlot(*entry);
    return Fail(std::move(st).error().WithContext("create sandbox"));
  }
  spdlog::info("sandbox_id={} created template={} cpus={} memory_mb={} backend={}", info.id,
               info.template_name, info.cpus, info.memory_mb, info.backend);
  return entry;
}

Result<std::shared_ptr<isolation::Sandbox>> SandboxLifecycle::RecreateRuntime(
    const SandboxInfo& info, const std::string& workspace_image) {
  ASB_ASSIGN_OR_RETURN(TemplateInfo tmpl, reg_.templates.Find(info.template_name));
  ASB_ASSIGN_OR_RETURN(isolation::Backend* const backend, reg_.BackendOf(info));
  auto created = backend->Create(SpecOf(info, tmpl, workspace_image));
  if (!created) {
    // Whatever the failed create left is removed now (Destroy is idempotent).
    if (Status st = backend->Destroy(info.id); !st) {
      spdlog::warn("sandbox_id={} cleanup after failed re-create: {}", info.id,
                   st.error().ToString());
    }
    return Fail(std::move(created).error());
  }
  return *created;
}

Result<SandboxInfo> SandboxLifecycle::Get(const std::string& owner, const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  return e->Snapshot();
}

Result<std::vector<SandboxInfo>> SandboxLifecycle::List(const std::string& owner) {
  std::vector<SandboxInfo> out;
  for (const auto& e : reg_.AllEntries()) {
    SandboxInfo i = e->Snapshot();
    if (i.state == SandboxState::kDestroyed) continue;
    if (owner != kAnyOwner && i.owner != owner) continue;
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](const SandboxInfo& a, const SandboxInfo& b) {
    return a.created_at_ms != b.created_at_ms ? a.created_at_ms < b.created_at_ms : a.id < b.id;
  });
  return out;
}

Status SandboxLifecycle::Destroy(const std::string& owner, const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::lock_guard op(e->op_mu);
  return DestroyLocked(*e, "requested");
}

Result<SandboxInfo> SandboxLifecycle::SetTimeout(const std::string& owner, const std::string& id,
                                                 int64_t seconds) {
  const Limits& lim = reg_.cfg.limits;
  if (seconds < lim.min_timeout_seconds) {
    return Fail(
        RangeError("timeout_seconds", lim.min_timeout_seconds, lim.max_timeout_seconds, seconds));
  }
  seconds = std::min(seconds, lim.max_timeout_seconds);
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::lock_guard op(e->op_mu);
  SandboxInfo info = e->Snapshot();
  ASB_TRY(SandboxRegistry::RequireRunning(info));
  const int64_t now = reg_.clock.NowUnixMs();
  const int64_t expires = now + seconds * 1000;
  info.timeout_seconds = seconds;
  info.expires_at_ms = expires;
  info.updated_at_ms = now;
  ASB_TRY_CTX(reg_.WriteLifecycle(*e, info), "set timeout of sandbox " + id);
  return e->Snapshot();
}

std::string_view SandboxLifecycle::BackendName() const {
  const isolation::Backend* b = reg_.backends.default_backend();
  return b ? b->name() : std::string_view();
}

Status SandboxLifecycle::ProbeBackend() {
  ASB_ASSIGN_OR_RETURN(isolation::Backend * b, reg_.backends.Find(""));
  return b->Probe();
}

std::vector<BackendInfo> SandboxLifecycle::Backends() {
  std::vector<BackendInfo> out;
  for (const isolation::BackendSet::Listed& k : reg_.backends.All()) {
    BackendInfo b;
    b.name = k.name;
    b.is_default = k.is_default;
    // One the server could not start offers nothing here: every capability false.
    isolation::BackendCapabilities c{};
    if (!k.backend) {
      b.reason = k.ClientReason();
    } else {
      b.accelerator = k.backend->accelerator();
      if (Status st = k.backend->Probe(); st) {
        b.available = true;
      } else {
        b.reason = st.error().ClientSafeMessage();
      }
      c = k.backend->Capabilities();
    }
    b.capabilities = {{"adopt", c.adopt},
                      {"pause", c.pause},
                      {"workspace_images", c.workspace_images},
                      {"network", c.network},
                      {"tcp_connect", c.tcp_connect},
                      {"memory_snapshot", c.memory_snapshot}};
    out.push_back(std::move(b));
  }
  return out;
}

std::map<SandboxState, int64_t> SandboxLifecycle::CountByState() {
  std::map<SandboxState, int64_t> out;
  for (const auto& e : reg_.AllEntries()) {
    SandboxState s = e->Snapshot().state;
    if (s != SandboxState::kDestroyed) ++out[s];
  }
  return out;
}

Result<SandboxUsageInfo> SandboxLifecycle::Usage(const std::string& owner, const std::string& id) {
  ASB_ASSIGN_OR_RETURN(auto e, reg_.Find(owner, id));
  std::shared_ptr<isolation::Sandbox> sandbox;
  SandboxInfo info;
  {
    std::lock_guard l(e->info_mu);
    info = e->info;
    sandbox = e->sandbox;
  }
  ASB_TRY(SandboxRegistry::RequireRunning(info));
  if (!sandbox) return Fail(Error::Conflict("sandbox " + id + " is not running"));
  ASB_ASSIGN_OR_RETURN(isolation::SandboxUsage u, sandbox->Usage());
  SandboxUsageInfo out;
  out.sampled_at_ms = reg_.clock.NowUnixMs();
  out.memory_bytes = u.memory_bytes;
  out.memory_limit_bytes = static_cast<uint64_t>(info.memory_mb) << 20;
  out.cpu_usage_ns = u.cpu_usage_ns;
  out.pids = u.pids;
  out.workspace_used_bytes = u.workspace_used_bytes;
  out.workspace_limit_bytes = static_cast<uint64_t>(info.workspace_mb) << 20;
  return out;
}

}  // namespace asb::core
