// Every resource shape the REST handlers answer, recorded for the check against api/openapi.json,
// the one definition of the REST shapes (tests/shapes/test_shapes.py). This drives
// each documented route through the auth layer and the routing table, without sockets, over the
// real SandboxManager with core's FakeBackend (whose sandboxes run the real sandboxd on the host,
// unprivileged) and an in-memory store, and asserts the statuses. With ASB_SHAPES_OUT set it
// writes one JSON line per answer ({"method","path","status","content_type","body"}), per
// stream event ({"stream": "exec"|"process"|"code", "event"}) and one with the MCP tool definitions
// ({"mcp_tools": [...]}) to that file, which the Python side validates with strict schemas.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/auth.h"
#include "api/handlers.h"
#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/testing/fake_backend.h"
#include "mcp/tools.h"
#include "store/store.h"

#ifndef ASB_TEST_SANDBOXD_PATH
#define ASB_TEST_SANDBOXD_PATH ""
#endif

namespace asb::api {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

constexpr char kAdmin[] = "asb_0123456789abcdef0123456789abcdef0123456789abcdef";

class ShapesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_api_shapes_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/templates/base/rootfs");
    fs::create_directories(dir_ + "/templates/other/rootfs");  // one to remove
    core::ManagerConfig cfg;
    cfg.data_dir = dir_;
    auto store = store::Store::Open(":memory:", SystemClock::Instance().NowUnixMs());
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
    sandboxd_ = ASB_TEST_SANDBOXD_PATH;
    backend_ = std::make_unique<core::testing::FakeBackend>(HaveSandboxd() ? sandboxd_ : "");
    templates_ = std::make_unique<core::DirTemplateCatalog>(dir_ + "/templates");
    manager_ = std::make_unique<core::SandboxManager>(cfg, *store_, *backend_,
                                                      SystemClock::Instance(), *templates_);
    ASSERT_TRUE(manager_->Start());
    ctx_.manager = manager_.get();
    ctx_.store = store_.get();
    ctx_.stream_keepalive_ms = 100;
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
    if (const char* out = std::getenv("ASB_SHAPES_OUT"); out != nullptr && *out != '\0') {
      std::ofstream f(out, std::ios::app);
      for (const auto& line : lines_) f << json::serialize(line) << "\n";
      ASSERT_TRUE(f.good()) << out;
    }
    auth_.reset();
    manager_.reset();
    backend_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  bool HaveSandboxd() const { return ::access(sandboxd_.c_str(), X_OK) == 0; }
  // sandboxd on the host drops to uid 1000 for every command and file operation, which only
  // root may do (as in handlers_test.cc, whose exec test fails otherwise).
  bool CanRunSandboxd() const { return HaveSandboxd() && ::geteuid() == 0; }

  // Dispatches `method target` with the admin key (or none) and records the answer; a stream's
  // body is drained first and recorded whole (or event by event under `stream`).
  HttpResponse Call(const std::string& method, const std::string& target, std::string body = "",
                    std::string_view stream = "", bool with_key = true) {
    HttpRequest req;
    req.method = method;
    req.target = target;
    size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string rest = target.substr(q + 1);
      for (size_t pos = 0; pos <= rest.size();) {
        size_t amp = rest.find('&', pos);
        std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
        size_t eq = kv.find('=');
        if (!kv.empty())
          req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
        if (amp == std::string::npos) break;
        pos = amp + 1;
      }
    }
    if (with_key) req.headers["authorization"] = std::string("Bearer ") + kAdmin;
    req.body = std::move(body);
    req.request_id = "req_shapes";
    HttpResponse r = router_.Dispatch(req);
    if (r.stream) {
      r.body = Drain(*r.stream);
      r.stream.reset();
    }
    json::object line;
    line["method"] = method;
    line["path"] = target;
    line["status"] = r.status;
    line["content_type"] = r.content_type;
    bool binary = r.content_type.find("json") == std::string::npos &&
                  r.content_type.find("text") == std::string::npos;
    line["body"] = binary && !r.body.empty()
                       ? std::string("<") + std::to_string(r.body.size()) + " bytes>"
                       : r.body;
    if (!stream.empty() && r.status == 200) {
      line["body"] = "";
      size_t start = 0;
      for (size_t nl; (nl = r.body.find('\n', start)) != std::string::npos; start = nl + 1) {
        json::object ev;
        ev["stream"] = stream;
        ev["event"] = json::parse(r.body.substr(start, nl - start));
        lines_.push_back(std::move(ev));
      }
    }
    lines_.push_back(std::move(line));
    return r;
  }

  static std::string Drain(StreamBody& body) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      StreamBody::Chunk c = body.Poll();
      out += c.data;
      if (c.done || c.abort || std::chrono::steady_clock::now() > deadline) break;
      if (c.data.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return out;
  }

  static json::object Obj(const HttpResponse& r) { return json::parse(r.body).as_object(); }
  static std::string Str(const json::object& o, std::string_view key) {
    return std::string(o.at(key).as_string());
  }

  std::string dir_;
  std::string sandboxd_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<core::testing::FakeBackend> backend_;
  std::unique_ptr<core::DirTemplateCatalog> templates_;
  std::unique_ptr<core::SandboxManager> manager_;
  ApiContext ctx_;
  std::unique_ptr<AuthLayer> auth_;
  Router router_;
  std::vector<json::object> lines_;
};

TEST_F(ShapesTest, ServiceAndKeys) {
  EXPECT_EQ(Call("GET", "/healthz").status, 200);
  EXPECT_EQ(Call("GET", "/health").status, 200);
  int ready = Call("GET", "/readyz").status;
  EXPECT_TRUE(ready == 200 || ready == 503) << ready;
  Call("GET", "/ready");
  EXPECT_EQ(Call("GET", "/openapi.json").status, 200);
  EXPECT_EQ(Call("GET", "/metrics").status, 200);
  EXPECT_EQ(Call("GET", "/v1/templates").status, 200);
  EXPECT_EQ(Call("GET", "/v1/backends").status, 200);
  EXPECT_EQ(Call("PUT", "/v1/pools/base", R"({"size":0})").status, 200);
  EXPECT_EQ(Call("GET", "/v1/pools").status, 200);
  EXPECT_EQ(Call("GET", "/v1/templates/base").status, 200);
  EXPECT_EQ(Call("GET", "/v1/templates/nope").status, 404);
  EXPECT_EQ(Call("GET", "/v1/sandboxes", "", "", /*with_key=*/false).status, 401);

  for (std::string base : {"/v1/keys", "/admin/keys"}) {
    HttpResponse k = Call("POST", base, R"({"name":"ci","scopes":["exec"],"expires_in":"1h"})");
    ASSERT_EQ(k.status, 201) << k.body;
    std::string id = Str(Obj(k), "id");
    EXPECT_EQ(Call("GET", base).status, 200);
    EXPECT_EQ(Call("GET", base + "/" + id).status, 200);
    EXPECT_EQ(Call("POST", base + "/" + id + "/revoke").status, 200);
    EXPECT_EQ(Call("POST", base + "/" + id + "/enable").status, 200);
    HttpResponse rot = Call("POST", base + "/" + id + "/rotate");
    ASSERT_EQ(rot.status, 201) << rot.body;
    EXPECT_EQ(Call("DELETE", base + "/" + Str(Obj(rot), "id")).status, 204);
    EXPECT_EQ(Call("GET", base + "/key_nope").status, 404);
  }
  EXPECT_EQ(Call("GET", "/v1/events?limit=5").status, 200);
  EXPECT_EQ(Call("DELETE", "/admin/templates/base").status, 409);  // the default one
  EXPECT_EQ(Call("DELETE", "/admin/templates/other").status, 204);
}

TEST_F(ShapesTest, SandboxesNetworkPreviewsAndErrors) {
  HttpResponse c = Call("POST", "/v1/sandboxes",
                        R"({"template":"base","cpus":0.5,"memory_mb":256,"env":{"A":"1"},)"
                        R"("timeout_seconds":600,"idle_timeout_seconds":300})");
  ASSERT_EQ(c.status, 201) << c.body;
  std::string id = Str(Obj(c), "id");
  EXPECT_EQ(Call("GET", "/v1/sandboxes").status, 200);
  EXPECT_EQ(Call("GET", "/v1/sandboxes/" + id).status, 200);
  EXPECT_EQ(Call("POST", "/v1/sandboxes/" + id + "/timeout", R"({"timeout_seconds":900})").status,
            200);
  EXPECT_EQ(Call("POST", "/v1/sandboxes/" + id + "/pause").status, 200);
  EXPECT_EQ(Call("POST", "/v1/sandboxes/" + id + "/resume", R"({"timeout_seconds":900})").status,
            200);
  // Without network the policy routes refuse; with it GET answers the policy (the same
  // NetworkPolicy shape PUT answers where a backend applies it).
  EXPECT_EQ(Call("GET", "/v1/sandboxes/" + id + "/network").status, 400);
  HttpResponse net = Call("POST", "/v1/sandboxes",
                          R"({"network":true,"network_policy":{"deny_out":["10.0.0.0/8"]}})");
  ASSERT_EQ(net.status, 201) << net.body;
  std::string nid = Str(Obj(net), "id");
  EXPECT_EQ(Call("GET", "/v1/sandboxes/" + nid + "/network").status, 200);
  HttpResponse np = Call("PUT", "/v1/sandboxes/" + nid + "/network",
                         R"({"allow_out":["example.com","10.1.2.0/24"],"bandwidth_kbit":1000})");
  EXPECT_EQ(np.status, 503) << np.body;  // the FakeBackend has no networking to apply it to
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + nid).status, 204);
  HttpResponse pv = Call("POST", "/v1/sandboxes/" + id + "/previews", R"({"port":8000})");
  ASSERT_EQ(pv.status, 201) << pv.body;
  EXPECT_EQ(Call("GET", "/v1/sandboxes/" + id + "/previews").status, 200);
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + id + "/previews/" + Str(Obj(pv), "id")).status, 204);
  EXPECT_EQ(Call("GET", "/v1/sandboxes/" + id + "/events").status, 200);
  // Error answers: a bad field, an unknown sandbox, an unknown route.
  EXPECT_EQ(Call("POST", "/v1/sandboxes", R"({"memory_mb":"x"})").status, 400);
  EXPECT_EQ(Call("GET", "/v1/sandboxes/sb_0123456789abcdef").status, 404);
  EXPECT_EQ(Call("GET", "/v1/nothing").status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + id).status, 204);
}

TEST_F(ShapesTest, ExecFilesProcessesSnapshots) {
  if (!HaveSandboxd()) GTEST_SKIP() << "sandboxd not built at " << sandboxd_;
  if (!CanRunSandboxd()) GTEST_SKIP() << "sandboxd on the host needs root to drop to uid 1000";
  std::string id = Str(Obj(Call("POST", "/v1/sandboxes", "{}")), "id");
  std::string sb = "/v1/sandboxes/" + id;
  EXPECT_EQ(Call("POST", sb + "/exec", R"({"command":"echo hi; echo err >&2"})").status, 200);
  EXPECT_EQ(Call("POST", sb + "/exec", R"({"argv":["printf","a"],"encoding":"base64"})").status,
            200);
  EXPECT_EQ(Call("POST", sb + "/exec/stream", R"({"command":"echo a; sleep 0.3; exit 3"})", "exec")
                .status,
            200);

  EXPECT_EQ(Call("PUT", sb + "/files?path=d/f.txt&mode=0600", "hello").status, 200);
  EXPECT_EQ(Call("GET", sb + "/files?path=d/f.txt").status, 200);
  EXPECT_EQ(Call("GET", sb + "/files/stat?path=d/f.txt").status, 200);
  EXPECT_EQ(Call("GET", sb + "/files/list?path=d&recursive=true").status, 200);
  EXPECT_EQ(Call("POST", sb + "/files/mkdir", R"({"path":"e","mode":"0700"})").status, 200);
  EXPECT_EQ(Call("POST", sb + "/files/move", R"({"from":"d/f.txt","to":"e/g.txt"})").status, 200);
  EXPECT_EQ(Call("GET", sb + "/files/watch?path=d&timeout_ms=200", "", "watch").status, 200);
  EXPECT_EQ(Call("DELETE", sb + "/files?path=e&recursive=true").status, 204);
  EXPECT_EQ(Call("GET", sb + "/files/stat?path=nope").status, 404);
  HttpResponse tar = Call("GET", sb + "/archive?path=.");
  EXPECT_EQ(tar.status, 200);
  EXPECT_EQ(Call("PUT", sb + "/archive?path=copy", tar.body).status, 200);

  HttpResponse p = Call("POST", sb + "/processes",
                        R"({"command":"cat","tag":"t","stdin":true,"pty":true,"cols":100})");
  ASSERT_EQ(p.status, 201) << p.body;
  std::string pp = sb + "/processes/" + std::to_string(Obj(p).at("pid").as_int64());
  EXPECT_EQ(Call("GET", sb + "/processes").status, 200);
  EXPECT_EQ(Call("GET", pp).status, 200);
  EXPECT_EQ(Call("POST", pp + "/stdin", R"({"data":"x\n"})").status, 200);
  EXPECT_EQ(Call("POST", pp + "/resize", R"({"cols":90,"rows":30})").status, 204);
  EXPECT_EQ(Call("POST", pp + "/close-stdin").status, 204);
  HttpResponse q = Call("POST", sb + "/processes", R"({"argv":["sleep","30"]})");
  ASSERT_EQ(q.status, 201) << q.body;
  std::string qq = sb + "/processes/" + std::to_string(Obj(q).at("pid").as_int64());
  EXPECT_EQ(Call("POST", qq + "/signal", R"({"signal":"TERM"})").status, 204);
  EXPECT_EQ(Call("GET", qq + "/stream", "", "process").status, 200);
  EXPECT_EQ(Call("DELETE", pp).status, 200);

  HttpResponse snap = Call("POST", sb + "/snapshots", R"({"name":"s1"})");
  ASSERT_EQ(snap.status, 201) << snap.body;
  std::string sid = Str(Obj(snap), "id");
  EXPECT_EQ(Call("GET", "/v1/snapshots").status, 200);
  EXPECT_EQ(Call("GET", "/v1/snapshots/" + sid).status, 200);
  EXPECT_EQ(Call("POST", sb + "/rollback", R"({"snapshot_id":")" + sid + R"("})").status, 200);
  HttpResponse fork = Call("POST", "/v1/snapshots/" + sid + "/fork", R"({"memory_mb":256})");
  ASSERT_EQ(fork.status, 201) << fork.body;
  HttpResponse zst = Call("GET", "/v1/snapshots/" + sid + "/archive");
  ASSERT_EQ(zst.status, 200);
  HttpResponse imported = Call("POST", "/v1/snapshots?name=imp&template=base", zst.body);
  EXPECT_EQ(imported.status, 201) << imported.body;
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + Str(Obj(fork), "id")).status, 204);
  HttpResponse kids = Call("POST", sb + "/fork", R"({"count":1,"timeout_seconds":60})");
  ASSERT_EQ(kids.status, 201) << kids.body;
  const json::object answer = Obj(kids);
  const json::object& child =
      answer.at("forks").as_array().at(0).as_object().at("sandbox").as_object();
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + Str(child, "id")).status, 204);
  EXPECT_EQ(Call("DELETE", "/v1/snapshots/" + sid).status, 204);
  EXPECT_EQ(Call("DELETE", sb).status, 204);
}

// Code contexts: bash runs on any sandbox (the fake's sandboxd runs on the host, where python3
// and bash are), so every code route's answer is produced here; Python's rich results are
// checked against the real kernels by tests/e2e/test_code.py.
TEST_F(ShapesTest, CodeContexts) {
  if (!HaveSandboxd()) GTEST_SKIP() << "sandboxd not built at " << sandboxd_;
  if (!CanRunSandboxd()) GTEST_SKIP() << "sandboxd on the host needs root to drop to uid 1000";
  std::string id = Str(Obj(Call("POST", "/v1/sandboxes", "{}")), "id");
  std::string sb = "/v1/sandboxes/" + id;
  HttpResponse c = Call("POST", sb + "/contexts", R"({"language":"bash","cwd":"/tmp"})");
  ASSERT_EQ(c.status, 201) << c.body;
  std::string cc = sb + "/contexts/" + Str(Obj(c), "id");
  EXPECT_EQ(Call("GET", sb + "/contexts").status, 200);
  EXPECT_EQ(Call("GET", cc).status, 200);
  std::string cid = Str(Obj(c), "id");
  HttpResponse run =
      Call("POST", sb + "/code", R"({"code":"X=1; echo $X; false","context_id":")" + cid + R"("})");
  EXPECT_EQ(run.status, 200) << run.body;
  EXPECT_EQ(Call("POST", sb + "/code/stream",
                 R"({"code":"echo a >&2; echo b","language":"bash","context_id":")" + cid + R"("})",
                 "code")
                .status,
            200);
  EXPECT_EQ(Call("POST", cc + "/interrupt").status, 204);
  EXPECT_EQ(Call("POST", cc + "/restart").status, 200);
  EXPECT_EQ(Call("DELETE", cc).status, 204);
  EXPECT_EQ(Call("GET", cc).status, 404);
  EXPECT_EQ(Call("POST", sb + "/code", R"({"code":"1","language":"cobol"})").status, 400);
  EXPECT_EQ(Call("DELETE", sb).status, 204);
}

TEST_F(ShapesTest, McpToolDefinitions) {
  json::array tools = mcp::Tools::Definitions();
  ASSERT_GT(tools.size(), 10u);
  json::object line;
  line["mcp_tools"] = tools;
  lines_.push_back(std::move(line));
}

}  // namespace
}  // namespace asb::api
