// The server's Prometheus metrics (api/AUTH.md), rendered in the text
// exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
// Families are fixed here, and every label takes values from a bounded set: route templates
// (never paths), HTTP status codes, backend and template names, a few result words. No sandbox
// ids, key ids, paths or commands ever become label values.
//
// Thread-safe (one mutex; each call is a map update).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace asb::api {

class Metrics {
 public:
  /// One HTTP request answered: `route` is the matched template ("/v1/sandboxes/{id}") or
  /// "unmatched"; seconds from arrival to the response head (streams: to their end).
  void ObserveHttp(std::string_view method, std::string_view route, int status, double seconds);
  /// An authentication outcome: "ok", "missing", "invalid", "forbidden", "rate_limited",
  /// "quota", "insecure".
  void CountAuth(std::string_view result);
  /// A sandbox create: result "ok" or the wire error code.
  void ObserveCreate(std::string_view backend, std::string_view template_name,
                     std::string_view result, double seconds);
  /// An exec: mode "sync" or "stream"; result "exit_zero", "exit_nonzero", "timed_out" or
  /// "error".
  void ObserveExec(std::string_view mode, std::string_view result, double seconds);
  /// Bytes sent in streamed response bodies, by route template.
  void AddStreamBytes(std::string_view route, uint64_t bytes);
  /// Audit events written (result "ok") or lost ("error").
  void CountAudit(std::string_view result);

  /// Point-in-time values supplied at scrape time.
  struct Gauges {
    std::map<std::string, int64_t> sandboxes_by_state;  // every state name, zeros included
    int64_t sandboxes_reaped_total = -1;                // -1: unknown (not rendered)
    int64_t sandboxes_auto_paused_total = -1;           // -1: unknown (not rendered)
    /// Recover() outcomes ("adopted", "dropped", "orphan_destroyed") since start.
    std::map<std::string, int64_t> recovery;
    /// Warm pools (core/warm_pool.h), by the label set {template, network}: wanted size,
    /// ready sandboxes, and creates that took one (hits) or found none (misses) since start.
    struct Pool {
      std::string template_name;
      bool network = false;
      int64_t size = 0, ready = 0, hits = 0, misses = 0;
    };
    std::vector<Pool> pools;
  };
  /// The whole exposition text.
  std::string Render(const Gauges& gauges) const;

  /// Escapes a label value (backslash, double quote, newline), per the format.
  static std::string EscapeLabel(std::string_view v);

 private:
  struct Histogram {
    std::vector<uint64_t> buckets;  // cumulative at render; per-bucket counts here
    uint64_t count = 0;
    double sum = 0;
  };
  using Labels = std::string;  // rendered label set: method="GET",route="/x"
  static void Observe(std::map<Labels, Histogram>& family, const Labels& labels, double v);
  static void RenderHistogram(std::string& out, std::string_view name, std::string_view help,
                              const std::map<Labels, Histogram>& family);

  mutable std::mutex mu_;
  std::map<Labels, uint64_t> http_requests_;
  std::map<Labels, Histogram> http_seconds_;
  std::map<Labels, uint64_t> auth_results_;
  std::map<Labels, uint64_t> creates_;
  std::map<Labels, Histogram> create_seconds_;
  std::map<Labels, uint64_t> execs_;
  std::map<Labels, Histogram> exec_seconds_;
  std::map<Labels, uint64_t> stream_bytes_;
  std::map<Labels, uint64_t> audit_;
};

}  // namespace asb::api
