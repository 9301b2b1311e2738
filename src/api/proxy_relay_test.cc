// The ports proxy's exchange (api/port_proxy.h) carried on by the real server
// (api/proxy_relay.h) against real upstream HTTP servers on loopback: bodies stream both ways
// with backpressure, the whole exchange has a deadline, and relay buffers come from one budget.
#include "api/proxy_relay.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "api/port_proxy.h"
#include "api/server.h"

namespace asb::api {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kBig = 48u << 20;  // more than every kernel buffer on the way holds

int ConnectTo(uint16_t port, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  timeval tv{10, 0};  // no test waits on a socket longer than this
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads up to and including the blank line after a head.
std::string ReadHead(int fd) {
  std::string head;
  char c;
  while (head.find("\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) head += c;
  return head;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[64 * 1024];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
  return out;
}

// A tiny HTTP upstream on 127.0.0.1: each accepted connection is served by `serve` on a thread
// of its own.
class Upstream {
 public:
  explicit Upstream(std::function<void(int)> serve) : serve_(std::move(serve)) {
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listen_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = accept(listen_, nullptr, nullptr);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        conns_.emplace_back([this, c] {
          serve_(c);
          close(c);
        });
      }
    });
  }
  ~Upstream() {
    shutdown(listen_, SHUT_RDWR);
    close(listen_);
    acceptor_.join();
    for (auto& t : conns_) t.join();
  }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int)> serve_;
  int listen_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> conns_;
};

class ProxyRelayTest : public ::testing::Test {
 protected:
  // The server with the ports route of handlers_ports.cc, whose {port} is a loopback port of
  // this process instead of one inside a sandbox.
  void Start(int64_t timeout_ms = 10'000, uint64_t budget_bytes = 64u << 20) {
    options_.budget = BufferBudget::Create(budget_bytes);
    options_.budget_wait_ms = 200;
    options_.timeout_ms = timeout_ms;
    RouteOptions tail;
    tail.tail = true;
    tail.file_body = true;
    tail.stream_body = true;
    for (const char* method : {"GET", "POST", "PUT"}) {
      router_.Add(
          method, "/v1/sandboxes/{id}/ports/{port}/{path}",
          [this](HttpRequest& req) {
            HttpResponse out;
            std::shared_ptr<void> lease = LeaseProxyBuffers(options_, req.request_id, &out);
            if (!lease) return out;
            int port = std::stoi(req.Param("port"));
            auto x =
                MakeProxyExchange(UniqueFd(ConnectTo(static_cast<uint16_t>(port))), req,
                                  PathFormUpstream(req, req.Param("id"), port), port, options_);
            x->keepalive = {std::move(lease)};
            out.content_type.clear();
            out.proxy = std::move(x);
            return out;
          },
          tail);
    }
    ServerOptions o;
    o.port = 0;
    o.handle_signals = false;
    o.shutdown_grace_s = 2;
    o.max_file_body_bytes = 64u << 20;
    server_ = std::make_unique<HttpServer>(o, router_);
    ASSERT_TRUE(server_->Listen());
    thread_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string Target(const Upstream& up, std::string_view path) {
    return "/v1/sandboxes/sb_test/ports/" + std::to_string(up.port()) + std::string(path);
  }

  PortProxyOptions options_;
  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

TEST_F(ProxyRelayTest, AnswerStreamsAndASlowReaderHoldsTheUpstreamBack) {
  Start();
  std::atomic<size_t> sent{0};
  Upstream up([&](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                    std::to_string(kBig) + "\r\n\r\n");
    std::string piece(64 * 1024, 'x');
    while (sent < kBig && SendAll(fd, piece)) sent += piece.size();
  });
  int c = ConnectTo(server_->port(), 64 * 1024);
  ASSERT_TRUE(SendAll(c, "GET " + Target(up, "/big") + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string head = ReadHead(c);
  ASSERT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(kBig)), std::string::npos) << head;
  // The client reads nothing for a while: the relay must stop reading the upstream, which
  // stops once the kernel's socket buffers are full (a few MiB), far from the whole answer.
  std::this_thread::sleep_for(1500ms);
  EXPECT_LT(sent.load(), kBig / 2) << "the proxy read the upstream ahead of its client";
  EXPECT_EQ(options_.budget->in_use(), kProxyLeaseBytes);
  size_t got = 0;
  char buf[64 * 1024];
  while (got < kBig) {
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(got, kBig);
  EXPECT_EQ(sent.load(), kBig);
  close(c);
  for (int i = 0; i < 100 && options_.budget->in_use() != 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(options_.budget->in_use(), 0u);
}

TEST_F(ProxyRelayTest, RequestBodyStreamsUpWithBackpressure) {
  Start();
  std::atomic<bool> release{false};
  std::atomic<size_t> received{0};
  std::string upstream_head;
  Upstream up([&](int fd) {
    upstream_head = ReadHead(fd);
    while (!release) std::this_thread::sleep_for(10ms);
    char buf[64 * 1024];
    while (received < kBig) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      received += static_cast<size_t>(n);
    }
    std::string body = "got " + std::to_string(received.load());
    SendAll(fd, "HTTP/1.1 201 Created\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body);
  });
  int c = ConnectTo(server_->port());
  std::atomic<size_t> client_sent{0};
  std::thread writer([&] {
    SendAll(c, "PUT " + Target(up, "/upload") +
                   " HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: " +
                   std::to_string(kBig) + "\r\n\r\n");
    std::string piece(64 * 1024, 'y');
    while (client_sent < kBig && SendAll(c, piece)) client_sent += piece.size();
  });
  // The upstream reads nothing yet: the client's body must back up, not into the server.
  std::this_thread::sleep_for(1500ms);
  EXPECT_LT(client_sent.load(), kBig / 2) << "the server buffered the request body";
  release = true;
  writer.join();
  std::string answer = ReadAll(c);
  close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 201", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("got " + std::to_string(kBig)), std::string::npos) << answer;
  EXPECT_NE(upstream_head.find("Content-Length: " + std::to_string(kBig)), std::string::npos);
}

TEST_F(ProxyRelayTest, AChunkedRequestBodyIsRechunkedUpstream) {
  Start();
  std::string raw;
  Upstream up([&](int fd) {
    raw = ReadHead(fd);
    char c;
    while (raw.find("0\r\n\r\n") == std::string::npos && recv(fd, &c, 1, 0) == 1) raw += c;
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  });
  int c = ConnectTo(server_->port());
  ASSERT_TRUE(SendAll(c, "POST " + Target(up, "/c") +
                             " HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                             "Connection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  std::string answer = ReadAll(c);
  close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_NE(raw.find("Transfer-Encoding: chunked"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("Content-Length"), std::string::npos) << raw;
  EXPECT_NE(raw.find("hello"), std::string::npos) << raw;
  EXPECT_NE(raw.find(" world"), std::string::npos) << raw;
}

TEST_F(ProxyRelayTest, ADrippingUpstreamIsCutAtTheDeadline) {
  Start(/*timeout_ms=*/1500);
  Upstream up([&](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
    // One byte every 100 ms: every read is quick, the whole would take 100 s.
    for (int i = 0; i < 100 && SendAll(fd, "."); ++i) std::this_thread::sleep_for(100ms);
  });
  int c = ConnectTo(server_->port());
  auto t0 = Clock::now();
  ASSERT_TRUE(SendAll(c, "GET " + Target(up, "/drip") + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer = ReadAll(c);  // until the server closes (or 10 s without a byte)
  auto took = Clock::now() - t0;
  close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer.substr(0, 200);
  size_t body = answer.size() - (answer.find("\r\n\r\n") + 4);
  EXPECT_LT(body, 1000u) << "a cut answer must look truncated";
  EXPECT_GE(took, 1400ms);
  EXPECT_LT(took, 4s) << "the exchange outlived its deadline";
}

TEST_F(ProxyRelayTest, AnUpstreamThatNeverAnswersIs504AtTheDeadline) {
  Start(/*timeout_ms=*/1000);
  std::atomic<bool> done{false};
  Upstream up([&](int fd) {
    ReadHead(fd);
    char c;
    while (!done && recv(fd, &c, 1, 0) != 0) {  // until the proxy lets go (or 10 s)
    }
  });
  int c = ConnectTo(server_->port());
  auto t0 = Clock::now();
  ASSERT_TRUE(SendAll(c, "GET " + Target(up, "/") + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer = ReadAll(c);
  auto took = Clock::now() - t0;
  done = true;
  close(c);
  EXPECT_EQ(answer.rfind("HTTP/1.1 504", 0), 0u) << answer;
  EXPECT_NE(answer.find("{\"error\":{\"code\":\"timeout\""), std::string::npos) << answer;
  EXPECT_LT(took, 3s);
}

TEST_F(ProxyRelayTest, AFullBudgetAnswers503WithRetryAfter) {
  Start(10'000, /*budget_bytes=*/kProxyLeaseBytes);  // room for one exchange
  std::atomic<bool> release{false};
  Upstream up([&](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab");
    while (!release) std::this_thread::sleep_for(10ms);
    SendAll(fd, "cd");
  });
  int first = ConnectTo(server_->port());
  ASSERT_TRUE(SendAll(
      first, "GET " + Target(up, "/") + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  ASSERT_EQ(ReadHead(first).rfind("HTTP/1.1 200", 0), 0u);
  int second = ConnectTo(server_->port());
  ASSERT_TRUE(SendAll(
      second, "GET " + Target(up, "/") + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string refused = ReadAll(second);
  close(second);
  EXPECT_EQ(refused.rfind("HTTP/1.1 503", 0), 0u) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  EXPECT_NE(refused.find("{\"error\":{\"code\":\"unavailable\""), std::string::npos) << refused;
  release = true;
  EXPECT_EQ(ReadAll(first), "abcd");
  close(first);
  // The lease came back with the exchange: the next request is served.
  std::string again;
  for (int i = 0; i < 50; ++i) {
    int c = ConnectTo(server_->port());
    SendAll(c, "GET " + Target(up, "/") + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    again = ReadAll(c);
    close(c);
    if (again.rfind("HTTP/1.1 200", 0) == 0) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(again.rfind("HTTP/1.1 200", 0), 0u) << again;
}

TEST_F(ProxyRelayTest, HeadersAreRewrittenAndTheConnectionKeptAlive) {
  Start();
  std::mutex mu;
  std::vector<std::string> heads;
  Upstream up([&](int fd) {
    std::string h = ReadHead(fd);
    {
      std::lock_guard<std::mutex> lock(mu);
      heads.push_back(h);
    }
    SendAll(fd,
            "HTTP/1.1 302 Found\r\nLocation: /next?a=1\r\nServer: up\r\nX-App: 1\r\n"
            "Connection: close\r\n\r\n");  // close-delimited, empty body
  });
  int c = ConnectTo(server_->port());
  std::string req = "GET " + Target(up, "/a/b?x=1") +
                    " HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer secret\r\n"
                    "X-API-Key: secret\r\n\r\n";
  ASSERT_TRUE(SendAll(c, req + req));  // two on one connection
  std::string first = ReadHead(c);
  EXPECT_EQ(first.rfind("HTTP/1.1 302", 0), 0u) << first;
  const std::string prefix = "/v1/sandboxes/sb_test/ports/" + std::to_string(up.port());
  EXPECT_NE(first.find("Location: " + prefix + "/next?a=1"), std::string::npos) << first;
  EXPECT_NE(first.find("X-App: 1"), std::string::npos) << first;
  EXPECT_NE(first.find("Server: agent-sandbox"), std::string::npos) << first;
  // The chunked empty body ends with its last chunk; then the second answer follows.
  std::string rest;
  char ch;
  while (rest.find("HTTP/1.1 302") == std::string::npos && recv(c, &ch, 1, 0) == 1) rest += ch;
  EXPECT_NE(rest.find("HTTP/1.1 302"), std::string::npos) << rest;
  close(c);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(heads.empty());
  const std::string& h = heads[0];
  EXPECT_EQ(h.rfind("GET /a/b?x=1 HTTP/1.1\r\n", 0), 0u) << h;
  EXPECT_NE(h.find("Host: 127.0.0.1:" + std::to_string(up.port())), std::string::npos) << h;
  EXPECT_NE(h.find("X-Forwarded-Prefix: " + prefix), std::string::npos) << h;
  EXPECT_NE(h.find("X-Forwarded-Host: api.test"), std::string::npos) << h;
  EXPECT_EQ(h.find("secret"), std::string::npos) << h;
}

// An HTTP/1.0 app's body ends when it closes (Python's BaseHTTPRequestHandler): the answer is
// rechunked with exactly one last chunk. It once got a zero-size chunk and then the last chunk
// again, which a keep-alive client (Node's http) read as the head of a next answer.
TEST_F(ProxyRelayTest, ACloseDelimitedBodyEndsWithOneLastChunk) {
  Start();
  Upstream up([](int fd) {
    ReadHead(fd);
    SendAll(fd, "HTTP/1.0 200 OK\r\nServer: BaseHTTP\r\n\r\nhello ");
    std::this_thread::sleep_for(50ms);
    SendAll(fd, "world");
  });
  int c = ConnectTo(server_->port());
  ASSERT_TRUE(SendAll(
      c, "GET " + Target(up, "/") + " HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n"));
  std::string all = ReadAll(c);
  close(c);
  const size_t body_at = all.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos) << all;
  EXPECT_NE(all.find("Transfer-Encoding: chunked"), std::string::npos) << all;
  std::string body = all.substr(body_at + 4), data;
  // Decode the chunks; after the last one nothing may follow.
  for (;;) {
    const size_t eol = body.find("\r\n");
    ASSERT_NE(eol, std::string::npos) << body;
    const size_t n = std::stoul(body.substr(0, eol), nullptr, 16);
    if (n == 0) {
      EXPECT_EQ(body.substr(eol), "\r\n\r\n") << "after the last chunk: " << body;
      break;
    }
    data += body.substr(eol + 2, n);
    body = body.substr(eol + 2 + n + 2);
  }
  EXPECT_EQ(data, "hello world");
}

TEST_F(ProxyRelayTest, AWebSocketUpgradeBecomesAByteRelay) {
  Start(/*timeout_ms=*/500);  // the deadline covers the exchange up to the 101, not the relay
  Upstream up([&](int fd) {
    std::string h = ReadHead(fd);
    bool ok = h.find("Upgrade: websocket") != std::string::npos;
    SendAll(fd, std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                            "Connection: Upgrade\r\n\r\n") +
                    (ok ? "hello:" : "bad:"));
    char buf[1024];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) SendAll(fd, std::string_view(buf, n));
  });
  int c = ConnectTo(server_->port());
  ASSERT_TRUE(SendAll(c, "GET " + Target(up, "/ws") +
                             " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\n\r\n"));
  std::string head = ReadHead(c);
  ASSERT_EQ(head.rfind("HTTP/1.1 101", 0), 0u) << head;
  std::string got;
  char buf[64];
  while (got.size() < 6) {
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, n);
  }
  EXPECT_EQ(got, "hello:");
  std::this_thread::sleep_for(800ms);  // past the exchange's deadline: the relay lives on
  ASSERT_TRUE(SendAll(c, "ping"));
  got.clear();
  while (got.size() < 4) {
    ssize_t n = recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, n);
  }
  EXPECT_EQ(got, "ping");
  close(c);
}

TEST(BufferBudgetTest, LeasesUpToTheCapacityAndWaitsBrieflyForMore) {
  auto budget = BufferBudget::Create(100);
  auto a = budget->Acquire(60, 0);
  ASSERT_TRUE(a);
  EXPECT_EQ(budget->in_use(), 60u);
  EXPECT_FALSE(budget->Acquire(41, 50));  // over: refused after the wait
  EXPECT_FALSE(budget->Acquire(101, 0));  // never fits
  auto b = budget->Acquire(40, 0);        // exactly at the capacity
  ASSERT_TRUE(b);
  std::thread giver([&] {
    std::this_thread::sleep_for(50ms);
    a.reset();
  });
  auto c = budget->Acquire(60, 2000);  // fits once `a` is given back
  giver.join();
  EXPECT_TRUE(c);
  b.reset();
  c.reset();
  EXPECT_EQ(budget->in_use(), 0u);
}

}  // namespace
}  // namespace asb::api
