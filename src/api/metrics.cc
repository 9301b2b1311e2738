#include "api/metrics.h"

#include <cstdio>
#include <cstdlib>

namespace asb::api {

namespace {

// Upper bounds in seconds, shared by every latency histogram: 1 ms .. 5 min.
constexpr double kBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                               0.5,   1,      2.5,   5,    10,    30,   60,  300};
constexpr size_t kNumBuckets = sizeof(kBuckets) / sizeof(kBuckets[0]);

std::string Label(std::string_view name, std::string_view value) {
  return std::string(name) + "=\"" + Metrics::EscapeLabel(value) + "\"";
}

// The shortest of %.15g / %.17g that reads back as `v` (bucket bounds print as "0.005").
std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

void Header(std::string& out, std::string_view name, std::string_view help, std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void RenderCounter(std::string& out, std::string_view name, std::string_view help,
                   const std::map<std::string, uint64_t>& family) {
  Header(out, name, help, "counter");
  for (const auto& [labels, v] : family) {
    out += name;
    out += '{';
    out += labels;
    out += "} ";
    out += std::to_string(v);
    out += '\n';
  }
}

}  // namespace

std::string Metrics::EscapeLabel(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Metrics::Observe(std::map<Labels, Histogram>& family, const Labels& labels, double v) {
  Histogram& h = family[labels];
  if (h.buckets.empty()) h.buckets.assign(kNumBuckets, 0);
  for (size_t i = 0; i < kNumBuckets; ++i) {
    if (v <= kBuckets[i]) {
      ++h.buckets[i];
      break;
    }
  }
  ++h.count;
  h.sum += v;
}

void Metrics::RenderHistogram(std::string& out, std::string_view name, std::string_view help,
                              const std::map<Labels, Histogram>& family) {
  Header(out, name, help, "histogram");
  for (const auto& [labels, h] : family) {
    uint64_t cum = 0;
    for (size_t i = 0; i < kNumBuckets; ++i) {
      cum += h.buckets[i];
      out += std::string(name) + "_bucket{" + labels + ",le=\"" + Num(kBuckets[i]) + "\"} " +
             std::to_string(cum) + "\n";
    }
    out +=
        std::string(name) + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    out += std::string(name) + "_sum{" + labels + "} " + Num(h.sum) + "\n";
    out += std::string(name) + "_count{" + labels + "} " + std::to_string(h.count) + "\n";
  }
}

void Metrics::ObserveHttp(std::string_view method, std::string_view route, int status,
                          double seconds) {
  std::string l = Label("method", method) + "," + Label("route", route);
  std::string ls = l + "," + Label("status", std::to_string(status));
  std::lock_guard<std::mutex> lock(mu_);
  ++http_requests_[ls];
  Observe(http_seconds_, ls, seconds);
}

void Metrics::CountAuth(std::string_view result) {
  std::string l = Label("result", result);
  std::lock_guard<std::mutex> lock(mu_);
  ++auth_results_[l];
}

void Metrics::ObserveCreate(std::string_view backend, std::string_view template_name,
                            std::string_view result, double seconds) {
  std::string l = Label("backend", backend) + "," + Label("template", template_name);
  std::lock_guard<std::mutex> lock(mu_);
  ++creates_[l + "," + Label("result", result)];
  if (result == "ok") Observe(create_seconds_, l, seconds);
}

void Metrics::ObserveExec(std::string_view mode, std::string_view result, double seconds) {
  std::string l = Label("mode", mode);
  std::lock_guard<std::mutex> lock(mu_);
  ++execs_[l + "," + Label("result", result)];
  Observe(exec_seconds_, l, seconds);
}

void Metrics::AddStreamBytes(std::string_view route, uint64_t bytes) {
  std::string l = Label("route", route);
  std::lock_guard<std::mutex> lock(mu_);
  stream_bytes_[l] += bytes;
}

void Metrics::CountAudit(std::string_view result) {
  std::string l = Label("result", result);
  std::lock_guard<std::mutex> lock(mu_);
  ++audit_[l];
}

std::string Metrics::Render(const Gauges& g) const {
  std::string out;
  Header(out, "asb_sandboxes", "Sandboxes by state (destroyed ones are not counted).", "gauge");
  for (const auto& [state, n] : g.sandboxes_by_state) {
    out += "asb_sandboxes{" + Label("state", state) + "} " + std::to_string(n) + "\n";
  }
  if (g.sandboxes_reaped_total >= 0) {
    Header(out, "asb_sandboxes_reaped_total",
           "Sandboxes destroyed by the reaper (TTL or idle timeout) since start.", "counter");
    out += "asb_sandboxes_reaped_total " + std::to_string(g.sandboxes_reaped_total) + "\n";
  }
  if (g.sandboxes_auto_paused_total >= 0) {
    Header(out, "asb_sandboxes_auto_paused_total",
           "Sandboxes made with auto_pause that their TTL or idle timeout paused, since start.",
           "counter");
    out +=
        "asb_sandboxes_auto_paused_total " + std::to_string(g.sandboxes_auto_paused_total) + "\n";
  }
  if (!g.recovery.empty()) {
    Header(out, "asb_recovery_sandboxes_total",
           "What start-up recovery did with the sandboxes of an earlier server process.",
           "counter");
    for (const auto& [outcome, n] : g.recovery) {
      out += "asb_recovery_sandboxes_total{" + Label("outcome", outcome) + "} " +
             std::to_string(n) + "\n";
    }
  }
  if (!g.pools.empty()) {
    auto labels = [](const Gauges::Pool& p) {
      return "{" + Label("template", p.template_name) + "," +
             Label("network", p.network ? "true" : "false") + "} ";
    };
    Header(out, "asb_pool_size", "Ready sandboxes each warm pool is to keep.", "gauge");
    for (const auto& p : g.pools)
      out += "asb_pool_size" + labels(p) + std::to_string(p.size) + "\n";
    Header(out, "asb_pool_ready", "Ready sandboxes in each warm pool now.", "gauge");
    for (const auto& p : g.pools) {
      out += "asb_pool_ready" + labels(p) + std::to_string(p.ready) + "\n";
    }
    Header(out, "asb_pool_hits_total", "Creates that took a warm pool's sandbox.", "counter");
    for (const auto& p : g.pools) {
      out += "asb_pool_hits_total" + labels(p) + std::to_string(p.hits) + "\n";
    }
    Header(out, "asb_pool_misses_total",
           "Creates of a pooled template that found no ready sandbox of their shape.", "counter");
    for (const auto& p : g.pools) {
      out += "asb_pool_misses_total" + labels(p) + std::to_string(p.misses) + "\n";
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  RenderCounter(out, "asb_http_requests_total",
                "HTTP requests by method, route template and status.", http_requests_);
  RenderHistogram(out, "asb_http_request_duration_seconds",
                  "HTTP request latency by method, route template and status.", http_seconds_);
  RenderCounter(out, "asb_auth_results_total", "Authentication and authorization outcomes.",
                auth_results_);
  RenderCounter(out, "asb_sandbox_creates_total", "Sandbox creates by backend, template, result.",
                creates_);
  RenderHistogram(out, "asb_sandbox_create_duration_seconds",
                  "Latency of successful sandbox creates by backend and template.",
                  create_seconds_);
  RenderCounter(out, "asb_execs_total", "Commands run, by mode and result.", execs_);
  RenderHistogram(out, "asb_exec_duration_seconds", "Command latency by mode (request to end).",
                  exec_seconds_);
  RenderCounter(out, "asb_stream_bytes_total", "Bytes sent in streamed response bodies.",
                stream_bytes_);
  RenderCounter(out, "asb_audit_events_total", "Audit events written (ok) or lost (error).",
                audit_);
  return out;
}

}  // namespace asb::api
