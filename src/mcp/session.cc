// JSON-RPC 2.0 (https://www.jsonrpc.org/specification) and the MCP lifecycle; see session.h.
#include "mcp/session.h"

#include <utility>

namespace asb::mcp {

namespace json = boost::json;

namespace {

// JSON-RPC 2.0 error codes (specification section 5.1).
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

json::value ErrorResponse(const json::value& id, int code, std::string_view message) {
  json::object e;
  e["code"] = code;
  e["message"] = message;
  json::object r;
  r["jsonrpc"] = "2.0";
  r["id"] = id;
  r["error"] = std::move(e);
  return r;
}

json::value Response(const json::value& id, json::value result) {
  json::object r;
  r["jsonrpc"] = "2.0";
  r["id"] = id;
  r["result"] = std::move(result);
  return r;
}

bool ValidId(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64(); }

}  // namespace

std::string_view ServerInstructions() {
  return "agent-sandbox gives you isolated Linux sandboxes. Typical work: sandbox_create "
         "(keep the returned id), then work in /workspace inside it with sandbox_write_file, "
         "sandbox_exec and sandbox_read_file. Take a sandbox_snapshot before risky changes and "
         "sandbox_rollback to it if they go wrong; sandbox_fork a snapshot to explore an "
         "alternative in a new sandbox. File contents that are not UTF-8 travel as base64 with "
         "encoding \"base64\". Failures come back as tool errors whose text starts with an "
         "error code (not_found, invalid_request, ...). Always sandbox_destroy sandboxes you "
         "no longer need.";
}

McpSession::McpSession(Tools tools, Send send) : tools_(std::move(tools)), send_(std::move(send)) {}

McpSession::~McpSession() { WaitIdle(); }

std::string McpSession::protocol_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

void McpSession::SendValue(const ReplyPtr& reply, Outgoing kind, const json::value& v) {
  std::string text = kind == Outgoing::kNoResponse ? std::string() : json::serialize(v);
  std::lock_guard<std::mutex> lock(send_mu_);
  (*reply)(kind, text);
}

void McpSession::HandleText(std::string_view text) {
  HandleText(text, [this](Outgoing kind, const std::string& t) {
    if (kind != Outgoing::kNoResponse) send_(t);
  });
}

void McpSession::Cancel(const json::value& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(json::serialize(id));
  if (it != running_.end()) it->second.cancelled->store(true);
}

void McpSession::HandleText(std::string_view text, Reply reply_fn) {
  auto reply = std::make_shared<const Reply>(std::move(reply_fn));
  json::error_code ec;
  json::value msg = json::parse(text, ec);
  if (ec) {
    SendValue(reply, Outgoing::kResponse,
              ErrorResponse(nullptr, kParseError, "parse error: " + ec.message()));
    return;
  }
  if (msg.is_array()) {
    std::string v = protocol_version();
    bool batching = v == "2025-03-26" || v == "2024-11-05";
    if (!batching || msg.as_array().empty()) {
      SendValue(reply, Outgoing::kResponse,
                ErrorResponse(nullptr, kInvalidRequest,
                              batching ? "empty batch"
                                       : "JSON-RPC batches are not supported in this protocol "
                                         "revision"));
      return;
    }
    json::array answers;
    for (const auto& m : msg.as_array()) {
      json::value r = HandleMessage(m, /*async_ok=*/false, reply);
      if (!r.is_null()) answers.push_back(std::move(r));
    }
    if (!answers.empty()) SendValue(reply, Outgoing::kResponse, answers);
    return;
  }
  json::value r = HandleMessage(msg, /*async_ok=*/true, reply);
  if (!r.is_null()) SendValue(reply, Outgoing::kResponse, r);
}

json::value McpSession::HandleMessage(const json::value& msg, bool async_ok,
                                      const ReplyPtr& reply) {
  if (!msg.is_object()) return ErrorResponse(nullptr, kInvalidRequest, "not a JSON object");
  const json::object& o = msg.as_object();
  auto jv = o.find("jsonrpc");
  if (jv == o.end() || !jv->value().is_string() || jv->value().as_string() != "2.0") {
    return ErrorResponse(nullptr, kInvalidRequest, "jsonrpc must be \"2.0\"");
  }
  auto mit = o.find("method");
  if (mit == o.end()) {
    return nullptr;  // a response from the client (we send no requests): ignore
  }
  if (!mit->value().is_string()) {
    return ErrorResponse(nullptr, kInvalidRequest, "method must be a string");
  }
  std::string_view method = mit->value().as_string();
  static const json::object kEmpty;
  const json::object* params = &kEmpty;
  auto pit = o.find("params");
  if (pit != o.end()) {
    if (!pit->value().is_object()) {
      auto idit = o.find("id");
      return ErrorResponse(idit == o.end() ? json::value(nullptr) : idit->value(), kInvalidParams,
                           "params must be an object");
    }
    params = &pit->value().as_object();
  }
  auto idit = o.find("id");
  if (idit == o.end()) {  // a notification: never answered
    if (method == "notifications/initialized") {
      std::lock_guard<std::mutex> lock(mu_);
      initialized_ = true;
    } else if (method == "notifications/cancelled") {
      auto rid = params->find("requestId");
      if (rid != params->end()) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = running_.find(json::serialize(rid->value()));
        if (it != running_.end()) it->second.cancelled->store(true);
      }
    }
    return nullptr;
  }
  if (!ValidId(idit->value())) {  // MCP: "the ID MUST NOT be null", string or integer
    return ErrorResponse(nullptr, kInvalidRequest, "id must be a string or an integer");
  }
  return Dispatch(idit->value(), method, *params, async_ok, reply);
}

json::value McpSession::Dispatch(const json::value& id, std::string_view method,
                                 const json::object& params, bool async_ok, const ReplyPtr& reply) {
  if (method == "initialize") {
    std::string requested;
    auto pv = params.find("protocolVersion");
    if (pv != params.end() && pv->value().is_string()) requested = pv->value().as_string();
    std::string chosen(kProtocolVersions[0]);
    for (auto v : kProtocolVersions) {
      if (v == requested) chosen = v;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      version_ = chosen;
    }
    json::object result;
    result["protocolVersion"] = chosen;
    json::object tools_cap;
    tools_cap["listChanged"] = false;
    json::object caps;
    caps["tools"] = std::move(tools_cap);
    result["capabilities"] = std::move(caps);
    json::object info;
    info["name"] = "agent-sandbox";
    info["title"] = "agent-sandbox";
    info["version"] = ASB_VERSION;
    result["serverInfo"] = std::move(info);
    result["instructions"] = ServerInstructions();
    return Response(id, std::move(result));
  }
  if (method == "ping") return Response(id, json::object{});
  if (protocol_version().empty()) {
    return ErrorResponse(id, kInvalidRequest, "the session is not initialized (send initialize)");
  }
  if (method == "tools/list") {
    json::object result;
    result["tools"] = Tools::Definitions();
    return Response(id, std::move(result));
  }
  if (method == "tools/call") {
    auto n = params.find("name");
    if (n == params.end() || !n->value().is_string()) {
      return ErrorResponse(id, kInvalidParams, "params.name must be a string");
    }
    if (!Tools::Exists(n->value().as_string())) {
      return ErrorResponse(id, kInvalidParams,
                           "unknown tool: " + std::string(n->value().as_string()));
    }
    auto args = params.find("arguments");
    if (args != params.end() && !args->value().is_object() && !args->value().is_null()) {
      return ErrorResponse(id, kInvalidParams, "params.arguments must be an object");
    }
    if (!async_ok) {
      return RunToolCall(id, params, std::make_shared<std::atomic<bool>>(false), reply);
    }
    if (!StartToolCall(id, params, reply)) {
      return ErrorResponse(id, kInvalidRequest, "a request with this id is still running");
    }
    return nullptr;
  }
  return ErrorResponse(id, kMethodNotFound, "method not found: " + std::string(method));
}

bool McpSession::StartToolCall(const json::value& id, const json::object& params,
                               const ReplyPtr& reply) {
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::string key = json::serialize(id);
  std::vector<Worker> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_.count(key)) return false;
    running_[key] = Running{cancelled};
    // Reap the threads of calls that have ended, so a long session does not pile them up.
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->done->load()) {
        finished.push_back(std::move(*it));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
    workers_.push_back(Worker{
        std::thread([this, id, params, cancelled, done, key, reply] {
          json::value r = RunToolCall(id, params, cancelled, reply);
          {
            std::lock_guard<std::mutex> l(mu_);
            running_.erase(key);
          }
          SendValue(reply, cancelled->load() ? Outgoing::kNoResponse : Outgoing::kResponse, r);
          done->store(true);
        }),
        done});
  }
  for (auto& w : finished) w.thread.join();
  return true;
}

json::value McpSession::RunToolCall(const json::value& id, const json::object& params,
                                    const std::shared_ptr<std::atomic<bool>>& cancelled,
                                    const ReplyPtr& reply) {
  std::string name(params.at("name").as_string());
  static const json::object kEmpty;
  auto ait = params.find("arguments");
  const json::object& args =
      (ait != params.end() && ait->value().is_object()) ? ait->value().as_object() : kEmpty;
  CallContext ctx;
  ctx.cancelled = cancelled.get();
  auto meta = params.find("_meta");
  if (meta != params.end() && meta->value().is_object()) {
    auto tok = meta->value().as_object().find("progressToken");
    if (tok != meta->value().as_object().end() &&
        (tok->value().is_string() || tok->value().is_int64() || tok->value().is_uint64())) {
      json::value token = tok->value();
      ctx.progress = [this, token, cancelled, reply](double progress, std::string message) {
        if (cancelled->load()) return;
        json::object p;
        p["progressToken"] = token;
        p["progress"] = progress;
        p["message"] = std::move(message);
        json::object n;
        n["jsonrpc"] = "2.0";
        n["method"] = "notifications/progress";
        n["params"] = std::move(p);
        SendValue(reply, Outgoing::kNotification, n);
      };
    }
  }
  return Response(id, tools_.Call(name, args, ctx));
}

void McpSession::CancelAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, r] : running_) r.cancelled->store(true);
  }
  WaitIdle();
}

void McpSession::WaitIdle() {
  for (;;) {
    std::vector<Worker> workers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      workers.swap(workers_);
    }
    if (workers.empty()) return;
    for (auto& w : workers) w.thread.join();
  }
}

}  // namespace asb::mcp
