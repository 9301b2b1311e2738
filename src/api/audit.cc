#include "api/audit.h"

#include <atomic>
#include <boost/json.hpp>
#include <mutex>

#include "api/text.h"
#include "common/redact.h"

namespace asb::api {

namespace json = boost::json;

std::string AuditTarget(std::string_view raw) {
  // Valid UTF-8: it may quote a query value or a path parameter, which are any bytes, and JSON
  // text must be UTF-8 (found by fuzz/fuzz_http.cc: GET /v1/events answered invalid JSON).
  // Redacted before the cut, so that a token across the cut cannot leave its first half.
  std::string s = RedactSecrets(SanitizeUtf8(raw));
  if (s.size() > kMaxAuditTarget) {
    size_t n = kMaxAuditTarget;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s.resize(n);
    s += "...";
  }
  return s;
}

namespace {

// A shell-like rendering of argv: words with spaces or quotes are single-quoted.
std::string JoinArgv(const json::array& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!a.is_string()) continue;
    std::string w(a.as_string());
    if (!out.empty()) out += ' ';
    if (w.empty() || w.find_first_of(" \t\n'\"\\$`") != std::string::npos) {
      std::string q = "'";
      for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += q + "'";
    } else {
      out += w;
    }
  }
  return out;
}

struct Name {
  const char* method;
  const char* pattern;
  const char* action;
};

constexpr Name kNames[] = {
    {"POST", "/v1/sandboxes", "sandbox.create"},
    {"DELETE", "/v1/sandboxes/{id}", "sandbox.destroy"},
    {"POST", "/v1/sandboxes/{id}/timeout", "sandbox.timeout"},
    {"POST", "/v1/sandboxes/{id}/pause", "sandbox.pause"},
    {"POST", "/v1/sandboxes/{id}/resume", "sandbox.resume"},
    {"POST", "/v1/sandboxes/{id}/exec", "exec"},
    {"POST", "/v1/sandboxes/{id}/exec/stream", "exec.stream"},
    {"POST", "/v1/sandboxes/{id}/processes", "process.start"},
    {"POST", "/v1/sandboxes/{id}/processes/{pid}/stdin", "process.stdin"},
    {"POST", "/v1/sandboxes/{id}/processes/{pid}/close-stdin", "process.close_stdin"},
    {"POST", "/v1/sandboxes/{id}/processes/{pid}/signal", "process.signal"},
    {"POST", "/v1/sandboxes/{id}/processes/{pid}/resize", "process.resize"},
    {"DELETE", "/v1/sandboxes/{id}/processes/{pid}", "process.kill"},
    {"PUT", "/v1/sandboxes/{id}/files", "file.write"},
    {"DELETE", "/v1/sandboxes/{id}/files", "file.delete"},
    {"POST", "/v1/sandboxes/{id}/files/mkdir", "file.mkdir"},
    {"POST", "/v1/sandboxes/{id}/files/move", "file.move"},
    {"POST", "/v1/sandboxes/{id}/snapshots", "snapshot.create"},
    {"POST", "/v1/sandboxes/{id}/rollback", "sandbox.rollback"},
    {"DELETE", "/v1/snapshots/{id}", "snapshot.delete"},
    {"POST", "/v1/snapshots/{id}/fork", "snapshot.fork"},
    {"POST", "/v1/sandboxes/{id}/fork", "sandbox.fork"},
    {"POST", "/v1/snapshots", "snapshot.import"},
    {"PUT", "/v1/sandboxes/{id}/archive", "archive.import"},
    {"POST", "/v1/sandboxes/{id}/previews", "preview.create"},
    {"DELETE", "/v1/sandboxes/{id}/previews/{preview_id}", "preview.revoke"},
    {"POST", "/v1/keys", "key.create"},
    {"DELETE", "/v1/keys/{id}", "key.delete"},
    {"POST", "/v1/keys/{id}/revoke", "key.revoke"},
    {"POST", "/v1/keys/{id}/enable", "key.enable"},
    {"POST", "/v1/keys/{id}/rotate", "key.rotate"},
    // E2B's control plane (handlers_e2b.cc): the same actions, so quotas and audit hold.
    {"POST", "/sandboxes", "sandbox.create"},
    {"POST", "/v2/sandboxes", "sandbox.create"},
    {"DELETE", "/sandboxes/{id}", "sandbox.destroy"},
    {"POST", "/sandboxes/{id}/timeout", "sandbox.timeout"},
    {"POST", "/sandboxes/{id}/pause", "sandbox.pause"},
    {"POST", "/sandboxes/{id}/fork", "sandbox.fork"},
    {"POST", "/sandboxes/{id}/snapshots", "snapshot.create"},
    {"DELETE", "/templates/{id}", "snapshot.delete"},
    {"POST", "/sandboxes/{id}/resume", "sandbox.resume"},
    {"POST", "/sandboxes/{id}/connect", "sandbox.connect"},
    {"POST", "/v2/sandboxes/{id}/connect", "sandbox.connect"},
};

}  // namespace

std::optional<std::string> AuditCommandOf(const json::object& body) {
  const json::value* cmd = body.if_contains("command");
  const json::value* args = body.if_contains("args");
  if (cmd && cmd->is_string() && args && args->is_array()) {
    json::array argv{*cmd};  // seed A's {command, args}: the program and its arguments
    for (const auto& a : args->as_array()) argv.push_back(a);
    return AuditTarget(JoinArgv(argv));
  }
  if (cmd && cmd->is_string()) return AuditTarget(cmd->as_string());
  if (cmd && cmd->is_array()) return AuditTarget(JoinArgv(cmd->as_array()));  // seed B's argv
  if (const json::value* argv = body.if_contains("argv"); argv && argv->is_array()) {
    return AuditTarget(JoinArgv(argv->as_array()));
  }
  return std::nullopt;
}

CallInfo DescribeCall(const Route& route, const HttpRequest& req) {
  CallInfo c;
  // Seed A's /admin/keys routes are the /v1/keys ones under another name.
  std::string pattern = route.pattern;
  if (pattern.rfind("/admin/keys", 0) == 0) pattern = "/v1/keys" + pattern.substr(11);
  for (const Name& n : kNames) {
    if (route.method == n.method && pattern == n.pattern) c.action = n.action;
  }
  if (c.action.empty()) c.action = route.method + " " + route.pattern;
  c.exec = c.action == "exec" || c.action == "exec.stream";
  c.stream_exec = c.action == "exec.stream";
  c.create = c.action == "sandbox.create";
  c.fork = c.action == "snapshot.fork" || c.action == "sandbox.fork";
  c.audited = c.exec || (req.method != "GET" && req.method != "HEAD");
  if (!c.audited) return c;

  if (pattern.rfind("/v1/keys/{id}", 0) == 0 || pattern.rfind("/v1/snapshots/{id}", 0) == 0) {
    c.target = AuditTarget(req.Param("id"));
  }
  if (c.action == "preview.revoke") c.target = AuditTarget(req.Param("preview_id"));
  if (pattern.find("{pid}") != std::string::npos) c.target = AuditTarget(req.Param("pid"));
  if (const std::string* p = req.Query("path")) c.target = AuditTarget(*p);
  if (route.options.file_body || req.body.empty()) return c;
  // JSON routes: only these fields, never env, stdin or contents.
  try {
    json::value v = json::parse(req.body);
    if (!v.is_object()) return c;
    const json::object& o = v.as_object();
    if (std::optional<std::string> cmd = AuditCommandOf(o)) {
      c.target = std::move(*cmd);
    } else if (const auto* from = o.if_contains("from"); from && from->is_string()) {
      const auto* to = o.if_contains("to");
      c.target =
          AuditTarget(std::string(from->as_string()) + " -> " +
                      (to && to->is_string() ? std::string(to->as_string()) : std::string()));
    } else if (const auto* path = o.if_contains("path"); path && path->is_string()) {
      c.target = AuditTarget(std::string(path->as_string()));
    } else if (const auto* snap = o.if_contains("snapshot_id"); snap && snap->is_string()) {
      c.target = AuditTarget(std::string(snap->as_string()));
    } else if (const auto* tmpl = o.if_contains("template"); tmpl && tmpl->is_string()) {
      c.target = AuditTarget(std::string(tmpl->as_string()));
    } else if (const auto* name = o.if_contains("name"); name && name->is_string()) {
      c.target = AuditTarget(std::string(name->as_string()));
    }
  } catch (const std::exception&) {
    // Not JSON: the handler answered 400; nothing to describe.
  }
  return c;
}

ExecEnd ExecEndOfJson(std::string_view json_text) {
  // A scan, not a parse: a sync exec answer can hold megabytes of output. Inside JSON strings
  // every quote is escaped, so an unescaped "exit_code": can only be the member itself.
  ExecEnd end;
  end.error = true;
  if (json_text.find("\"type\":\"error\"") != std::string_view::npos) return end;
  constexpr std::string_view kCode = "\"exit_code\":";
  size_t pos = json_text.find(kCode);
  if (pos == std::string_view::npos) return end;
  pos += kCode.size();
  bool neg = pos < json_text.size() && json_text[pos] == '-';
  if (neg) ++pos;
  int64_t v = 0;
  size_t digits = 0;
  while (pos < json_text.size() && digits < 12 && json_text[pos] >= '0' && json_text[pos] <= '9') {
    v = v * 10 + (json_text[pos++] - '0');
    ++digits;
  }
  if (digits == 0) return end;
  end.exit_code = neg ? -v : v;
  end.error = false;
  end.timed_out = json_text.find("\"timed_out\":true") != std::string_view::npos;
  return end;
}

namespace {

class ObservedStream final : public StreamBody {
 public:
  ObservedStream(std::shared_ptr<StreamBody> inner, bool parse_exec,
                 std::function<void(uint64_t, const ExecEnd&, bool)> on_end)
      : inner_(std::move(inner)), parse_exec_(parse_exec), on_end_(std::move(on_end)) {}
  ~ObservedStream() override { End(true); }

  Chunk Poll() override {
    Chunk c = inner_->Poll();
    bytes_ += c.data.size();
    if (parse_exec_ && !c.data.empty()) Scan(c.data);
    if (c.done) End(false);
    return c;
  }
  void SetNotify(std::function<void()> notify) override { inner_->SetNotify(std::move(notify)); }
  void Cancel() override {
    inner_->Cancel();
    End(true);
  }

 private:
  // Keeps the current partial line; a complete line holding "exit_code" or an error event
  // decides the end. Output lines are dropped at once (never kept beyond one line).
  void Scan(const std::string& data) {
    for (char ch : data) {
      if (ch == '\n') {
        if (line_.find("\"type\":\"exit\"") != std::string::npos ||
            line_.find("\"type\":\"error\"") != std::string::npos) {
          end_ = ExecEndOfJson(line_);
          have_end_ = true;
        }
        line_.clear();
      } else if (line_.size() < 4096) {
        line_ += ch;
      } else {
        // a long output line: not an exit event; the rest of it is dropped
      }
    }
  }
  void End(bool cancelled) {
    if (ended_.exchange(true)) return;
    ExecEnd e = end_;
    if (!have_end_) e.error = true;
    if (on_end_) on_end_(bytes_, e, cancelled && !have_end_);
  }

  std::shared_ptr<StreamBody> inner_;
  bool parse_exec_;
  std::function<void(uint64_t, const ExecEnd&, bool)> on_end_;
  uint64_t bytes_ = 0;
  std::string line_;
  bool have_end_ = false;
  ExecEnd end_;
  std::atomic<bool> ended_{false};
};

}  // namespace

std::shared_ptr<StreamBody> ObserveStream(
    std::shared_ptr<StreamBody> inner, bool parse_exec,
    std::function<void(uint64_t, const ExecEnd&, bool)> on_end) {
  return std::make_shared<ObservedStream>(std::move(inner), parse_exec, std::move(on_end));
}

}  // namespace asb::api
