// The Beast server against the Beast client over loopback, with test handlers (no manager).
#include "api/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "api/http_client.h"

namespace asb::api {
namespace {

using namespace std::chrono_literals;

// Emits "a\n", "b\n", "c\n" from a producer thread, 50 ms apart, then ends.
class TickBody final : public StreamBody {
 public:
  explicit TickBody(std::atomic<bool>* cancelled, int ticks) : cancelled_(cancelled) {
    producer_ = std::thread([this, ticks] {
      for (int i = 0; i < ticks && !stop_; ++i) {
        std::this_thread::sleep_for(50ms);
        std::function<void()> n;
        {
          std::lock_guard<std::mutex> lock(mu_);
          ready_ += static_cast<char>('a' + i % 26);
          ready_ += '\n';
          n = notify_;
        }
        if (n) n();
      }
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      if (notify_) notify_();
    });
  }
  ~TickBody() override {
    stop_ = true;
    producer_.join();
  }
  Chunk Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    Chunk c;
    c.data = std::move(ready_);
    ready_.clear();
    c.done = finished_;
    return c;
  }
  void SetNotify(std::function<void()> n) override {
    std::lock_guard<std::mutex> lock(mu_);
    notify_ = std::move(n);
  }
  void Cancel() override {
    stop_ = true;
    *cancelled_ = true;
  }

 private:
  std::atomic<bool>* cancelled_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string ready_;
  bool finished_ = false;
  std::function<void()> notify_;
  std::thread producer_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteOptions fast;
    fast.blocking = false;
    router_.Add(
        "GET", "/healthz", [](HttpRequest&) { return JsonResponse(200, "{}"); }, fast);
    router_.Add("GET", "/slow", [](HttpRequest&) {
      std::this_thread::sleep_for(1500ms);
      return JsonResponse(200, "{\"slow\":true}");
    });
    router_.Add("POST", "/echo", [](HttpRequest& req) {
      HttpResponse r = JsonResponse(200, req.body);
      r.content_type = "application/octet-stream";
      return r;
    });
    RouteOptions file;
    file.file_body = true;
    router_.Add(
        "PUT", "/file",
        [](HttpRequest& req) { return JsonResponse(200, std::to_string(req.body.size())); }, file);
    router_.Add("GET", "/stream", [this](HttpRequest& req) {
      HttpResponse r;
      r.content_type = "application/x-ndjson";
      int ticks = req.Query("ticks") ? std::stoi(*req.Query("ticks")) : 3;
      r.stream = std::make_shared<TickBody>(&cancelled_, ticks);
      return r;
    });
    // Holds its pool thread for up to `ms` milliseconds, like a sync exec, and answers whether
    // the server told it that its caller had gone.
    router_.Add("POST", "/watch", [this](HttpRequest& req) {
      int ms = req.Query("ms") ? std::stoi(*req.Query("ms")) : 100;
      bool gone = false;
      for (int waited = 0; waited < ms && !gone; waited += 5) {
        std::this_thread::sleep_for(5ms);
        gone = req.client_gone && req.client_gone->load();
      }
      if (gone) ++gone_seen_;
      return JsonResponse(200, gone ? "{\"gone\":true}" : "{\"gone\":false}");
    });
    ServerOptions o;
    o.port = 0;
    o.max_json_body_bytes = 1000;
    o.max_file_body_bytes = 5000;
    o.handle_signals = false;
    o.shutdown_grace_s = 5;
    server_ = std::make_unique<HttpServer>(o, router_);
    ASSERT_TRUE(server_->Listen());
    thread_ = std::thread([this] { server_->Run(); });
    client_ = *HttpClient::Create("http://127.0.0.1:" + std::to_string(server_->port()), "");
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }

  // A connected TCP socket to the server (the caller closes it).
  int Connect() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  }

  // Reads from `fd` until `count` answers to /watch have arrived (or the peer closes).
  static std::string ReadAnswers(int fd, int count) {
    std::string out;
    char buf[4096];
    auto answers = [&out] {
      int n = 0;
      for (size_t at = out.find("\"gone\""); at != std::string::npos;
           at = out.find("\"gone\"", at + 1)) {
        ++n;
      }
      return n;
    };
    while (answers() < count) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, n);
    }
    return out;
  }

  // Sends raw bytes and returns everything the server answers until it closes.
  std::string Raw(const std::string& bytes) {
    int fd = Connect();
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, n);
    }
    close(fd);
    return out;
  }

  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::optional<HttpClient> client_;
  std::atomic<bool> cancelled_{false};
  std::atomic<int> gone_seen_{0};
};

TEST_F(ServerTest, AnswersAndEchoesRequestIds) {
  auto r = client_->Request("GET", "/healthz");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{}");
  EXPECT_EQ(r->headers["x-request-id"].rfind("req_", 0), 0u);
  std::string raw =
      Raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc-123\r\n"
          "Connection: close\r\n\r\n");
  EXPECT_NE(raw.find("X-Request-Id: abc-123"), std::string::npos) << raw;
}

TEST_F(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  std::string raw =
      Raw("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
          "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
          "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(raw.find("HTTP/1.1 200"), std::string::npos);
  EXPECT_NE(raw.find("abc"), std::string::npos);
  EXPECT_NE(raw.find("HTTP/1.1 404"), std::string::npos) << raw;
}

TEST_F(ServerTest, LimitsAnswerInTheErrorShape) {
  auto big = client_->Request("POST", "/echo", std::string(2000, 'x'));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(big->error_code, "payload_too_large");
  auto file_ok = client_->Request("PUT", "/file", std::string(4000, 'x'));
  ASSERT_TRUE(file_ok);
  EXPECT_EQ(file_ok->status, 200);
  EXPECT_EQ(file_ok->body, "4000");
  auto file_big = client_->Request("PUT", "/file", std::string(6000, 'x'));
  ASSERT_TRUE(file_big);
  EXPECT_EQ(file_big->status, 413);
  std::string raw =
      Raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_NE(raw.find("HTTP/1.1 431"), std::string::npos) << raw.substr(0, 200);
  auto m = client_->Request("DELETE", "/healthz");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 405);
  EXPECT_EQ(m->error_code, "method_not_allowed");
  EXPECT_EQ(m->headers["allow"], "GET");
  std::string garbage = Raw("BLAH\r\n\r\n");
  EXPECT_NE(garbage.find("HTTP/1.1 400"), std::string::npos) << garbage;
}

TEST_F(ServerTest, ASlowHandlerDoesNotBlockOthers) {
  auto slow = std::async(std::launch::async, [this] { return client_->Request("GET", "/slow"); });
  std::this_thread::sleep_for(100ms);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    auto r = client_->Request("GET", "/healthz");
    ASSERT_TRUE(r);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);
  auto s = slow.get();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->body, "{\"slow\":true}");
}

TEST_F(ServerTest, StreamsChunksAsTheyComeAndCancelsWhenTheClientLeaves) {
  std::vector<std::string> pieces;
  auto r = client_->Stream("GET", "/stream", "", "", [&](std::string_view d) {
    pieces.emplace_back(d);
    return true;
  });
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->headers["content-type"], "application/x-ndjson");
  std::string all;
  for (auto& p : pieces) all += p;
  EXPECT_EQ(all, "a\nb\nc\n");
  EXPECT_GE(pieces.size(), 2u);  // not one buffered blob
  EXPECT_FALSE(cancelled_);
  // Leave after the first piece of a long stream: the body is cancelled.
  auto r2 =
      client_->Stream("GET", "/stream?ticks=100", "", "", [&](std::string_view) { return false; });
  ASSERT_TRUE(r2);
  for (int i = 0; i < 50 && !cancelled_; ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(cancelled_);
}

TEST_F(ServerTest, ABlockingHandlerLearnsThatItsCallerClosedTheConnection) {
  int fd = Connect();
  std::string req = "POST /watch?ms=3000 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::this_thread::sleep_for(100ms);
  close(fd);
  for (int i = 0; i < 200 && gone_seen_ == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(gone_seen_, 1);
}

// Readiness of the socket is not a close: the request's own bytes (headers and body in separate
// segments, as many clients send them), or a pipelined next request, must not make a waiting
// caller count as gone. Under ASan's timing the old check (readable with nothing buffered)
// cancelled sync execs whose callers were still waiting.
TEST_F(ServerTest, AWaitingCallerIsNeverTakenForGone) {
  const std::string head =
      "POST /watch?ms=40 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n";
  constexpr int kConnections = 4;
  constexpr int kRequestsEach = 25;
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  for (int c = 0; c < kConnections; ++c) {
    clients.emplace_back([&, c] {
      int fd = Connect();
      for (int i = 0; i < kRequestsEach; ++i) {
        // Alternate: headers and body apart (with and without a pause), and all at once.
        if ((i + c) % 3 == 0) {
          std::string all = head + "{}";
          EXPECT_EQ(write(fd, all.data(), all.size()), static_cast<ssize_t>(all.size()));
        } else {
          EXPECT_EQ(write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
          if ((i + c) % 3 == 1) std::this_thread::sleep_for(2ms);
          EXPECT_EQ(write(fd, "{}", 2), 2);
        }
        std::string out = ReadAnswers(fd, 1);
        EXPECT_NE(out.find("{\"gone\":false}"), std::string::npos) << out;
        if (out.find("{\"gone\":false}") != std::string::npos) ++answered;
      }
      // Two requests at once: the second waits in the socket while the first runs.
      std::string two = head + "{}" + head + "{}";
      EXPECT_EQ(write(fd, two.data(), two.size()), static_cast<ssize_t>(two.size()));
      std::string out = ReadAnswers(fd, 2);
      EXPECT_EQ(out.find("{\"gone\":true}"), std::string::npos) << out;
      close(fd);
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered, kConnections * kRequestsEach);
  EXPECT_EQ(gone_seen_, 0);
}

// CPU time of this process (all threads), microseconds.
int64_t ProcessCpuUs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000LL + u.ru_utime.tv_usec +
         u.ru_stime.tv_usec;
}

TEST_F(ServerTest, RunningOutOfDescriptorsPausesTheAcceptLoopInsteadOfSpinning) {
  // A client may hold connections until the server's RLIMIT_NOFILE is used up (no key needed).
  // A failed accept used to be retried at once, forever: the pending connection keeps the
  // listener readable, so the server spun a core and logged ~300,000 warnings a second (the
  // breaker saw serve.log grow by 190 MB in 10 s). Here the descriptors run out in this
  // process, the server's own, with one connection pending.
#if defined(__SANITIZE_ADDRESS__)
  // The sanitizer runtimes need descriptors too: UBSan's vptr check tests memory by writing it
  // to a pipe, so with none left it reports a valid object as "invalid vptr" and halts.
  GTEST_SKIP() << "exhausting the process's descriptors starves the sanitizer runtime";
#endif
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  ASSERT_FALSE(filler.empty());
  close(filler.back());  // exactly one free descriptor: the client's socket takes it
  filler.pop_back();
  int client = Connect();  // completes in the listen backlog; the server's accept has no fd
  std::this_thread::sleep_for(200ms);
  int64_t cpu0 = ProcessCpuUs();
  std::this_thread::sleep_for(500ms);
  int64_t spent = ProcessCpuUs() - cpu0;
  for (int fd : filler) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_LT(spent, 100'000) << "the accept loop burned " << spent << " us of CPU in 500 ms";
  // With descriptors back, the pending connection is accepted and answered.
  std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(client, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(client, buf, sizeof buf)) > 0;) out.append(buf, n);
  close(client);
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
}

TEST(ServerLimitsTest, ConnectionsOverTheCapAreAnswered503AndClosed) {
  Router router;
  router.Add("GET", "/healthz", [](HttpRequest&) { return JsonResponse(200, "{}"); });
  ServerOptions o;
  o.port = 0;
  o.handle_signals = false;
  o.max_connections = 3;
  o.reserved_connections = 0;  // this test is about the total; see server_limits_test.cc
  HttpServer server(o, router);
  ASSERT_TRUE(server.Listen());
  std::thread runner([&] { server.Run(); });
  auto connect_one = [&] {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(server.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  };
  auto ask = [](int fd) {  // one keep-alive request; the answer's status line
    const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return std::string();
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf);
    return n > 0 ? std::string(buf, n) : std::string();
  };
  std::vector<int> held;
  for (int i = 0; i < 3; ++i) {  // exactly at the cap: served, and kept open
    held.push_back(connect_one());
    EXPECT_EQ(ask(held.back()).rfind("HTTP/1.1 200", 0), 0u) << i;
  }
  int over = connect_one();  // one over: a 503 in the error shape, then closed
  std::string answer;
  char buf[1024];
  for (ssize_t n; (n = read(over, buf, sizeof buf)) > 0;) answer.append(buf, n);
  close(over);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos);
  EXPECT_NE(answer.find("{\"error\":{\"code\":\"unavailable\""), std::string::npos);
  close(held.back());  // a place comes free once a connection closes
  held.pop_back();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    int fd = connect_one();
    served = ask(fd).rfind("HTTP/1.1 200", 0) == 0;
    close(fd);
    if (!served) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served);
  for (int fd : held) close(fd);
  server.Stop();
  runner.join();
}

TEST_F(ServerTest, StopWaitsForInFlightRequests) {
  auto slow = std::async(std::launch::async, [this] { return client_->Request("GET", "/slow"); });
  std::this_thread::sleep_for(200ms);
  server_->Stop();
  auto s = slow.get();
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(s->status, 200);
  thread_.join();
  EXPECT_FALSE(client_->Request("GET", "/healthz"));  // no longer listening
}

}  // namespace
}  // namespace asb::api
