// The auth layer through the routing table without sockets, over the real SandboxManager with
// core's FakeBackend and an in-memory store: answers 401/403/429, tenancy (404 and absent from
// lists), rotation keeping the lineage's sandboxes, the per-key quota, the audit trail and
// the metrics text. Runs without root (the e2e tests repeat this over HTTP).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "api/auth.h"
#include "api/handlers.h"
#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/testing/fake_backend.h"
#include "store/snapshot_store.h"
#include "store/store.h"

namespace asb::api {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr char kAdmin[] = "asb_0123456789abcdef0123456789abcdef0123456789abcdef";

class AuthLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_auth_layer_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/templates/base/rootfs");
    core::ManagerConfig cfg;
    cfg.data_dir = dir_;
    auto store = store::Store::Open(":memory:", SystemClock::Instance().NowUnixMs());
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
    backend_ = std::make_unique<core::testing::FakeBackend>("");
    templates_ = std::make_unique<core::DirTemplateCatalog>(dir_ + "/templates");
    manager_ = std::make_unique<core::SandboxManager>(cfg, *store_, *backend_,
                                                      SystemClock::Instance(), *templates_);
    ASSERT_TRUE(manager_->Start());
    ctx_.manager = manager_.get();
    AuthOptions ao;
    ao.env_keys = {kAdmin};
    ao.backend_name = "fake";
    ao.data_dir = dir_;
    auth_ = std::make_unique<AuthLayer>(ao, *store_, *manager_, SystemClock::Instance());
    Router inner = BuildRouter(ctx_);
    auth_->AddRoutes(inner);
    router_ = auth_->Wrap(inner);
  }

  void TearDown() override {
    auth_.reset();
    manager_.reset();
    backend_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  HttpResponse Call(const std::string& key, std::string method, std::string path,
                    std::string body = "") {
    HttpRequest req;
    req.method = std::move(method);
    req.target = path;
    size_t q = path.find('?');
    req.path = path.substr(0, q);
    if (q != std::string::npos) {
      std::string kv = path.substr(q + 1);
      size_t eq = kv.find('=');
      req.query[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (!key.empty()) req.headers["authorization"] = "Bearer " + key;
    req.body = std::move(body);
    req.request_id = "req_test";
    return router_.Dispatch(req);
  }

  store::CreatedKey Key(std::vector<std::string> scopes, int64_t max_sandboxes = 0) {
    store::NewKey nk;
    nk.name = "k";
    nk.scopes = std::move(scopes);
    nk.max_sandboxes = max_sandboxes;
    auto c = auth_->keys().Create(nk, SystemClock::Instance().NowUnixMs());
    EXPECT_TRUE(c) << c.error().ToString();
    return *c;
  }

  static std::string Code(const HttpResponse& r) {
    return std::string(json::parse(r.body).at("error").at("code").as_string());
  }

  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<core::testing::FakeBackend> backend_;
  std::unique_ptr<core::DirTemplateCatalog> templates_;
  std::unique_ptr<core::SandboxManager> manager_;
  ApiContext ctx_;
  std::unique_ptr<AuthLayer> auth_;
  Router router_;
};

TEST_F(AuthLayerTest, AnswersWithoutAValidKeyOrScope) {
  HttpResponse r = Call("", "GET", "/v1/sandboxes");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(Code(r), "unauthorized");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(r.headers[0].second, "Bearer");
  EXPECT_EQ(Call("asb_nope", "GET", "/v1/sandboxes").status, 401);
  EXPECT_EQ(Call("", "GET", "/readyz").status, 200) << Call("", "GET", "/readyz").body;
  auto metrics_only = Key({"metrics"});
  EXPECT_EQ(Call(metrics_only.raw_key, "GET", "/v1/sandboxes").status, 403);
  EXPECT_EQ(Call(metrics_only.raw_key, "GET", "/metrics").status, 200);
  auto exec = Key({"exec"});
  EXPECT_EQ(Call(exec.raw_key, "GET", "/metrics").status, 403);
  EXPECT_EQ(Call(exec.raw_key, "GET", "/v1/keys").status, 403);
  EXPECT_EQ(Call(kAdmin, "GET", "/v1/keys").status, 200);
}

// A browser's WebSocket carries its key in a subprotocol (ADR 0022, api/auth.h): it opens
// what the key opens, only on an upgrade; a bad value is a 401 like a bad header.
TEST_F(AuthLayerTest, AWebSocketUpgradeMayCarryTheKeyInASubprotocol) {
  auto exec = Key({"exec"});
  auto b64url = [](const std::string& in) {
    static const char* kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char c : in) {
      acc = (acc << 8) | c;
      bits += 8;
      while (bits >= 6) {
        bits -= 6;
        out.push_back(kAlphabet[(acc >> bits) & 63]);
      }
    }
    if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
    return out;
  };
  auto call = [&](const std::string& protocols, bool upgrade) {
    HttpRequest req;
    req.method = "GET";
    req.target = req.path = "/v1/sandboxes";
    if (upgrade) req.headers["upgrade"] = "websocket";
    req.headers["sec-websocket-protocol"] = protocols;
    req.request_id = "req_ws";
    return router_.Dispatch(req);
  };
  const std::string ok = "agent-sandbox.v1, agent-sandbox.bearer." + b64url(exec.raw_key);
  EXPECT_EQ(call(ok, true).status, 200) << call(ok, true).body;
  EXPECT_EQ(call(ok, false).status, 401);
  EXPECT_EQ(call("agent-sandbox.v1, agent-sandbox.bearer." + b64url("asb_nope"), true).status, 401);
  EXPECT_EQ(call("agent-sandbox.v1", true).status, 401);
  // A key without the exec scope gets its 403, whichever way it came.
  auto metrics_only = Key({"metrics"});
  EXPECT_EQ(call("agent-sandbox.bearer." + b64url(metrics_only.raw_key), true).status, 403);
}

// The console's static files need no key (the app asks for one itself).
TEST_F(AuthLayerTest, TheConsoleFilesNeedNoKey) {
  for (const char* path : {"/", "/console", "/console/assets/x.js"}) {
    HttpResponse r = Call("", "GET", path);
    EXPECT_EQ(r.status, 503) << path << " " << r.body;  // not built in this test: 503, not 401
  }
}

// One tenant's sync execs must not take every thread of the blocking pool (a security review
// held all 512 with one key; another tenant's list then waited 20.8 s).
TEST_F(AuthLayerTest, OneKeyHasAtMostItsCapOfBlockingRequestsInProgress) {
  AuthOptions ao;
  ao.env_keys = {kAdmin};
  ao.backend_name = "fake";
  ao.data_dir = dir_;
  ao.max_concurrent_requests_per_key = 3;
  auth_ = std::make_unique<AuthLayer>(ao, *store_, *manager_, SystemClock::Instance());
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> entered{0};
  Router inner;
  inner.Add("GET", "/v1/hold", [&](HttpRequest&) {  // blocking, like a sync exec
    ++entered;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return JsonResponse(200, "{}");
  });
  RouteOptions quick;
  quick.blocking = false;
  inner.Add(
      "GET", "/v1/quick", [](HttpRequest&) { return JsonResponse(200, "{}"); }, quick);
  router_ = auth_->Wrap(inner);
  auto a = Key({"exec"});
  auto b = Key({"exec"});
  auto wait_entered = [&](int n) {
    for (int i = 0; i < 500 && entered < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return entered.load() == n;
  };

  std::vector<std::thread> holders;
  std::vector<int> statuses(5, 0);
  for (int i = 0; i < 3; ++i) {
    holders.emplace_back([&, i] { statuses[i] = Call(a.raw_key, "GET", "/v1/hold").status; });
  }
  ASSERT_TRUE(wait_entered(3));                            // exactly at the cap: all three run
  HttpResponse over = Call(a.raw_key, "GET", "/v1/hold");  // one over: refused at once
  EXPECT_EQ(over.status, 429);
  EXPECT_EQ(Code(over), "limit_exceeded");
  EXPECT_NE(over.body.find("3 requests in progress"), std::string::npos) << over.body;
  ASSERT_EQ(over.headers.size(), 1u);
  EXPECT_EQ(over.headers[0].first, "Retry-After");
  EXPECT_EQ(entered, 3);
  EXPECT_EQ(Call(a.raw_key, "GET", "/v1/quick").status, 200);  // not a pool route: not counted
  // Other keys are not held back by a's: another tenant, and an admin (not limited).
  holders.emplace_back([&] { statuses[3] = Call(b.raw_key, "GET", "/v1/hold").status; });
  holders.emplace_back([&] { statuses[4] = Call(kAdmin, "GET", "/v1/hold").status; });
  EXPECT_TRUE(wait_entered(5));
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& t : holders) t.join();
  EXPECT_EQ(statuses, std::vector<int>(5, 200));
  // Finished requests gave their places back.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Call(a.raw_key, "GET", "/v1/hold").status, 200);
}

TEST_F(AuthLayerTest, TenancyRotationQuotaAuditAndMetrics) {
  auto a = Key({"exec"}, /*max_sandboxes=*/1);
  auto b = Key({"exec"});
  HttpResponse created = Call(a.raw_key, "POST", "/v1/sandboxes", "{}");
  ASSERT_EQ(created.status, 201) << created.body;
  std::string id(json::parse(created.body).at("id").as_string());
  EXPECT_EQ(Call(a.raw_key, "POST", "/v1/sandboxes", "{}").status, 429);

  EXPECT_EQ(Call(b.raw_key, "GET", "/v1/sandboxes/" + id).status, 404);
  EXPECT_EQ(Call(b.raw_key, "DELETE", "/v1/sandboxes/" + id).status, 404);
  EXPECT_EQ(Call(b.raw_key, "GET", "/v1/sandboxes/" + id + "/events").status, 404);
  EXPECT_EQ(
      json::parse(Call(b.raw_key, "GET", "/v1/sandboxes").body).at("sandboxes").as_array().size(),
      0u);
  EXPECT_EQ(
      json::parse(Call(kAdmin, "GET", "/v1/sandboxes").body).at("sandboxes").as_array().size(), 1u);

  HttpResponse rotated = Call(kAdmin, "POST", "/v1/keys/" + a.record.id + "/rotate");
  ASSERT_EQ(rotated.status, 201) << rotated.body;
  std::string a2(json::parse(rotated.body).at("key").as_string());
  EXPECT_EQ(Call(a.raw_key, "GET", "/v1/sandboxes/" + id).status, 401);
  EXPECT_EQ(Call(a2, "GET", "/v1/sandboxes/" + id).status, 200);

  HttpResponse events = Call(a2, "GET", "/v1/sandboxes/" + id + "/events");
  ASSERT_EQ(events.status, 200) << events.body;
  json::value parsed = json::parse(events.body);
  const json::array& ev = parsed.at("events").as_array();
  ASSERT_GE(ev.size(), 1u);
  EXPECT_EQ(ev[0].at("action").as_string(), "sandbox.create");
  EXPECT_EQ(ev[0].at("key_id").as_string(), a.record.id);
  EXPECT_EQ(ev[0].at("status").as_int64(), 201);

  EXPECT_EQ(Call(a2, "DELETE", "/v1/sandboxes/" + id).status, 204);
  // The trail of a destroyed sandbox stays readable by its lineage.
  EXPECT_EQ(Call(a2, "GET", "/v1/sandboxes/" + id + "/events").status, 200);
  EXPECT_EQ(Call(b.raw_key, "GET", "/v1/sandboxes/" + id + "/events").status, 404);

  std::string text = Call(kAdmin, "GET", "/metrics").body;
  EXPECT_NE(text.find("asb_http_requests_total{method=\"POST\",route=\"/v1/sandboxes\","
                      "status=\"201\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("asb_auth_results_total{result=\"quota\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("asb_sandbox_creates_total{backend=\"fake\",template=\"base\","
                      "result=\"ok\"} 1\n"),
            std::string::npos);
  EXPECT_EQ(text.find(id), std::string::npos);
  EXPECT_EQ(text.find("key_"), std::string::npos);
}

TEST_F(AuthLayerTest, AnAdminsImportedSnapshotBelongsToItsLineage) {
  // An admin acts as kAnyOwner; its import stored the snapshot with no owner, outside every
  // tenant's per-owner limits.
  auto admin = Key({"exec", "admin"});
  const std::string empty_tar(1024, '\0');  // end-of-archive blocks: a valid, empty archive
  HttpResponse up = Call(admin.raw_key, "POST", "/v1/snapshots?name=up", empty_tar);
  ASSERT_EQ(up.status, 201) << up.body;
  auto mine = store::ListSnapshots(*store_, {.owner = admin.record.lineage});
  ASSERT_TRUE(mine) << mine.error().ToString();
  EXPECT_EQ(mine->size(), 1u);
  auto ownerless = store::ListSnapshots(*store_, {.owner = std::string()});
  ASSERT_TRUE(ownerless);
  EXPECT_EQ(ownerless->size(), 0u);
}

TEST_F(AuthLayerTest, RetentionPurgesOldEventsAtStart) {
  int64_t now = SystemClock::Instance().NowUnixMs();
  store::EventRecord old_event;
  old_event.time_ms = now - 31LL * 86'400'000;
  old_event.action = "exec";
  old_event.status = 200;
  old_event.result = "ok";
  store::EventRecord recent = old_event;
  recent.time_ms = now - 29LL * 86'400'000;
  ASSERT_TRUE(auth_->events().Append(old_event));
  ASSERT_TRUE(auth_->events().Append(recent));
  auth_->StartRetention();  // default 30 days; purges once at start
  for (int i = 0; i < 200 && auth_->events().List({})->size() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auth_->Stop();
  auto left = *auth_->events().List({});
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].time_ms, recent.time_ms);
}

}  // namespace
}  // namespace asb::api
