#include "api/seed_a_wire.h"

#include <string.h>  // sigabbrev_np (GNU)

#include <boost/json.hpp>
#include <utility>

#include "api/errors.h"
#include "api/event_ndjson_body.h"
#include "api/text.h"

namespace asb::api {

namespace json = boost::json;

namespace {

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "SIG" + std::to_string(sig);
}

class SeedAStreamBody final : public EventNdjsonBody {
 public:
  SeedAStreamBody(std::shared_ptr<const core::ExecStream> exec, int64_t keepalive_ms,
                  const Clock& clock)
      : EventNdjsonBody(exec->events, exec, /*base64=*/false, keepalive_ms, "exec failed"),
        clock_(clock) {}

 private:
  Result<json::object> ExitLine(const core::StreamEvent& done) override {
    if (!done.exec_result) return Fail(Error::Backend("exec ended without a result"));
    const core::ExecResult& r = *done.exec_result;
    json::object o;
    o["type"] = "result";
    AddSeedAResult(r, &o);
    return o;
  }

  json::object DataLine(core::OutputStream stream, std::string data) override {
    json::object o;
    o["type"] = "stream";
    o["stream"] = stream == core::OutputStream::kStderr ? "stderr" : "stdout";
    o["data"] = std::move(data);
    o["ts"] = clock_.NowUnixMs();
    return o;
  }

  json::object ErrorObject(const Error& e) override {
    json::object o;
    o["type"] = "error";
    ClientError c = ForClient(e);
    o["error"] = c.message;
    o["code"] = WireCodeOf(c.code);
    return o;
  }

  std::string KeepaliveLine() override { return "\n"; }

  const Clock& clock_;
};

// The message and code of an answer in our error shape, if it is one.
bool OurError(const std::string& body, std::string* code, std::string* message) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return false;
  const json::value* e = v.as_object().if_contains("error");
  if (e == nullptr || !e->is_object()) return false;
  const json::value* c = e->as_object().if_contains("code");
  const json::value* m = e->as_object().if_contains("message");
  if (c == nullptr || m == nullptr || !c->is_string() || !m->is_string()) return false;
  *code = c->as_string();
  *message = m->as_string();
  return true;
}

}  // namespace

void AddSeedAResult(const core::ExecResult& r, json::object* o) {
  (*o)["exitCode"] = r.signal != 0 ? -1 : r.exit_code;
  if (r.signal != 0) (*o)["signal"] = SignalName(r.signal);
  (*o)["duration"] = r.duration_ms;
  (*o)["timedOut"] = r.timed_out;
  (*o)["truncated"] = r.stdout_truncated || r.stderr_truncated;
}

std::shared_ptr<StreamBody> MakeSeedAExecStreamBody(core::ExecStream exec, int64_t keepalive_ms,
                                                    const Clock& clock) {
  return std::make_shared<SeedAStreamBody>(
      std::make_shared<const core::ExecStream>(std::move(exec)), keepalive_ms, clock);
}

std::string SeedAErrorJson(std::string_view code, std::string_view message) {
  json::object o;
  o["error"] = SanitizeUtf8(message);
  o["code"] = code;
  return json::serialize(o);
}

Router WithSeedAErrorShape(const Router& inner) {
  Router out;
  for (const Route& r : inner.routes()) {
    if (r.host) {  // a preview host (api/router.h): the app's answers, never rewritten
      out.AddHost(r.pattern, r.host, r.handler, r.options);
      continue;
    }
    if (r.pattern != "/exec" && r.pattern.rfind("/exec/", 0) != 0) {
      out.Add(r.method, r.pattern, r.handler, r.options);
      continue;
    }
    auto reshape = [](HttpResponse& resp) {
      std::string code, message;
      if (resp.status >= 400 && !resp.stream && OurError(resp.body, &code, &message)) {
        resp.body = SeedAErrorJson(code, message);
      }
    };
    RouteOptions options = r.options;
    if (options.gate) {  // a refusal before the body (the key check) in seed A's shape too
      options.gate = [gate = options.gate,
                      reshape](const HttpRequest& req) -> std::optional<HttpResponse> {
        std::optional<HttpResponse> resp = gate(req);
        if (resp) reshape(*resp);
        return resp;
      };
    }
    out.Add(
        r.method, r.pattern,
        [handler = r.handler, reshape](HttpRequest& req) {
          HttpResponse resp = handler(req);
          reshape(resp);
          return resp;
        },
        std::move(options));
  }
  return out;
}

}  // namespace asb::api
