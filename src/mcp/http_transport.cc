// Streamable HTTP at /mcp; see http_transport.h.
#include "mcp/http_transport.h"

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <functional>

#include "api/auth.h"
#include "api/errors.h"
#include "common/ids.h"
#include "common/log.h"
#include "mcp/audited_backend.h"
#include "mcp/manager_backend.h"
#include "mcp/session.h"

namespace asb::mcp {

namespace json = boost::json;

namespace {

constexpr char kSessionHeader[] = "mcp-session-id";
constexpr char kVersionHeader[] = "mcp-protocol-version";

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool SupportedVersion(std::string_view v) {
  for (auto known : kProtocolVersions) {
    if (v == known) return true;
  }
  return false;
}

api::HttpResponse JsonRpcError(int status, int code, std::string_view message) {
  json::object e;
  e["code"] = code;
  e["message"] = message;
  json::object r;
  r["jsonrpc"] = "2.0";
  r["id"] = nullptr;
  r["error"] = std::move(e);
  return api::JsonResponse(status, json::serialize(r));
}

// The body of a tools/call answer: SSE events (text/event-stream, WHATWG HTML "Server-sent
// events"), one "event: message" per JSON-RPC message, ended once every request of the POST
// has been answered (or ended without an answer). Fed from tool-call threads, pulled by the
// server's I/O thread.
class SseBody final : public api::StreamBody {
 public:
  SseBody(int pending, int64_t keepalive_ms)
      : pending_(pending), keepalive_ms_(keepalive_ms), last_emit_ms_(SteadyMs()) {}

  void Push(Outgoing kind, const std::string& text) {
    std::function<void()> notify;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!text.empty()) queue_.push_back("event: message\ndata: " + text + "\n\n");
      if (kind != Outgoing::kNotification) --pending_;
      notify = notify_;
    }
    if (notify) notify();
  }

  void OnCancel(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(mu_);
    on_cancel_ = std::move(f);
  }

  Chunk Poll() override {
    Chunk c;
    std::lock_guard<std::mutex> lock(mu_);
    while (!queue_.empty()) {
      c.data += queue_.front();
      queue_.pop_front();
    }
    c.done = pending_ <= 0;
    int64_t now = SteadyMs();
    if (!c.data.empty()) {
      last_emit_ms_ = now;
    } else if (!c.done && now - last_emit_ms_ >= keepalive_ms_) {
      c.data = ": keepalive\n\n";  // an SSE comment: keeps proxies from closing a quiet stream
      last_emit_ms_ = now;
    }
    return c;
  }

  void SetNotify(std::function<void()> notify) override {
    std::lock_guard<std::mutex> lock(mu_);
    notify_ = std::move(notify);
  }

  void Cancel() override {
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> lock(mu_);
      f = std::move(on_cancel_);
      on_cancel_ = nullptr;
    }
    if (f) f();
  }

 private:
  std::mutex mu_;
  std::deque<std::string> queue_;
  int pending_;
  int64_t keepalive_ms_;
  int64_t last_emit_ms_;
  std::function<void()> notify_;
  std::function<void()> on_cancel_;
};

// What a POST body holds.
struct Shape {
  bool batch = false;
  bool initialize = false;
  bool tools_call = false;
  int requests = 0;  // messages with a method and an id
  json::value tools_call_id;
};

Shape Classify(const json::value& v) {
  Shape s;
  auto one = [&s](const json::value& m) {
    if (!m.is_object()) {
      ++s.requests;  // answered with an Invalid Request error
      return;
    }
    const json::object& o = m.as_object();
    auto method = o.find("method");
    if (method == o.end()) return;  // a response from the client
    bool request = o.contains("id");
    if (!request) return;  // a notification
    ++s.requests;
    if (method->value().is_string()) {
      std::string_view name = method->value().as_string();
      if (name == "initialize") s.initialize = true;
      if (name == "tools/call") {
        s.tools_call = true;
        s.tools_call_id = o.at("id");
      }
    }
  };
  if (v.is_array()) {
    s.batch = true;
    for (const auto& m : v.as_array()) one(m);
  } else {
    one(v);
  }
  return s;
}

}  // namespace

struct McpHttpEndpoint::Session {
  std::string id;
  std::string key_id;
  std::atomic<int64_t> last_used_ms{0};
  std::unique_ptr<McpSession> mcp;
};

bool OriginAllowed(std::string_view origin, const std::vector<std::string>& allowed) {
  if (origin.empty()) return true;
  for (const auto& a : allowed) {
    if (origin == a) return true;
  }
  std::string o = Lower(origin);
  std::string_view rest = o;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
  } else {
    return false;  // "null", file:, other schemes
  }
  std::string_view host = rest;
  if (!host.empty() && host.front() == '[') {
    size_t end = host.find(']');
    if (end == std::string_view::npos) return false;
    std::string_view after = host.substr(end + 1);
    if (!after.empty() && after.front() != ':') return false;
    host = host.substr(0, end + 1);
  } else {
    size_t colon = host.find(':');
    if (colon != std::string_view::npos) host = host.substr(0, colon);
  }
  if (host.find('/') != std::string_view::npos) return false;
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

bool AcceptAdmits(std::string_view accept, std::string_view type) {
  accept = Trim(accept);
  if (accept.empty()) return true;
  std::string_view major = type.substr(0, type.find('/'));
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view item = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    std::string_view params;
    if (size_t semi = item.find(';'); semi != std::string_view::npos) {
      params = item.substr(semi + 1);
      item = item.substr(0, semi);
    }
    std::string media = Lower(Trim(item));
    // "q=0" (RFC 9110 section 12.4.2) refuses the type.
    bool refused = false;
    for (std::string_view rest = params; !rest.empty();) {
      size_t semi = rest.find(';');
      std::string param = Lower(Trim(rest.substr(0, semi)));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      if (param.rfind("q=", 0) == 0) refused = std::strtod(param.c_str() + 2, nullptr) <= 0;
    }
    if (refused) continue;
    if (media == "*/*" || media == type || media == std::string(major) + "/*") return true;
  }
  return false;
}

McpHttpEndpoint::McpHttpEndpoint(core::SandboxManager& manager, api::AuthLayer* auth,
                                 McpHttpOptions options)
    : manager_(manager), auth_(auth), options_(std::move(options)) {}

McpHttpEndpoint::~McpHttpEndpoint() {
  std::map<std::string, std::shared_ptr<Session>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(sessions_);
  }
  for (auto& [id, s] : all) s->mcp->CancelAll();
}

size_t McpHttpEndpoint::session_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

void McpHttpEndpoint::AddRoutes(api::Router& router) {
  api::RouteOptions post;
  // Tool arguments may carry a whole file (sandbox_write_file): the file body limit applies.
  post.file_body = true;
  router.Add(
      "POST", "/mcp", [this](api::HttpRequest& req) { return Post(req); }, post);
  router.Add("GET", "/mcp", [this](api::HttpRequest& req) {
    if (!OriginAllowed(req.Header("origin"), options_.allowed_origins)) {
      return api::ErrorResponse(403, "forbidden", "Origin not allowed");
    }
    api::HttpResponse r = api::ErrorResponse(
        405, "method_not_allowed",
        "this server sends no server-initiated messages: there is no SSE stream to GET");
    r.headers.emplace_back("Allow", "POST, DELETE");
    return r;
  });
  router.Add("DELETE", "/mcp", [this](api::HttpRequest& req) { return Delete(req); });
}

std::vector<std::shared_ptr<McpHttpEndpoint::Session>> McpHttpEndpoint::TakeExpired() {
  std::vector<std::shared_ptr<Session>> out;
  int64_t now = SteadyMs();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second->last_used_ms.load() > options_.session_idle_timeout_s * 1000) {
      out.push_back(std::move(it->second));
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::shared_ptr<McpHttpEndpoint::Session> McpHttpEndpoint::Find(const api::HttpRequest& req,
                                                                api::HttpResponse* refusal) {
  std::string_view id = req.Header(kSessionHeader);
  if (id.empty()) {
    *refusal = api::ErrorResponse(400, "invalid_request",
                                  "Mcp-Session-Id header required (send initialize first)");
    return nullptr;
  }
  for (auto& s : TakeExpired()) s->mcp->CancelAll();
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(std::string(id));
    if (it != sessions_.end()) s = it->second;
  }
  // Another key's session is not revealed: the same 404 as an unknown one.
  if (!s || s->key_id != req.key_id) {
    *refusal = api::ErrorResponse(404, "not_found",
                                  "MCP session not found (ended or expired): initialize again");
    return nullptr;
  }
  s->last_used_ms = SteadyMs();
  return s;
}

std::shared_ptr<McpHttpEndpoint::Session> McpHttpEndpoint::NewSession(const api::HttpRequest& req,
                                                                      api::HttpResponse* refusal) {
  Caller caller;  // kAnyOwner unless the auth layer says otherwise
  std::string lineage;
  if (auth_ != nullptr && !auth_->options().insecure_no_auth) {
    auto p = auth_->Authenticate(req);
    if (!p) {
      *refusal = api::ErrorResponse(p.error(), req.request_id);
      return nullptr;
    }
    caller.owner = p->admin ? std::string(core::kAnyOwner) : p->lineage;
    caller.create_owner = p->lineage;
    caller.max_sandboxes = p->max_sandboxes;
    caller.quota_lock = &auth_->QuotaLock(p->lineage);
    lineage = p->lineage;
  }
  for (auto& s : TakeExpired()) s->mcp->CancelAll();
  auto s = std::make_shared<Session>();
  s->id = "mcp_" + RandomHex(16);
  s->key_id = req.key_id;
  s->last_used_ms = SteadyMs();
  std::shared_ptr<ToolBackend> backend =
      std::make_shared<ManagerBackend>(manager_, std::move(caller));
  if (auth_ != nullptr) {  // tool calls in the audit trail, as the REST actions are
    store::EventRecord tmpl;
    tmpl.key_id = req.key_id;
    tmpl.owner = lineage;
    tmpl.request_id = s->id;
    api::AuthLayer* auth = auth_;
    backend = std::make_shared<AuditedBackend>(
        std::move(backend), std::move(tmpl),
        [auth](store::EventRecord e) { auth->Audit(std::move(e)); },
        [auth] { return auth->clock().NowUnixMs(); },
        [auth] { return auth->clock().MonotonicMs(); });
  }
  s->mcp = std::make_unique<McpSession>(Tools(std::move(backend)), [](const std::string&) {});
  return s;
}

api::HttpResponse McpHttpEndpoint::Post(api::HttpRequest& req) {
  if (!OriginAllowed(req.Header("origin"), options_.allowed_origins)) {
    return api::ErrorResponse(403, "forbidden", "Origin not allowed");
  }
  std::string_view accept = req.Header("accept");
  if (!AcceptAdmits(accept, "application/json") || !AcceptAdmits(accept, "text/event-stream")) {
    return api::ErrorResponse(406, "invalid_request",
                              "Accept must admit both application/json and text/event-stream");
  }
  std::string ctype = Lower(req.Header("content-type"));
  if (Trim(ctype.substr(0, ctype.find(';'))) != "application/json") {
    return api::ErrorResponse(415, "invalid_request", "Content-Type must be application/json");
  }
  std::string_view version = req.Header(kVersionHeader);
  if (!version.empty() && !SupportedVersion(version)) {
    return api::ErrorResponse(400, "invalid_request",
                              "unsupported MCP-Protocol-Version " + std::string(version));
  }
  json::error_code ec;
  json::value msg = json::parse(req.body, ec);
  if (ec) return JsonRpcError(400, -32700, "parse error: " + ec.message());
  if (!msg.is_object() && !msg.is_array()) {
    return JsonRpcError(400, -32600, "a JSON-RPC message must be an object");
  }
  Shape shape = Classify(msg);

  std::shared_ptr<Session> s;
  api::HttpResponse refusal;
  if (shape.initialize) {
    if (shape.batch) {
      return JsonRpcError(400, -32600, "initialize must not be part of a JSON-RPC batch");
    }
    if (!req.Header(kSessionHeader).empty()) {
      return api::ErrorResponse(400, "invalid_request",
                                "initialize starts a new session: send it without "
                                "Mcp-Session-Id");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (sessions_.size() >= options_.max_sessions) {
        return api::ErrorResponse(429, "limit_exceeded",
                                  "too many MCP sessions; end unused ones with DELETE /mcp");
      }
      if (!req.key_id.empty()) {
        size_t mine = 0;
        for (const auto& [id, other] : sessions_) mine += other->key_id == req.key_id ? 1 : 0;
        if (mine >= options_.max_sessions_per_key) {
          return api::ErrorResponse(429, "limit_exceeded",
                                    "too many MCP sessions for this API key (" +
                                        std::to_string(options_.max_sessions_per_key) +
                                        "); end unused ones with DELETE /mcp");
        }
      }
    }
    s = NewSession(req, &refusal);
  } else {
    s = Find(req, &refusal);
  }
  if (!s) return refusal;
  if (shape.batch && s->mcp->protocol_version() == "2025-06-18") {
    return JsonRpcError(400, -32600,
                        "JSON-RPC batches are not supported in protocol revision 2025-06-18");
  }

  if (shape.requests == 0) {  // notifications and responses only
    s->mcp->HandleText(req.body, [](Outgoing, const std::string&) {});
    return api::HttpResponse{202, "", "", {}, nullptr, "", nullptr, nullptr};
  }

  if (shape.tools_call && !shape.batch) {
    auto body = std::make_shared<SseBody>(shape.requests, options_.keepalive_ms);
    std::weak_ptr<Session> weak = s;
    json::value id = shape.tools_call_id;
    body->OnCancel([weak, id] {
      if (auto live = weak.lock()) live->mcp->Cancel(id);  // the client went away
    });
    s->mcp->HandleText(req.body,
                       [body](Outgoing kind, const std::string& text) { body->Push(kind, text); });
    api::HttpResponse r;
    r.status = 200;
    r.content_type = "text/event-stream";
    r.stream = body;
    return r;
  }

  // Answered before HandleText returns (a batch runs its tool calls in place).
  std::mutex mu;
  std::string answer;
  s->mcp->HandleText(req.body, [&](Outgoing kind, const std::string& text) {
    if (kind != Outgoing::kResponse) return;  // no stream to put notifications on
    std::lock_guard<std::mutex> lock(mu);
    answer = text;
  });
  api::HttpResponse r = api::JsonResponse(200, answer);
  if (shape.initialize) {
    json::value v = json::parse(answer, ec);
    if (ec || !v.is_object() || !v.as_object().contains("result")) return r;  // no session
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[s->id] = s;
    }
    r.headers.emplace_back("Mcp-Session-Id", s->id);
    spdlog::info("mcp session {} started key_id={} version={}", s->id,
                 req.key_id.empty() ? "-" : req.key_id, s->mcp->protocol_version());
  }
  return r;
}

api::HttpResponse McpHttpEndpoint::Delete(api::HttpRequest& req) {
  if (!OriginAllowed(req.Header("origin"), options_.allowed_origins)) {
    return api::ErrorResponse(403, "forbidden", "Origin not allowed");
  }
  api::HttpResponse refusal;
  std::shared_ptr<Session> s = Find(req, &refusal);
  if (!s) return refusal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(s->id);
  }
  s->mcp->CancelAll();
  spdlog::info("mcp session {} ended by the client", s->id);
  return api::NoContent();
}

}  // namespace asb::mcp
