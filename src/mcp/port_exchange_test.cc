// ExchangeOverSocket against a scripted HTTP peer on a real socketpair: the request the proxy
// would send, answers with a length, chunked or until EOF, the body limit at its boundary,
// Location prefixing, a peer that is not HTTP, and the deadline.
#include "mcp/port_exchange.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

namespace asb::mcp {
namespace {

// The far end of a socketpair, on a thread: reads the request head (and what came with it),
// waits `delay_ms`, writes `answer`, then closes (with `keep_open`, once the exchange closed).
class Peer {
 public:
  explicit Peer(std::string answer, bool keep_open = false, int delay_ms = 0) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    near_ = UniqueFd(sv[0]);
    thread_ = std::thread([this, fd = sv[1], answer = std::move(answer), keep_open, delay_ms] {
      char buf[65536];
      // The whole request, its Content-Length body included: answering and closing before
      // the body arrived made the client's write of it fail (flaky under load).
      for (;;) {
        size_t head = request_.find("\r\n\r\n");
        if (head != std::string::npos) {
          size_t want = 0;
          size_t cl = request_.find("Content-Length: ");
          if (cl != std::string::npos && cl < head) want = std::stoul(request_.substr(cl + 16));
          if (request_.size() >= head + 4 + want) break;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        request_.append(buf, static_cast<size_t>(n));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      size_t off = 0;
      while (off < answer.size()) {
        ssize_t n = write(fd, answer.data() + off, answer.size() - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      if (keep_open) {
        while (read(fd, buf, sizeof buf) > 0) {
        }
      }
      close(fd);
    });
  }
  ~Peer() {
    if (thread_.joinable()) thread_.join();
  }
  UniqueFd TakeFd() { return std::move(near_); }
  std::string Request() {
    thread_.join();
    return request_;
  }

 private:
  UniqueFd near_;
  std::string request_;
  std::thread thread_;
};

PortRequest Get(uint64_t max_body = 1024) {
  PortRequest r;
  r.port = 8000;
  r.path = "/a?b=1";
  r.timeout_ms = 5000;
  r.max_body_bytes = max_body;
  return r;
}

TEST(PortExchangeTest, SendsTheProxysRequestAndReadsALengthAnswer) {
  Peer peer("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
  PortRequest req = Get();
  req.method = "POST";
  req.body = "{}";
  req.headers = {{"Content-Type", "application/json"}};
  auto r = ExchangeOverSocket(peer.TakeFd(), "sb_0123456789abcdef", req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_FALSE(r->truncated);
  EXPECT_EQ(r->headers.at(0), (std::pair<std::string, std::string>{"content-type", "text/plain"}));
  EXPECT_EQ(peer.Request(),
            "POST /a?b=1 HTTP/1.1\r\nContent-Type: application/json\r\nHost: 127.0.0.1:8000\r\n"
            "X-Forwarded-Prefix: /v1/sandboxes/sb_0123456789abcdef/ports/8000\r\n"
            "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
}

TEST(PortExchangeTest, ChunkedAndUntilEofBodiesAndLocationPrefix) {
  Peer chunked(
      "HTTP/1.1 302 Found\r\nLocation: /login\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  auto r = ExchangeOverSocket(chunked.TakeFd(), "sb_1", Get());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->body, "abcde");
  bool found = false;
  for (const auto& [k, v] : r->headers) {
    if (k == "location") {
      EXPECT_EQ(v, "/v1/sandboxes/sb_1/ports/8000/login");
      found = true;
    }
  }
  EXPECT_TRUE(found);

  Peer eof("HTTP/1.0 200 OK\r\n\r\nuntil the end");
  r = ExchangeOverSocket(eof.TakeFd(), "sb_1", Get());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body, "until the end");
}

TEST(PortExchangeTest, TheBodyLimitAtItsBoundary) {
  std::string body(1000, 'x');
  std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + body;
  Peer exact(answer);
  auto r = ExchangeOverSocket(exact.TakeFd(), "sb_1", Get(1000));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body.size(), 1000u);
  EXPECT_FALSE(r->truncated);
  Peer over(answer, /*keep_open=*/true);  // stops reading without waiting for the end
  r = ExchangeOverSocket(over.TakeFd(), "sb_1", Get(999));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->body.size(), 999u);
  EXPECT_TRUE(r->truncated);
}

TEST(PortExchangeTest, NotHttpEarlyCloseAndTheDeadlineAreErrors) {
  Peer junk("SSH-2.0-OpenSSH_9.2\r\n\r\n");
  auto r = ExchangeOverSocket(junk.TakeFd(), "sb_1", Get());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "backend_error");
  Peer early("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  r = ExchangeOverSocket(early.TakeFd(), "sb_1", Get());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "backend_error");
  Peer silent("", /*keep_open=*/false, /*delay_ms=*/1500);  // answers nothing in time
  PortRequest req = Get();
  req.timeout_ms = 300;
  auto t0 = std::chrono::steady_clock::now();
  r = ExchangeOverSocket(silent.TakeFd(), "sb_1", req);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1200));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "timeout");
}

}  // namespace
}  // namespace asb::mcp
