// ADR 0014 against the real Beast server over loopback: what a client with no
// key can do to the log (forge lines, grow it by its own length) and to the connection table
// (hold every place with slow, never-finished requests). Each test failed before the fix.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/server.h"
#include "common/log.h"

namespace asb::api {
namespace {

using namespace std::chrono_literals;

// A connected TCP socket from `source` (any 127/8 address: Linux routes all of them to lo) to
// 127.0.0.1:port, with a 5 s receive timeout so that a test fails instead of hanging.
int ConnectFrom(const char* source, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  inet_pton(AF_INET, source, &src.sin_addr);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof(src)), 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

bool Send(int fd, const std::string& bytes) {
  return write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
}

// Everything the server sends until it closes (or 5 s of silence).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  return out;
}

// One answer on a keep-alive connection (reads until the body of a short answer is in).
std::string ReadAnswer(int fd) {
  std::string out;
  char buf[4096];
  while (out.find("\r\n\r\n") == std::string::npos || out.back() != '}') {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, n);
  }
  return out;
}

// A server on a free port, with handlers that need no manager: /healthz, /v1/sandboxes/{id}
// (answers 404 like a missing sandbox) and /auth, which plays the auth layer: a request with
// "X-Test-Key: good" is authenticated (key_id set).
class LimitsServer {
 public:
  explicit LimitsServer(ServerOptions o) {
    router_.Add("GET", "/healthz", [](HttpRequest&) { return JsonResponse(200, "{}"); });
    router_.Add("GET", "/v1/sandboxes/{id}", [](HttpRequest& req) {
      HttpResponse r = JsonResponse(404, "{}");
      r.sandbox_id = req.Param("id");
      return r;
    });
    router_.Add("GET", "/auth", [](HttpRequest& req) {
      if (req.Header("x-test-key") == "good") req.key_id = "key_test";
      return JsonResponse(200, "{}");
    });
    o.port = 0;
    o.handle_signals = false;
    o.shutdown_grace_s = 1;
    server_ = std::make_unique<HttpServer>(o, router_);
    EXPECT_TRUE(server_->Listen());
    thread_ = std::thread([this] { server_->Run(); });
  }
  ~LimitsServer() {
    server_->Stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }

 private:
  Router router_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// Captures the default logger's lines, in the product's text format, while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    auto logger = std::make_shared<spdlog::logger>("capture", sink);
    logger->set_formatter(MakeTextLogFormatter());
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string Text() {
    spdlog::default_logger()->flush();
    return out_.str();
  }
  std::vector<std::string> Lines() {
    std::vector<std::string> lines;
    std::istringstream in(Text());
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream out_;
};

// A log line of ours starts with its timestamp and level.
bool IsOwnLine(const std::string& line) {
  int y, mo, d, h, mi, s, ms;
  char level[16];
  return std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ %15s", &y, &mo, &d, &h, &mi, &s,
                     &ms, level) == 8;
}

// Sends one request and waits until the server has logged its "http out" line.
std::string Ask(uint16_t port, const std::string& target, LogCapture& log, size_t outs) {
  int fd = ConnectFrom("127.0.0.1", port);
  EXPECT_TRUE(Send(fd, "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string answer = ReadAll(fd);
  close(fd);
  for (int i = 0; i < 200; ++i) {
    size_t n = 0;
    for (const std::string& l : log.Lines()) n += l.find("http out") != std::string::npos;
    if (n >= outs) break;
    std::this_thread::sleep_for(10ms);
  }
  return answer;
}

TEST(LogFieldTest, EscapesEverythingButPrintableAsciiAndCutsWithAMarker) {
  EXPECT_EQ(LogField(""), "-");
  EXPECT_EQ(LogField("sb_0123abcd"), "sb_0123abcd");
  EXPECT_EQ(LogField("a b\n\"c\\\x1b\xc3\xa9"), "a\\x20b\\x0a\\x22c\\x5c\\x1b\\xc3\\xa9");
  // Cut at the bound, never inside an escape, and the cut is marked with the full length.
  EXPECT_EQ(LogField("abcdefgh", 4), "abcd...(8 bytes)");
  EXPECT_EQ(LogField("ab\ncd", 4), "ab...(5 bytes)");
  // The message-level pass keeps UTF-8 text and leaves LogField output as it is.
  EXPECT_EQ(LogSafeMessage("caf\xc3\xa9 \x01\x7f\xc2\x85\xed\xa0\x80"),
            "caf\xc3\xa9 \\x01\\x7f\\xc2\\x85\\xed\\xa0\\x80");
  std::string field = LogField(std::string(1000, '\n'));
  EXPECT_EQ(LogSafeMessage(field), field);
  EXPECT_LE(field.size(), kLogFieldMax + 24);
}

TEST(ServerLogTest, RequestTextIsEscapedAndCannotForgeALine) {
  ServerOptions o;
  LimitsServer server(o);
  LogCapture log;
  const std::string forged = "%0a2026-01-01T00:00:00.000Z%20info%20http%20out%20key_id=key_admin";
  // A path parameter (the sandbox id), an unmatched route, terminal escapes and quotes.
  Ask(server.port(), "/v1/sandboxes/x" + forged, log, 1);
  Ask(server.port(), "/nothing" + forged, log, 2);
  Ask(server.port(), "/v1/sandboxes/%1b%5b2J%1b%5d0%3bpwned%07%22q%22%5c", log, 3);
  Ask(server.port(), "/v1/sandboxes/%ff%c0%af%c2%9b", log, 4);  // not UTF-8; a C1 control
  std::vector<std::string> lines;
  for (const std::string& l : log.Lines()) {
    if (l.find("http ") != std::string::npos) lines.push_back(l);
  }
  // "http in" and "http out" per request, and not one forged line more.
  ASSERT_EQ(lines.size(), 8u) << log.Text();
  for (const std::string& l : log.Lines()) {
    EXPECT_TRUE(IsOwnLine(l)) << l;
    EXPECT_EQ(l.find('\x1b'), std::string::npos) << l;
    EXPECT_EQ(l.find('\x07'), std::string::npos) << l;
    EXPECT_EQ(l.find('"'), std::string::npos) << l;
    EXPECT_EQ(l.find("\xff"), std::string::npos) << l;
    EXPECT_EQ(l.find("\xc2\x9b"), std::string::npos) << l;
    // The forged words stay inside one escaped word: no field of their own.
    EXPECT_EQ(l.find(" key_id=key_admin"), std::string::npos) << l;
  }
  std::string text = log.Text();
  EXPECT_NE(text.find("sandbox_id=x\\x0a2026-01-01T00:00:00.000Z\\x20info"), std::string::npos)
      << text;
  EXPECT_NE(text.find("route=/nothing\\x0a2026"), std::string::npos) << text;
  EXPECT_NE(text.find("\\x1b[2J\\x1b]0;pwned\\x07\\x22q\\x22\\x5c"), std::string::npos) << text;
  EXPECT_NE(text.find("\\xff\\xc0\\xaf\\xc2\\x9b"), std::string::npos) << text;
}

TEST(ServerLogTest, ALongHostilePathAddsABoundedNumberOfLogBytes) {
  ServerOptions o;
  o.max_header_bytes = 256 * 1024;  // so that a 100 KB request line is served, not 431
  LimitsServer server(o);
  LogCapture log;
  const std::string id(100 * 1024, 'a');
  const std::string request =
      "GET /v1/sandboxes/" + id + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  Ask(server.port(), "/v1/sandboxes/" + id, log, 1);
  Ask(server.port(), "/nothing/" + id, log, 2);
  std::string text = log.Text();
  double per_request_byte = static_cast<double>(text.size()) / (2.0 * request.size());
  std::printf("log bytes per request byte for a 100 KB path: %.4f (%zu log bytes)\n",
              per_request_byte, text.size());
  EXPECT_LT(text.size(), 2 * 1024u) << "two requests of 100 KB each";
  EXPECT_NE(text.find("...(102400 bytes)"), std::string::npos) << text;  // the cut is marked
}

TEST(ServerConnectionLimitsTest, OneAddressCannotHoldMoreThanItsShare) {
  ServerOptions o;
  o.max_connections = 64;
  o.max_connections_per_ip = 4;
  o.reserved_connections = 0;
  LimitsServer server(o);
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {  // at the per-address limit: accepted and held
    slow.push_back(ConnectFrom("127.0.0.2", server.port()));
    ASSERT_TRUE(Send(slow.back(), "GET /heal"));
  }
  std::this_thread::sleep_for(100ms);
  int over = ConnectFrom("127.0.0.2", server.port());  // one over: 503 in the error shape
  std::string answer = ReadAll(over);
  close(over);
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  EXPECT_NE(answer.find("{\"error\":{\"code\":\"unavailable\""), std::string::npos) << answer;
  // Another client is served meanwhile.
  int other = ConnectFrom("127.0.0.1", server.port());
  ASSERT_TRUE(Send(other, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(ReadAll(other).rfind("HTTP/1.1 200", 0), 0u);
  close(other);
  // A place of that address comes free once one of its connections closes.
  close(slow.back());
  slow.pop_back();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    int fd = ConnectFrom("127.0.0.2", server.port());
    Send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    served = ReadAll(fd).rfind("HTTP/1.1 200", 0) == 0;
    close(fd);
    if (!served) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(served);
  for (int fd : slow) close(fd);
}

TEST(ServerConnectionLimitsTest, AHeadDrippedLinePerSecondIsCutAtItsDeadline) {
  ServerOptions o;
  o.head_timeout_s = 2;  // idle_timeout_s stays 120: the gap between lines never trips it
  LimitsServer server(o);
  int fd = ConnectFrom("127.0.0.1", server.port());
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Send(fd, "GET /healthz HTTP/1.1\r\n"));
  bool closed = false;
  for (int i = 0; i < 6 && !closed; ++i) {
    std::this_thread::sleep_for(1s);
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    if (!closed) Send(fd, "X-Drip-" + std::to_string(i) + ": 1\r\n");
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  EXPECT_TRUE(closed) << "still open after " << s << " s of dripped header lines";
  EXPECT_LT(s, 4.5);
}

TEST(ServerConnectionLimitsTest, ClientsWithAKeyKeepTheReservedPlaces) {
  ServerOptions o;
  o.max_connections = 6;
  o.reserved_connections = 2;
  o.max_connections_per_ip = 0;
  LimitsServer server(o);
  std::vector<int> slow;
  for (int i = 0; i < 4; ++i) {  // every place open to connections without a key
    slow.push_back(ConnectFrom("127.0.0.2", server.port()));
    ASSERT_TRUE(Send(slow.back(), "GET /heal"));
  }
  std::this_thread::sleep_for(100ms);
  // A client with a valid key gets a reserved place and keeps it across requests.
  int keyed = ConnectFrom("127.0.0.1", server.port());
  const std::string with_key = "GET /auth HTTP/1.1\r\nHost: x\r\nX-Test-Key: good\r\n\r\n";
  ASSERT_TRUE(Send(keyed, with_key));
  EXPECT_EQ(ReadAnswer(keyed).rfind("HTTP/1.1 200", 0), 0u);
  ASSERT_TRUE(Send(keyed, with_key));
  std::string second = ReadAnswer(keyed);
  EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
  EXPECT_EQ(second.find("Connection: close"), std::string::npos) << second;
  // A client without one is answered once in the reserve, then closed: it cannot hold it.
  int anon = ConnectFrom("127.0.0.3", server.port());
  ASSERT_TRUE(Send(anon, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string once = ReadAll(anon);  // returns when the server closes
  close(anon);
  EXPECT_EQ(once.rfind("HTTP/1.1 200", 0), 0u) << once;
  EXPECT_NE(once.find("Connection: close"), std::string::npos) << once;
  close(keyed);
  for (int fd : slow) close(fd);
}

}  // namespace
}  // namespace asb::api
