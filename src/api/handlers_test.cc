// The REST handlers driven through the routing table without sockets (ADR 0007: handlers
// are functions of the request), over the real SandboxManager with core's FakeBackend (whose
// sandboxes run the real sandboxd on the host when it has been built) and an in-memory store.
#include "api/handlers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>

#include "api/errors.h"
#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/testing/fake_backend.h"
#include "store/store.h"

#ifndef ASB_TEST_SANDBOXD_PATH
#define ASB_TEST_SANDBOXD_PATH ""
#endif

namespace asb::api {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

class HandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_api_handlers_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/templates/base/rootfs");
    core::ManagerConfig cfg;
    cfg.data_dir = dir_;
    cfg.limits.max_sandboxes = 2;
    cfg.limits.max_file_bytes = 64;
    auto store = store::Store::Open(":memory:", SystemClock::Instance().NowUnixMs());
    ASSERT_TRUE(store) << store.error().ToString();
    store_ = std::move(*store);
    sandboxd_ = ASB_TEST_SANDBOXD_PATH;
    backend_ = std::make_unique<core::testing::FakeBackend>(
        ::access(sandboxd_.c_str(), X_OK) == 0 ? sandboxd_ : "");
    templates_ = std::make_unique<core::DirTemplateCatalog>(dir_ + "/templates");
    manager_ = std::make_unique<core::SandboxManager>(cfg, *store_, *backend_,
                                                      SystemClock::Instance(), *templates_);
    ASSERT_TRUE(manager_->Start());
    ctx_.manager = manager_.get();
    ctx_.stream_keepalive_ms = 200;
    router_ = BuildRouter(ctx_);
  }

  void TearDown() override {
    manager_.reset();
    backend_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  bool HaveSandboxd() const { return ::access(sandboxd_.c_str(), X_OK) == 0; }

  HttpResponse Call(std::string method, std::string target, std::string body = "") {
    HttpRequest req;
    req.method = std::move(method);
    req.target = target;
    size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) {
      std::string rest = target.substr(q + 1);
      size_t pos = 0;
      while (pos <= rest.size()) {
        size_t amp = rest.find('&', pos);
        std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
        size_t eq = kv.find('=');
        if (!kv.empty())
          req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
        if (amp == std::string::npos) break;
        pos = amp + 1;
      }
    }
    req.body = std::move(body);
    req.request_id = "req_test";
    return router_.Dispatch(req);
  }

  static json::object Obj(const HttpResponse& r) { return json::parse(r.body).as_object(); }
  static std::string Code(const HttpResponse& r) {
    return std::string(Obj(r).at("error").at("code").as_string());
  }

  // Pulls a stream to its end the way the server does; returns the NDJSON lines.
  static std::vector<json::object> Drain(StreamBody& body) {
    std::vector<json::object> events;
    std::string buf;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      StreamBody::Chunk c = body.Poll();
      buf += c.data;
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        events.push_back(json::parse(buf.substr(0, nl)).as_object());
        buf.erase(0, nl + 1);
      }
      if (c.done || std::chrono::steady_clock::now() > deadline) break;
      if (c.data.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return events;
  }

  std::string dir_;
  std::string sandboxd_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<core::testing::FakeBackend> backend_;
  std::unique_ptr<core::DirTemplateCatalog> templates_;
  std::unique_ptr<core::SandboxManager> manager_;
  ApiContext ctx_;
  Router router_;
};

TEST_F(HandlersTest, LifecycleShapes) {
  HttpResponse c = Call("POST", "/v1/sandboxes", R"({"cpus":0.5,"memory_mb":256,"env":{"A":"1"}})");
  ASSERT_EQ(c.status, 201) << c.body;
  json::object s = Obj(c);
  std::string id(s.at("id").as_string());
  EXPECT_EQ(c.sandbox_id, id);
  EXPECT_EQ(s.at("status").as_string(), "running");
  EXPECT_EQ(s.at("cpus").as_double(), 0.5);
  EXPECT_EQ(s.at("memory_mb").as_int64(), 256);
  EXPECT_EQ(s.at("read_only_rootfs").as_bool(), true);
  EXPECT_EQ(s.at("env_keys").as_array().size(), 1u);
  EXPECT_EQ(s.at("created_at").as_string().back(), 'Z');
  EXPECT_TRUE(s.at("source_snapshot_id").is_null());

  HttpResponse list = Call("GET", "/v1/sandboxes");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(Obj(list).at("sandboxes").as_array().size(), 1u);
  // A whole number of cpus is written as an integer, never Boost.JSON's "1E0".
  HttpResponse whole = Call("POST", "/v1/sandboxes", R"({"cpus":1})");
  ASSERT_EQ(whole.status, 201) << whole.body;
  EXPECT_NE(whole.body.find("\"cpus\":1,"), std::string::npos) << whole.body;
  EXPECT_EQ(whole.body.find("E0"), std::string::npos) << whole.body;
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + std::string(Obj(whole).at("id").as_string())).status,
            204);
  HttpResponse t = Call("POST", "/v1/sandboxes/" + id + "/timeout", R"({"timeout_seconds":600})");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(Obj(t).at("timeout_seconds").as_int64(), 600);
  EXPECT_EQ(Call("POST", "/v1/sandboxes/" + id + "/timeout", "{}").status, 400);
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + id).status, 204);
  HttpResponse gone = Call("GET", "/v1/sandboxes/" + id);
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(Code(gone), "not_found");
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + id).status, 404);
}

TEST_F(HandlersTest, ValidationAndQuotaErrors) {
  HttpResponse r = Call("POST", "/v1/sandboxes", R"({"memory_mb":"x"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("memory_mb"), std::string::npos);
  r = Call("POST", "/v1/sandboxes", R"({"surprise":1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("surprise"), std::string::npos);
  EXPECT_EQ(Call("POST", "/v1/sandboxes", "{oops").status, 400);
  EXPECT_EQ(Call("POST", "/v1/sandboxes", R"({"memory_mb":8})").status, 400);
  EXPECT_EQ(Call("GET", "/v1/sandboxes/../../etc").status, 404);
  EXPECT_EQ(Call("GET", "/v1/sandboxes/sb_zz").status, 404);
  // Seed B's create fields (ADR 0007): image names a template, read_only_rootfs can only be
  // true here; refused ones make nothing.
  r = Call("POST", "/v1/sandboxes", R"({"image":"base","template":"other"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("template and image"), std::string::npos) << r.body;
  r = Call("POST", "/v1/sandboxes", R"({"read_only_rootfs":false})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("read_only_rootfs: false is not supported"), std::string::npos) << r.body;
  r = Call("POST", "/v1/sandboxes", R"({"image":"base","read_only_rootfs":true})");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Obj(r).at("image").as_string(), "base");
  EXPECT_EQ(Obj(r).at("template").as_string(), "base");
  ASSERT_EQ(Call("DELETE", "/v1/sandboxes/" + std::string(Obj(r).at("id").as_string())).status,
            204);
  ASSERT_EQ(Call("POST", "/v1/sandboxes", "").status, 201);
  ASSERT_EQ(Call("POST", "/v1/sandboxes", "").status, 201);
  HttpResponse full = Call("POST", "/v1/sandboxes", "{}");
  EXPECT_EQ(full.status, 429);
  EXPECT_EQ(Code(full), "limit_exceeded");
}

TEST_F(HandlersTest, BackendFailureIs502AndLeavesADeletableRecord) {
  backend_->FailNextCreate(Error::Backend("mount failed"), /*leave_resources=*/true);
  HttpResponse r = Call("POST", "/v1/sandboxes", "{}");
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(Code(r), "backend_error");
  json::array list = Obj(Call("GET", "/v1/sandboxes")).at("sandboxes").as_array();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].at("status").as_string(), "error");
  std::string id(list[0].at("id").as_string());
  EXPECT_EQ(Call("DELETE", "/v1/sandboxes/" + id).status, 204);
}

// ADR 0016: what a failed host call says never picks the client's status nor reaches
// it: a host EBUSY is no 409, a full host disk no 429 "limit exceeded", a host EPERM no 403.
TEST_F(HandlersTest, HostFailuresAre502WithoutHostText) {
  struct Case {
    int err;
    const char* errno_text;
  };
  for (Case c : {Case{EBUSY, "Device or resource busy"}, Case{ENOSPC, "No space left on device"},
                 Case{EPERM, "Operation not permitted"}}) {
    backend_->FailNextCreate(
        Error::FromErrno(c.err, "mount /var/lib/agent-sandbox/run/x/ws uid 100000")
            .WithContext("workspace of /var/lib/agent-sandbox/run/x"));
    HttpResponse r = Call("POST", "/v1/sandboxes", "{}");
    EXPECT_EQ(r.status, 502) << c.errno_text << ": " << r.body;
    EXPECT_EQ(Code(r), "backend_error");
    EXPECT_EQ(r.body.find("/var/lib"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("100000"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find(c.errno_text), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("a host operation failed"), std::string::npos) << r.body;
  }
  // Errors about paths inside the sandbox (sandboxd's, decoded from its wire) keep their code.
  ClientError inside =
      ForClient(Error(ErrorCode::kNotFound, "open /workspace/x: No such file or directory", 2));
  EXPECT_EQ(inside.code, ErrorCode::kNotFound);
  EXPECT_EQ(inside.message, "open /workspace/x: No such file or directory");
  // Told otherwise by the code that knows: FromErrno(kUnavailable, ...) stays 503.
  EXPECT_EQ(ForClient(Error::FromErrno(ErrorCode::kUnavailable, ECONNREFUSED, "connect")).code,
            ErrorCode::kUnavailable);
  ClientError internal = ForClient(Error::Internal("bug at /srv/x"), "req_1");
  EXPECT_EQ(internal.message, "internal error (request id req_1)");
}

TEST_F(HandlersTest, ExecSyncStreamAndFiles) {
  if (!HaveSandboxd()) GTEST_SKIP() << "sandboxd not built at " << sandboxd_;
  std::string id(Obj(Call("POST", "/v1/sandboxes", "{}")).at("id").as_string());
  HttpResponse e = Call("POST", "/v1/sandboxes/" + id + "/exec",
                        R"({"command":"printf 'a\\377'; echo err >&2; exit 4"})");
  ASSERT_EQ(e.status, 200) << e.body;
  json::object r = Obj(e);
  EXPECT_EQ(r.at("stdout").as_string(), "a\xEF\xBF\xBD");
  EXPECT_EQ(r.at("stderr").as_string(), "err\n");
  EXPECT_EQ(r.at("exit_code").as_int64(), 4);
  EXPECT_EQ(Call("POST", "/v1/sandboxes/" + id + "/exec", R"({"argv":[]})").status, 400);

  HttpResponse s = Call("POST", "/v1/sandboxes/" + id + "/exec/stream",
                        R"({"command":"printf '\\342\\202'; sleep 0.4; printf '\\254'; exit 2"})");
  ASSERT_EQ(s.status, 200) << s.body;
  ASSERT_TRUE(s.stream);
  EXPECT_EQ(s.content_type, "application/x-ndjson");
  std::vector<json::object> events = Drain(*s.stream);
  ASSERT_FALSE(events.empty());
  std::string out;
  int keepalives = 0;
  for (const auto& ev : events) {
    if (ev.at("type") == "stdout") out += std::string(ev.at("data").as_string());
    if (ev.at("type") == "keepalive") ++keepalives;
  }
  EXPECT_EQ(out, "\xE2\x82\xAC");
  EXPECT_GE(keepalives, 1);  // 200 ms keepalive interval, 400 ms of quiet
  EXPECT_EQ(events.back().at("type"), "exit");
  EXPECT_EQ(events.back().at("exit_code").as_int64(), 2);

  HttpResponse put = Call("PUT", "/v1/sandboxes/" + id + "/files?path=d/f.txt&mode=600", "");
  EXPECT_EQ(put.status, 200) << put.body;
  HttpResponse too_big =
      Call("PUT", "/v1/sandboxes/" + id + "/files?path=big", std::string(65, 'x'));
  EXPECT_EQ(too_big.status, 413) << too_big.body;
  EXPECT_EQ(Call("PUT", "/v1/sandboxes/" + id + "/files?path=x&mode=999", "").status, 400);
  EXPECT_EQ(Call("PUT", "/v1/sandboxes/" + id + "/files", "").status, 400);
  HttpResponse get = Call("GET", "/v1/sandboxes/" + id + "/files?path=d/f.txt");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.content_type, "application/octet-stream");
  HttpResponse st = Call("GET", "/v1/sandboxes/" + id + "/files/stat?path=d/f.txt");
  ASSERT_EQ(st.status, 200) << st.body;
  EXPECT_EQ(Obj(st).at("mode").as_string(), "0600");
}

}  // namespace
}  // namespace asb::api
