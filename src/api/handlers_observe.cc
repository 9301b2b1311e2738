// Observability routes (api/AUTH.md):
//   GET /metrics          scope metrics; Prometheus text format 0.0.4 (api/metrics.h)
//   GET /readyz, /ready   200 {"status":"ready","checks":{...}} or 503 {"status":"not_ready",..}
//                         database writable, backend Probe() ok, disk and memory headroom
//   GET /health           alias of /healthz (seed A's name)
#include <sys/statvfs.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "api/auth.h"
#include "api/errors.h"
#include "api/handlers.h"
#include "core/sandbox_manager.h"

namespace asb::api {

namespace json = boost::json;

namespace {

// MemAvailable from /proc/meminfo (proc(5)), bytes; -1 if unreadable.
int64_t MemAvailableBytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      int64_t kb = -1;
      in >> kb;
      return kb < 0 ? -1 : kb * 1024;
    }
  }
  return -1;
}

json::object Check(bool ok, std::string detail) {
  json::object o;
  o["ok"] = ok;
  o["detail"] = std::move(detail);
  return o;
}

}  // namespace

void AddObserveRoutes(Router& router, AuthLayer& auth) {
  router.Add("GET", "/metrics", [&auth](HttpRequest&) {
    Metrics::Gauges g;
    for (auto s :
         {core::SandboxState::kCreating, core::SandboxState::kRunning, core::SandboxState::kPaused,
          core::SandboxState::kStopping, core::SandboxState::kError}) {
      g.sandboxes_by_state[std::string(core::SandboxStateName(s))] = 0;
    }
    for (const auto& [state, n] : auth.manager().lifecycle().CountByState()) {
      if (state == core::SandboxState::kDestroyed) continue;
      g.sandboxes_by_state[std::string(core::SandboxStateName(state))] = n;
    }
    core::SandboxLifecycle::MaintenanceCounts c = auth.manager().lifecycle().Counts();
    g.sandboxes_reaped_total = c.reaped;
    g.sandboxes_auto_paused_total = c.auto_paused;
    g.recovery = {{"adopted", c.recovered_adopted},
                  {"dropped", c.recovered_dropped},
                  {"orphan_destroyed", c.orphans_destroyed}};
    for (const core::WarmPoolStatus& p : auth.manager().pools().Pools()) {
      g.pools.push_back({p.template_name, p.network, p.size, p.ready, p.hits, p.misses});
    }
    HttpResponse r;
    r.status = 200;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = auth.metrics().Render(g);
    return r;
  });

  auto ready = [&auth](HttpRequest&) {
    json::object checks;
    bool all = true;
    // The database takes a write: BEGIN IMMEDIATE needs the write lock.
    {
      std::lock_guard<std::mutex> lock(auth.store().lock());
      Status st = auth.store().db().Exec("BEGIN IMMEDIATE; ROLLBACK;");
      all &= static_cast<bool>(st);
      checks["database"] = Check(bool(st), st ? "writable" : ForClient(st.error()).message);
    }
    {
      core::SandboxLifecycle& sandboxes = auth.manager().lifecycle();
      Status st = sandboxes.ProbeBackend();
      all &= static_cast<bool>(st);
      checks["backend"] = Check(
          bool(st), st ? std::string(sandboxes.BackendName()) : ForClient(st.error()).message);
    }
    struct statvfs vfs {};
    const std::string& dir = auth.options().data_dir;
    if (!dir.empty()) {
      if (::statvfs(dir.c_str(), &vfs) == 0) {
        uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
        bool ok = free_bytes >= auth.options().min_free_disk_bytes;
        all &= ok;
        checks["disk"] = Check(ok, std::to_string(free_bytes >> 20) + " MiB free");
      } else {
        all = false;
        checks["disk"] = Check(false, "statvfs failed");
      }
    }
    int64_t mem = MemAvailableBytes();
    bool mem_ok =
        mem < 0 || static_cast<uint64_t>(mem) >= auth.options().min_available_memory_bytes;
    all &= mem_ok;
    checks["memory"] =
        Check(mem_ok, mem < 0 ? "unknown" : std::to_string(mem >> 20) + " MiB available");
    json::object o;
    o["status"] = all ? "ready" : "not_ready";
    o["checks"] = std::move(checks);
    return JsonResponse(all ? 200 : 503, json::serialize(o));
  };
  router.Add("GET", "/readyz", ready);
  router.Add("GET", "/ready", ready);

  RouteOptions fast;
  fast.blocking = false;
  router.Add(
      "GET", "/health",
      [&auth](HttpRequest&) { return HealthResponse(auth.manager().lifecycle().BackendName()); },
      fast);
}

}  // namespace asb::api
