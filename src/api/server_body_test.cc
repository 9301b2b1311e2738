// ADR 0014, round 3 against the real Beast server over loopback: who may make the server hold a
// request body (a route's HeadGate runs on the head alone, before a byte of the body is read), how
// many bodies it holds at once (ServerOptions::body_budget), and the Host rules of RFC 9112 section
// 3.2. The refusals are checked with bodies that are never sent: an answer that arrives at all
// proves the server did not wait for the body.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "api/errors.h"
#include "api/server.h"

namespace asb::api {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kBudgetBytes = 4 << 20;

// A connected TCP socket to 127.0.0.1:port with a 5 s receive timeout (a test fails instead of
// hanging on a server that waits for a body).
int ConnectTo(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// MSG_NOSIGNAL: a server that answered and closed fails the send instead of raising SIGPIPE.
bool Send(int fd, const std::string& bytes) {
  return send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// The answer's head and whatever followed it until the server closed (or 5 s of silence).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  return out;
}

class BodyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteOptions gated;
    gated.file_body = true;
    gated.gate = [this](const HttpRequest& req) -> std::optional<HttpResponse> {
      ++gate_calls_;
      if (req.Header("x-test-key") == "good") return std::nullopt;
      return ErrorResponse(401, "unauthorized", "missing API key");
    };
    router_.Add(
        "PUT", "/gated",
        [this](HttpRequest& req) {
          ++handled_;
          return JsonResponse(200, std::to_string(req.body.size()));
        },
        gated);
    router_.Add("GET", "/healthz", [](HttpRequest&) { return JsonResponse(200, "{}"); });
    ServerOptions o;
    o.port = 0;
    o.max_file_body_bytes = 64 << 20;
    o.handle_signals = false;
    o.shutdown_grace_s = 2;
    budget_ = BufferBudget::Create(kBudgetBytes);
    o.body_budget = budget_;
    server_ = std::make_unique<HttpServer>(o, router_);
    ASSERT_TRUE(server_->Listen());
    thread_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }

  // Sends `bytes` on a new connection and returns the whole answer.
  std::string Exchange(const std::string& bytes) {
    int fd = ConnectTo(server_->port());
    EXPECT_TRUE(Send(fd, bytes));
    std::string out = ReadAll(fd);
    close(fd);
    return out;
  }

  static std::string Head(uint64_t length, const std::string& extra = "") {
    return "PUT /gated HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) + "\r\n" +
           extra + "\r\n";
  }

  Router router_;
  std::shared_ptr<BufferBudget> budget_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::atomic<int> gate_calls_{0};
  std::atomic<int> handled_{0};
};

TEST_F(BodyTest, AGateRefusesOnTheHeadAloneWithoutWaitingForTheBody) {
  // 50 MB announced, none sent: the answer comes at once, and nothing was leased or handled.
  const auto start = std::chrono::steady_clock::now();
  std::string answer = Exchange(Head(50'000'000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 401", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer.substr(0, 300);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(gate_calls_, 1);
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(budget_->in_use(), 0u);
  // A wrong key is refused the same way, with Expect: 100-continue not answered 100.
  answer = Exchange(Head(50'000'000, "X-Test-Key: bad\r\nExpect: 100-continue\r\n"));
  EXPECT_EQ(answer.rfind("HTTP/1.1 401", 0), 0u) << answer.substr(0, 200);
}

TEST_F(BodyTest, AGateThatAdmitsLetsTheBodyThroughAndTheLeaseIsGivenBack) {
  std::string answer =
      Exchange(Head(1000, "X-Test-Key: good\r\nConnection: close\r\n") + std::string(1000, 'x'));
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("\r\n\r\n1000"), std::string::npos) << answer;
  EXPECT_EQ(handled_, 1);
  EXPECT_EQ(budget_->in_use(), 0u);
}

TEST_F(BodyTest, ABodyPastTheBudgetIs503WithRetryAfterBeforeAByteIsRead) {
  std::string answer = Exchange(Head(kBudgetBytes + 1, "X-Test-Key: good\r\n"));
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer.substr(0, 300);
  EXPECT_NE(answer.find("\"code\":\"unavailable\""), std::string::npos) << answer;
  EXPECT_EQ(handled_, 0);
}

TEST_F(BodyTest, BodiesInFlightShareOneBudget) {
  // One client holds 3 MiB of the 4 by announcing it and sending a byte; a second asking for
  // 2 MiB is refused until the first goes away, then admitted.
  int holder = ConnectTo(server_->port());
  ASSERT_TRUE(Send(holder, Head(3 << 20, "X-Test-Key: good\r\n") + "x"));
  for (int i = 0; i < 200 && budget_->in_use() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(budget_->in_use(), 3u << 20);
  std::string refused = Exchange(Head(2 << 20, "X-Test-Key: good\r\n"));
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused.substr(0, 200);
  close(holder);
  for (int i = 0; i < 200 && budget_->in_use() != 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(budget_->in_use(), 0u);
  std::string admitted = Exchange(Head(2 << 20, "X-Test-Key: good\r\nConnection: close\r\n") +
                                  std::string(2 << 20, 'y'));
  EXPECT_EQ(admitted.rfind("HTTP/1.1 200", 0), 0u) << admitted.substr(0, 200);
}

TEST_F(BodyTest, AChunkedBodyIsLeasedAsItGrowsAndRefusedPastTheBudget) {
  int fd = ConnectTo(server_->port());
  ASSERT_TRUE(Send(fd,
                   "PUT /gated HTTP/1.1\r\nHost: x\r\nX-Test-Key: good\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'z') + "\r\n";  // 64 KiB
  for (int i = 0; i < 8 * 16; ++i) {  // 8 MiB at most, twice the budget
    if (!Send(fd, chunk)) break;      // the server answered and closed
  }
  std::string answer = ReadAll(fd);
  close(fd);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer.substr(0, 200);
  EXPECT_EQ(handled_, 0);
  for (int i = 0; i < 200 && budget_->in_use() != 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(budget_->in_use(), 0u);
}

TEST_F(BodyTest, NoRouteReadsNoBody) {
  std::string answer =
      Exchange("PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 404", 0), 0u) << answer.substr(0, 200);
  EXPECT_EQ(budget_->in_use(), 0u);
}

TEST_F(BodyTest, HostMustAppearExactlyOnceInHttp11) {
  std::string none = Exchange("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(none.rfind("HTTP/1.1 400", 0), 0u) << none;
  EXPECT_NE(none.find("Host"), std::string::npos) << none;
  std::string two =
      Exchange("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(two.rfind("HTTP/1.1 400", 0), 0u) << two;
  std::string gated_two = Exchange(
      "PUT /gated HTTP/1.1\r\nHost: a\r\nhost: b\r\nX-Test-Key: good\r\nContent-Length: 9\r\n\r\n");
  EXPECT_EQ(gated_two.rfind("HTTP/1.1 400", 0), 0u) << gated_two;
  EXPECT_EQ(handled_, 0);
  // HTTP/1.0 may leave Host out.
  std::string old = Exchange("GET /healthz HTTP/1.0\r\n\r\n");
  EXPECT_NE(old.find(" 200 "), std::string::npos) << old;
  std::string one = Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(one.rfind("HTTP/1.1 200", 0), 0u) << one;
}

}  // namespace
}  // namespace asb::api
