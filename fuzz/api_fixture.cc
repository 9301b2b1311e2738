#include "fuzz/api_fixture.h"

#include <stdlib.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "api/auth.h"
#include "api/errors.h"
#include "api/handlers.h"
#include "api/seed_a_wire.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/log.h"
#include "core/sandbox_manager.h"
#include "core/testing/fake_backend.h"
#include "fuzz/fuzz_check.h"
#include "store/store.h"

namespace asb::fuzz {

namespace {

struct Api {
  std::string dir;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<core::testing::FakeBackend> backend;
  std::unique_ptr<core::DirTemplateCatalog> templates;
  std::unique_ptr<core::SandboxManager> manager;
  api::ApiContext ctx;
  std::unique_ptr<api::AuthLayer> auth;
  api::Router router;
};

Api* g_api = nullptr;

void RemoveDataDir() {
  if (g_api == nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(g_api->dir, ec);
}

Api* Build() {
  spdlog::set_level(spdlog::level::off);  // a log line per request would dominate the run
  auto* a = new Api();
  char tmpl[] = "/tmp/asb_fuzz_api.XXXXXX";
  ASB_FUZZ_CHECK(::mkdtemp(tmpl) != nullptr);
  a->dir = tmpl;
  std::filesystem::create_directories(a->dir + "/templates/base/rootfs");
  core::ManagerConfig cfg;
  cfg.data_dir = a->dir;
  cfg.limits.max_sandboxes = 4;  // bounds what millions of creates can accumulate
  cfg.limits.max_file_bytes = 4096;
  auto store = store::Store::Open(":memory:", SystemClock::Instance().NowUnixMs());
  ASB_FUZZ_CHECK(store.has_value());
  a->store = std::move(*store);
  a->backend = std::make_unique<core::testing::FakeBackend>("");  // no daemon: nothing runs
  a->templates = std::make_unique<core::DirTemplateCatalog>(a->dir + "/templates");
  a->manager = std::make_unique<core::SandboxManager>(cfg, *a->store, *a->backend,
                                                      SystemClock::Instance(), *a->templates);
  ASB_FUZZ_CHECK(a->manager->Start().has_value());
  a->ctx.manager = a->manager.get();
  a->ctx.store = a->store.get();
  a->ctx.stream_keepalive_ms = 10;
  a->ctx.e2b_secret = std::string(64, 'f');  // E2B's sandbox traffic answers, not 503
  api::AuthOptions ao;
  ao.env_keys = {kFuzzKey};
  ao.backend_name = "fake";
  ao.data_dir = a->dir;
  a->auth = std::make_unique<api::AuthLayer>(std::move(ao), *a->store, *a->manager,
                                             SystemClock::Instance());
  api::Router routes = api::BuildRouter(a->ctx);
  a->auth->AddRoutes(routes);
  a->router = api::WithSeedAErrorShape(a->auth->Wrap(routes));
  g_api = a;
  ::atexit(RemoveDataDir);
  return a;
}

// The one error shape: {"error":{"code":"...","message":"..."}}; under /exec, seed A's
// {"error":"...","code":"..."} (api/seed_a_wire.h).
bool IsErrorShape(const std::string& body, bool seed_a) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return false;
  const auto* e = v.as_object().if_contains("error");
  if (seed_a && e != nullptr && e->is_string()) {
    const auto* code = v.as_object().if_contains("code");
    return code && code->is_string() && !code->as_string().empty();
  }
  if (e == nullptr || !e->is_object()) return false;
  const auto* code = e->as_object().if_contains("code");
  const auto* msg = e->as_object().if_contains("message");
  return code && code->is_string() && !code->as_string().empty() && msg && msg->is_string();
}

// E2B's shapes (docs/e2b.md) on its routes: {"code": <status>, "message"} on the control plane
// and envd's HTTP routes, Connect's {"code": "<name>", "message"} on its RPCs; the auth layer
// in front of the control plane may still answer ours.
bool IsE2bErrorShape(const std::string& body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return false;
  const auto* code = v.as_object().if_contains("code");
  const auto* msg = v.as_object().if_contains("message");
  if (msg == nullptr || !msg->is_string() || code == nullptr) return false;
  return code->is_int64() || (code->is_string() && !code->as_string().empty());
}

bool IsE2bRoute(const std::string& route) {
  return route == "e2b-sandbox-traffic" || route.rfind("/sandboxes", 0) == 0 ||
         route.rfind("/v2/sandboxes", 0) == 0;
}

// Millions of inputs must not grow the process without bound: every few thousand requests the
// audit trail is emptied and the keys fuzzed requests made are deleted (the first key named
// "fuzz", which fuzz_api_bodies rotates, is kept).
void Housekeeping(Api& a) {
  static uint64_t calls = 0;
  if (++calls % 4096 != 0) return;
  (void)a.auth->events().PurgeBefore(INT64_MAX);
  auto keys = a.auth->keys().List();
  if (!keys) return;
  bool kept = false;
  for (const auto& k : *keys) {
    if (k.name == "fuzz" && !kept) {
      kept = true;
      continue;
    }
    (void)a.auth->keys().Delete(k.id);
  }
}

}  // namespace

const api::Router& ApiRouter() {
  static Api* api = Build();
  return api->router;
}

api::HttpResponse RunAndCheck(api::HttpRequest& req) {
  const api::Router& router = ApiRouter();
  Housekeeping(*g_api);
  if (req.request_id.empty()) req.request_id = NewId("req_");
  api::Router::Match match = router.Find(req.method, req.path, req.Header("host"), req.headers);
  api::HttpResponse out;
  if (!match.route) {
    out = api::Router::NotFoundResponse(match, req.method, req.path);
  } else {
    req.route = match.route->pattern;
    req.params = match.params;
    // As HttpServer::Impl::RunHandler: an exception is a 500 (and so a finding below).
    try {
      out = match.route->handler(req);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "handler of %s %s threw: %s\n", req.method.c_str(), req.route.c_str(),
                   e.what());
      std::abort();
    }
  }
  ASB_FUZZ_CHECK(out.status >= 200 && out.status <= 599);
  if (out.status == 500) {
    std::fprintf(stderr, "500 for %s %s: %s\n", req.method.c_str(), req.target.c_str(),
                 out.body.c_str());
    std::abort();
  }
  if (!out.stream && out.content_type == "application/json" && !out.body.empty()) {
    // Every JSON answer is JSON: RFC 8259 text, which includes being valid UTF-8.
    boost::system::error_code ec;
    (void)boost::json::parse(out.body, ec);
    if (ec) {
      std::fprintf(stderr, "%d with a body that is not JSON (%s) for %s %s: %s\n", out.status,
                   ec.message().c_str(), req.method.c_str(), req.target.c_str(), out.body.c_str());
      std::abort();
    }
  }
  if (out.status >= 400) {
    bool seed_a = req.path == "/exec" || req.path.rfind("/exec/", 0) == 0;
    const bool e2b = match.route != nullptr && IsE2bRoute(match.route->pattern);
    if (!IsErrorShape(out.body, seed_a) && !(e2b && IsE2bErrorShape(out.body))) {
      std::fprintf(stderr, "%d without the error shape for %s %s: %s\n", out.status,
                   req.method.c_str(), req.target.c_str(), out.body.c_str());
      std::abort();
    }
  }
  if (out.stream) {
    // A few polls, then the client "goes away", as the server does on a disconnect.
    out.stream->SetNotify([] {});
    for (int i = 0; i < 3; ++i) {
      api::StreamBody::Chunk c = out.stream->Poll();
      if (c.done || c.abort) break;
    }
    out.stream->SetNotify(nullptr);
    out.stream->Cancel();
  }
  return out;
}

}  // namespace asb::fuzz
