// The host client against a real in-process peer (client_test_peer.h) on a socketpair:
// handshake, channel multiplexing, flow control, connection loss and timeouts.
#include "protocol/client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "protocol/client_test_peer.h"

namespace asb::protocol {
namespace {

using testing::FakeSandboxd;
using testing::MakePair;
using testing::Pair;
using Kind = ChannelEvent::Kind;

int64_t ElapsedMs(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

/// Reads a channel to its terminal event; returns stdout bytes, and the terminal event.
std::pair<std::string, ChannelEvent> Drain(Channel& ch) {
  std::string out;
  while (true) {
    auto ev = ch.Next(10000);
    if (!ev) {
      ADD_FAILURE() << ev.error().ToString();
      return {out, ChannelEvent{}};
    }
    if (ev->kind == Kind::kData && ev->stream == Stream::kStdout) out += ev->payload;
    if (ev->terminal()) return {out, *ev};
  }
}

// ---- handshake -------------------------------------------------------------------------------

TEST(ClientHandshakeTest, AgreesOnVersionAndReportsPeer) {
  auto p = MakePair();
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->conn->version(), 1u);
  EXPECT_EQ(p->conn->peer_software(), "fake-sandboxd 1");
  EXPECT_TRUE(p->conn->alive());
  // What the host said: its range, its software string, no "version".
  EXPECT_EQ(p->fake->host_hello(),
            R"({"min_version":1,"max_version":1,"software":"agent-sandbox )" ASB_VERSION R"("})");
}

TEST(ClientHandshakeTest, PeerWithAWiderRangePicksTheHighestCommonVersion) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_hello = [](FakeSandboxd& d, const Hello& h) {
      // A newer sandboxd speaking 1..3 answers min(host max, 3), as sandboxd does.
      uint32_t v = std::min<uint32_t>(h.max_version, 3);
      d.Send(0, FrameType::kHello, Stream::kNone, EncodeHello(Hello{1, 3, v, "sandboxd 9"}));
    };
  });
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->conn->version(), kProtocolVersion);
  EXPECT_EQ(p->conn->peer_software(), "sandboxd 9");
}

TEST(ClientHandshakeTest, RefusalByErrorOnChannelZero) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_hello = [](FakeSandboxd& d, const Hello& h) {
      d.Send(0, FrameType::kError, Stream::kNone,
             EncodeWireError({"backend_error", 0,
                              "protocol: no common version: host speaks " +
                                  std::to_string(h.min_version) + ".." +
                                  std::to_string(h.max_version) + ", sandboxd speaks 5..6"}));
      d.Disconnect();
    };
  });
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kBackend);
  EXPECT_NE(p.error().message().find("no common version: host speaks 1..1"), std::string::npos)
      << p.error().message();
}

TEST(ClientHandshakeTest, VersionOutsideHostRangeIsRefused) {
  for (uint32_t v : {0u, 2u, 99u}) {
    auto p = MakePair([v](FakeSandboxd& d) {
      d.on_hello = [v](FakeSandboxd& d, const Hello&) {
        d.Send(0, FrameType::kHello, Stream::kNone, EncodeHello(Hello{v, v, v, "future"}));
      };
    });
    ASSERT_FALSE(p) << v;
    EXPECT_EQ(p.error().code(), ErrorCode::kBackend);
    EXPECT_NE(p.error().message().find("chose version " + std::to_string(v)), std::string::npos);
  }
}

TEST(ClientHandshakeTest, SilentPeerTimesOut) {
  auto start = std::chrono::steady_clock::now();
  auto p = MakePair([](FakeSandboxd& d) { d.on_hello = nullptr; }, 200);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kTimeout);
  EXPECT_GE(ElapsedMs(start), 190);
  EXPECT_LT(ElapsedMs(start), 3000);
}

TEST(ClientHandshakeTest, PeerClosingIsBackendError) {
  auto p = MakePair(
      [](FakeSandboxd& d) { d.on_hello = [](FakeSandboxd& d, const Hello&) { d.Disconnect(); }; });
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kBackend);
}

TEST(ClientHandshakeTest, WrongFirstFrameIsProtocolError) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_hello = [](FakeSandboxd& d, const Hello&) {
      d.Send(1, FrameType::kResult, Stream::kNone, "{}");
    };
  });
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code(), ErrorCode::kBackend);
  EXPECT_NE(p.error().message().find("expected HELLO"), std::string::npos);
}

TEST(ClientHandshakeTest, FramesRightBehindHelloAreNotLost) {
  // sandboxd may send a PING in the same segment as its HELLO; the reader must process it.
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_hello = [](FakeSandboxd& d, const Hello&) {
      std::string bytes;
      EncodeFrame({0, FrameType::kHello, Stream::kNone, EncodeHello({1, 1, 1, "x"})}, &bytes);
      EncodeFrame({0, FrameType::kPing, Stream::kNone, "early"}, &bytes);
      d.SendRaw(bytes);
    };
  });
  ASSERT_TRUE(p) << p.error().ToString();
  auto pong = p->fake->WaitFrame([](const Frame& f) { return f.type == FrameType::kPong; });
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->payload, "early");
}

// ---- Dial ------------------------------------------------------------------------------------

class ClientDialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb-proto-dial-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ClientDialTest, MissingSocketIsNotFound) {
  auto c = Connection::Dial(dir_ + "/nothing.sock", 500);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kNotFound);
}

TEST_F(ClientDialTest, SocketWithoutListenerIsUnavailable) {
  std::string path = dir_ + "/dead.sock";
  UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  s.Reset();  // bound, never listened, now closed: connect gets ECONNREFUSED
  auto c = Connection::Dial(path, 500);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kUnavailable);
}

TEST_F(ClientDialTest, TooLongPathIsInvalid) {
  auto c = Connection::Dial("/" + std::string(200, 'x'), 500);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(ClientDialTest, ConnectsAndHandshakes) {
  std::string path = dir_ + "/sandboxd.sock";
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  std::unique_ptr<FakeSandboxd> fake;
  std::thread acceptor([&] {
    UniqueFd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    fake = std::make_unique<FakeSandboxd>(std::move(conn));
    fake->Start();
  });
  auto c = Connection::Dial(path, 5000);
  acceptor.join();
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ((*c)->version(), 1u);
  c->reset();
  fake.reset();
}

// ---- channels --------------------------------------------------------------------------------

// A fake op: echoes the OPEN body on stdout, then INFO and RESULT.
void EchoOpen(FakeSandboxd& d, uint32_t ch, const std::string& body) {
  d.SendData(ch, Stream::kStdout, body);
  d.Send(ch, FrameType::kEof, Stream::kStdout, "");
  d.Send(ch, FrameType::kInfo, Stream::kNone, R"({"pid":7})");
  d.Send(ch, FrameType::kResult, Stream::kNone, R"({"channel":)" + std::to_string(ch) + "}");
}

TEST(ClientChannelTest, ManyConcurrentChannels) {
  auto p = MakePair([](FakeSandboxd& d) { d.on_open = EchoOpen; });
  ASSERT_TRUE(p) << p.error().ToString();
  constexpr int kThreads = 16;
  constexpr int kPerThread = 8;
  std::mutex mu;
  std::set<uint32_t> ids;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string body = R"({"op":"echo","n":")" + std::to_string(t * 1000 + i) + "\"}";
        auto ch = p->conn->Open(body);
        ASSERT_TRUE(ch) << ch.error().ToString();
        auto [out, term] = Drain(**ch);
        EXPECT_EQ(out, body);
        EXPECT_EQ(term.kind, Kind::kResult);
        EXPECT_EQ(term.payload, R"({"channel":)" + std::to_string((*ch)->id()) + "}");
        std::lock_guard<std::mutex> l(mu);
        ids.insert((*ch)->id());
        ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  ASSERT_EQ(ids.size(), static_cast<size_t>(kThreads * kPerThread));
  // Odd, from 1, no gaps: exactly 1, 3, ..., 2n-1.
  EXPECT_EQ(*ids.begin(), 1u);
  EXPECT_EQ(*ids.rbegin(), 2u * kThreads * kPerThread - 1);
  for (uint32_t id : ids) EXPECT_EQ(id % 2, 1u);
  // Ids arrived at the fake in strictly increasing order.
  uint32_t last = 0;
  for (const Frame& f : p->fake->Received()) {
    if (f.type != FrameType::kOpen) continue;
    EXPECT_GT(f.channel, last);
    last = f.channel;
  }
}

TEST(ClientChannelTest, EventsArriveInOrderAndTerminalClosesChannel) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      d.Send(ch, FrameType::kInfo, Stream::kNone, R"({"pid":42})");
      d.SendData(ch, Stream::kStdout, "out1");
      d.SendData(ch, Stream::kStderr, "err1");
      d.SendData(ch, Stream::kStdout, "out2");
      d.Send(ch, FrameType::kEof, Stream::kStdout, "");
      d.Send(ch, FrameType::kEof, Stream::kStderr, "");
      d.Send(ch, FrameType::kError, Stream::kNone,
             EncodeWireError({"not_found", 2, "cwd /nope: No such file or directory"}));
      // Anything after the terminal frame is ignored by the host.
      d.Send(ch, FrameType::kData, Stream::kStdout, "late");
      d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
    };
  });
  ASSERT_TRUE(p);
  const uint64_t bytes_before = p->conn->bytes_received();
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  std::vector<std::pair<Kind, std::string>> seen;
  while (true) {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    seen.emplace_back(ev->kind, ev->kind == Kind::kData
                                    ? std::to_string(static_cast<int>(ev->stream)) + ev->payload
                                    : ev->payload);
    if (ev->terminal()) {
      ASSERT_TRUE(ev->error);
      EXPECT_EQ(ev->error->code(), ErrorCode::kNotFound);
      EXPECT_EQ(ev->error->sys_errno(), 2);
      EXPECT_EQ(ev->error->message(), "cwd /nope: No such file or directory");
      break;
    }
  }
  ASSERT_EQ(seen.size(), 7u);
  // Every frame read counts (the heartbeat's sign of a busy, not hung, peer): at least the
  // seven frames' headers and their payloads.
  EXPECT_GE(p->conn->bytes_received() - bytes_before, 7u * kFrameHeaderSize + 10 + 12);
  EXPECT_EQ(seen[0], std::make_pair(Kind::kInfo, std::string(R"({"pid":42})")));
  EXPECT_EQ(seen[1], std::make_pair(Kind::kData, std::string("1out1")));
  EXPECT_EQ(seen[2], std::make_pair(Kind::kData, std::string("2err1")));
  EXPECT_EQ(seen[3], std::make_pair(Kind::kData, std::string("1out2")));
  EXPECT_EQ(seen[4].first, Kind::kEof);
  EXPECT_EQ(seen[5].first, Kind::kEof);
  auto after = (*ch)->Next(100);
  ASSERT_FALSE(after);
  EXPECT_EQ(after.error().code(), ErrorCode::kConflict);
  EXPECT_FALSE((*ch)->TryNext().has_value());
  // The connection survived the late frames for the finished channel.
  auto ping = p->fake->Send(0, FrameType::kPing, Stream::kNone, "still-there");
  ASSERT_TRUE(ping);
  EXPECT_TRUE(p->fake->WaitFrame(
      [](const Frame& f) { return f.type == FrameType::kPong && f.payload == "still-there"; }));
  EXPECT_TRUE(p->conn->alive());
}

TEST(ClientChannelTest, NextTimesOut) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"never.answers"})");
  ASSERT_TRUE(ch);
  auto start = std::chrono::steady_clock::now();
  auto ev = (*ch)->Next(100);
  ASSERT_FALSE(ev);
  EXPECT_EQ(ev.error().code(), ErrorCode::kTimeout);
  EXPECT_GE(ElapsedMs(start), 95);
  EXPECT_FALSE((*ch)->TryNext().has_value());
}

TEST(ClientChannelTest, NotifierFiresOnEvents) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      d.WaitFrame([ch](const Frame& f) { return f.channel == ch && f.type == FrameType::kSignal; });
      d.SendData(ch, Stream::kStdout, "x");
      d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
    };
  });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  (*ch)->SetNotify([&] {
    std::lock_guard<std::mutex> l(mu);
    ++calls;
    cv.notify_all();
  });
  ASSERT_TRUE((*ch)->Signal(15));
  auto sig = p->fake->WaitFrame([](const Frame& f) { return f.type == FrameType::kSignal; });
  ASSERT_TRUE(sig);
  EXPECT_EQ(sig->payload, R"({"signal":15})");
  std::unique_lock<std::mutex> l(mu);
  ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(5), [&] { return calls >= 2; }));
  l.unlock();
  auto a = (*ch)->TryNext();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->payload, "x");
  auto b = (*ch)->TryNext();
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind, Kind::kResult);
}

TEST(ClientChannelTest, ResizeAndCancelFrames) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      d.WaitFrame([ch](const Frame& f) { return f.channel == ch && f.type == FrameType::kCancel; });
      d.Send(ch, FrameType::kError, Stream::kNone,
             EncodeWireError({"cancelled", 0, "cancelled by the host"}));
    };
  });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  ASSERT_TRUE((*ch)->Resize(120, 40));
  ASSERT_TRUE((*ch)->Cancel());
  auto [out, term] = Drain(**ch);
  ASSERT_TRUE(term.error);
  EXPECT_EQ(term.error->code(), ErrorCode::kCancelled);
  auto resize = p->fake->WaitFrame([](const Frame& f) { return f.type == FrameType::kResize; });
  ASSERT_TRUE(resize);
  EXPECT_EQ(resize->payload, R"({"cols":120,"rows":40})");
  EXPECT_EQ(resize->stream, Stream::kNone);
  // Control calls after the end are refused, Cancel is a no-op.
  EXPECT_EQ((*ch)->Signal(9).error().code(), ErrorCode::kConflict);
  EXPECT_TRUE((*ch)->Cancel());
}

TEST(ClientChannelTest, DroppingAnOpenChannelSendsCancel) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      // Keeps sending until cancelled: the host must keep crediting the abandoned channel.
      std::string chunk(kDataChunkSize, 'z');
      for (int i = 0; i < 64; ++i) {
        if (!d.SendData(ch, Stream::kStdout, chunk)) return;
      }
      d.WaitFrame([ch](const Frame& f) { return f.channel == ch && f.type == FrameType::kCancel; });
      d.Send(ch, FrameType::kError, Stream::kNone, EncodeWireError({"cancelled", 0, "x"}));
    };
  });
  ASSERT_TRUE(p);
  uint32_t id;
  {
    auto ch = p->conn->Open(R"({"op":"exec"})");
    ASSERT_TRUE(ch);
    id = (*ch)->id();
    auto first = (*ch)->Next(5000);
    ASSERT_TRUE(first);
  }  // handle dropped here
  auto cancel = p->fake->WaitFrame(
      [id](const Frame& f) { return f.channel == id && f.type == FrameType::kCancel; });
  ASSERT_TRUE(cancel);
  // All 4 MiB get through although nobody reads them (discarded bytes are credited).
  for (int i = 0; i < 100 && p->fake->SentBytes(id, Stream::kStdout) < 64u * kDataChunkSize; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(p->fake->SentBytes(id, Stream::kStdout), 64u * kDataChunkSize);
  EXPECT_TRUE(p->conn->alive());
}

// ---- flow control ----------------------------------------------------------------------------

TEST(ClientFlowControlTest, UnreadChannelDoesNotStallAnother) {
  constexpr size_t kABytes = 1536 * 1024;  // > 1 MiB, never read until the end
  constexpr size_t kBBytes = 2 * 1024 * 1024;
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string& body) {
      size_t n = body.find("\"A\"") != std::string::npos ? kABytes : kBBytes;
      if (!d.SendData(ch, Stream::kStdout, Pattern(n, ch))) return;
      d.Send(ch, FrameType::kEof, Stream::kStdout, "");
      d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
    };
  });
  ASSERT_TRUE(p);
  auto a = p->conn->Open(R"({"op":"flood","name":"A"})");
  ASSERT_TRUE(a);
  // Let A fill its window before B starts.
  for (int i = 0; i < 200 && p->fake->SentBytes((*a)->id(), Stream::kStdout) < kInitialWindow;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto b = p->conn->Open(R"({"op":"flood","name":"B"})");
  ASSERT_TRUE(b);
  auto start = std::chrono::steady_clock::now();
  auto [out_b, term_b] = Drain(**b);
  EXPECT_LT(ElapsedMs(start), 5000);
  EXPECT_EQ(term_b.kind, Kind::kResult);
  EXPECT_EQ(out_b.size(), kBBytes);
  EXPECT_TRUE(out_b == Pattern(kBBytes, (*b)->id()));
  // A is parked at exactly its window: sandboxd could not send more, the host buffered no more.
  EXPECT_EQ(p->fake->SentBytes((*a)->id(), Stream::kStdout), kInitialWindow);
  // Reading A now lets it finish, byte-exact.
  auto [out_a, term_a] = Drain(**a);
  EXPECT_EQ(term_a.kind, Kind::kResult);
  EXPECT_EQ(out_a.size(), kABytes);
  EXPECT_TRUE(out_a == Pattern(kABytes, (*a)->id()));
}

TEST(ClientFlowControlTest, CreditIsReturnedInHalfWindowBatches) {
  constexpr size_t kBytes = 1024 * 1024;
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      if (!d.SendData(ch, Stream::kStderr, std::string(kBytes, 'e'))) return;
      d.Send(ch, FrameType::kResult, Stream::kNone, "{}");
    };
  });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"x"})");
  ASSERT_TRUE(ch);
  size_t got = 0;
  while (true) {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev);
    if (ev->kind == Kind::kData) {
      EXPECT_EQ(ev->stream, Stream::kStderr);
      EXPECT_LE(ev->payload.size(), kDataChunkSize);
      got += ev->payload.size();
    }
    if (ev->terminal()) break;
  }
  EXPECT_EQ(got, kBytes);
  uint64_t returned = 0;
  int windows = 0;
  for (const Frame& f : p->fake->Received()) {
    if (f.type != FrameType::kWindow) continue;
    EXPECT_EQ(f.channel, (*ch)->id());
    EXPECT_EQ(f.stream, Stream::kStderr);
    auto inc = DecodeWindowIncrement(f.payload);
    ASSERT_TRUE(inc);
    EXPECT_GE(*inc, kInitialWindow / 2);
    returned += *inc;
    ++windows;
  }
  // Enough credit came back for the whole transfer, and not byte by byte.
  EXPECT_GE(returned, kBytes - kInitialWindow);
  EXPECT_LE(returned, kBytes);
  EXPECT_LE(windows, static_cast<int>(kBytes / (kInitialWindow / 2)));
}

TEST(ClientFlowControlTest, WriteBlocksUntilWindowArrives) {
  constexpr size_t kBytes = kInitialWindow + 100 * 1024;
  auto p = MakePair([](FakeSandboxd& d) { d.auto_credit_stdin = false; });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec","stdin_pipe":true})");
  ASSERT_TRUE(ch);
  const uint32_t id = (*ch)->id();
  const std::string data = Pattern(kBytes, 9);
  std::atomic<bool> done{false};
  Status result;
  std::thread writer([&] {
    result = (*ch)->Write(data);
    done = true;
  });
  // Exactly the initial window arrives, then nothing.
  ASSERT_TRUE(
      p->fake->WaitUntil([&] { return p->fake->StdinOfLocked(id).size() >= kInitialWindow; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(done.load());
  EXPECT_EQ(p->fake->StdinOf(id).size(), kInitialWindow);
  // TryWrite from another thread would wait for the writer; the window is 0 anyway.
  // Grant 60 KiB: exactly that much more goes out, still blocked.
  p->fake->Send(id, FrameType::kWindow, Stream::kStdin, EncodeWindowIncrement(60 * 1024));
  ASSERT_TRUE(p->fake->WaitUntil(
      [&] { return p->fake->StdinOfLocked(id).size() >= kInitialWindow + 60 * 1024; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(done.load());
  EXPECT_EQ(p->fake->StdinOf(id).size(), kInitialWindow + 60 * 1024);
  // Grant the rest: Write completes, bytes are exact, and no DATA frame exceeded 64 KiB.
  p->fake->Send(id, FrameType::kWindow, Stream::kStdin, EncodeWindowIncrement(1 << 20));
  writer.join();
  ASSERT_TRUE(result) << result.error().ToString();
  ASSERT_TRUE((*ch)->CloseWrite());
  ASSERT_TRUE(p->fake->WaitFrame([id](const Frame& f) {
    return f.channel == id && f.type == FrameType::kEof && f.stream == Stream::kStdin;
  }));
  EXPECT_TRUE(p->fake->StdinOf(id) == data);
  for (const Frame& f : p->fake->Received()) {
    if (f.type == FrameType::kData) {
      EXPECT_LE(f.payload.size(), kDataChunkSize);
      EXPECT_EQ(f.stream, Stream::kStdin);
    }
  }
  EXPECT_EQ((*ch)->Write("more").error().code(), ErrorCode::kConflict);  // stdin closed
}

TEST(ClientFlowControlTest, WriteTimesOutAndTryWriteStopsAtTheWindow) {
  auto p = MakePair([](FakeSandboxd& d) { d.auto_credit_stdin = false; });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec","stdin_pipe":true})");
  ASSERT_TRUE(ch);
  auto n = (*ch)->TryWrite(std::string(kInitialWindow - 10, 'a'));
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, kInitialWindow - 10);
  n = (*ch)->TryWrite(std::string(100, 'b'));
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 10u);
  n = (*ch)->TryWrite("c");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
  auto start = std::chrono::steady_clock::now();
  Status w = (*ch)->Write("d", 150);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code(), ErrorCode::kTimeout);
  EXPECT_GE(ElapsedMs(start), 140);
}

TEST(ClientFlowControlTest, DataBeyondTheWindowIsAProtocolError) {
  auto p = MakePair([](FakeSandboxd& d) {
    d.on_open = [](FakeSandboxd& d, uint32_t ch, const std::string&) {
      // Ignores flow control: five 64 KiB frames against a 256 KiB window.
      for (int i = 0; i < 5; ++i) {
        d.Send(ch, FrameType::kData, Stream::kStdout, std::string(kDataChunkSize, 'x'));
      }
    };
  });
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  // Do not read until the violation happened, so no credit is returned.
  for (int i = 0; i < 500 && p->conn->alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(p->conn->alive());
  std::optional<ChannelEvent> last;
  while (true) {
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    if (ev->terminal()) {
      last = *ev;
      break;
    }
  }
  ASSERT_EQ(last->kind, Kind::kError);
  EXPECT_EQ(last->error->code(), ErrorCode::kBackend);
  EXPECT_NE(last->error->message().find("exceeds the window"), std::string::npos)
      << last->error->message();
}

TEST(ClientFlowControlTest, WrongDirectionFramesAreProtocolErrors) {
  const std::pair<FrameType, Stream> cases[] = {
      {FrameType::kOpen, Stream::kNone},         {FrameType::kCancel, Stream::kNone},
      {FrameType::kSignal, Stream::kNone},       {FrameType::kResize, Stream::kNone},
      {FrameType::kData, Stream::kStdin},        {FrameType::kEof, Stream::kStdin},
      {FrameType::kWindow, Stream::kStdout},     {FrameType::kInfo, Stream::kStderr},
      {FrameType::kData, static_cast<Stream>(7)}};
  for (auto [bad, stream] : cases) {
    SCOPED_TRACE(std::string(FrameTypeName(bad)) + " stream " +
                 std::to_string(static_cast<int>(stream)));
    auto p = MakePair([bad, stream](FakeSandboxd& d) {
      d.on_open = [bad, stream](FakeSandboxd& d, uint32_t ch, const std::string&) {
        d.Send(ch, bad, stream, bad == FrameType::kWindow ? EncodeWindowIncrement(1) : "{}");
      };
    });
    ASSERT_TRUE(p);
    auto ch = p->conn->Open(R"({"op":"exec"})");
    ASSERT_TRUE(ch);
    auto ev = (*ch)->Next(5000);
    ASSERT_TRUE(ev);
    ASSERT_EQ(ev->kind, Kind::kError);
    EXPECT_EQ(ev->error->code(), ErrorCode::kBackend);
    EXPECT_FALSE(p->conn->alive());
  }
}

// ---- connection end --------------------------------------------------------------------------

TEST(ClientConnectionTest, LossEndsEveryChannelWithBackendError) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  std::vector<std::shared_ptr<Channel>> chans;
  for (int i = 0; i < 3; ++i) {
    auto ch = p->conn->Open(R"({"op":"exec"})");
    ASSERT_TRUE(ch);
    chans.push_back(*ch);
  }
  // A writer blocked on a closed window is released too.
  p->fake->auto_credit_stdin = false;
  ASSERT_TRUE(chans[0]->TryWrite(std::string(kInitialWindow, 'a')));
  Status blocked_write;
  std::thread writer([&] { blocked_write = chans[0]->Write("more"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  p->fake->Disconnect();
  for (auto& ch : chans) {
    auto ev = ch->Next(5000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    ASSERT_EQ(ev->kind, Kind::kError);
    EXPECT_EQ(ev->error->code(), ErrorCode::kBackend);
    EXPECT_EQ(ev->error->message().rfind("sandbox connection lost", 0), 0u) << ev->error->message();
    EXPECT_EQ(ch->Next(10).error().code(), ErrorCode::kConflict);
  }
  writer.join();
  ASSERT_FALSE(blocked_write);
  EXPECT_EQ(blocked_write.error().code(), ErrorCode::kBackend);
  EXPECT_FALSE(p->conn->alive());
  auto again = p->conn->Open(R"({"op":"exec"})");
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code(), ErrorCode::kBackend);
}

TEST(ClientConnectionTest, CloseEndsChannelsWithCancelled) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  std::thread waiter([&] {
    auto ev = (*ch)->Next();
    ASSERT_TRUE(ev);
    ASSERT_EQ(ev->kind, Kind::kError);
    EXPECT_EQ(ev->error->code(), ErrorCode::kCancelled);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  p->conn->Close();
  waiter.join();
  EXPECT_FALSE(p->conn->alive());
  EXPECT_FALSE(p->conn->Open("{}"));
  p->conn->Close();  // idempotent
}

TEST(ClientConnectionTest, ControlChannelErrorEndsConnection) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  p->fake->Send(0, FrameType::kError, Stream::kNone,
                EncodeWireError({"internal", 0, "sandboxd is shutting down"}));
  auto ev = (*ch)->Next(5000);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->kind, Kind::kError);
  EXPECT_EQ(ev->error->code(), ErrorCode::kBackend);
  EXPECT_NE(ev->error->message().find("sandboxd is shutting down"), std::string::npos);
}

TEST(ClientConnectionTest, OversizePingIsAProtocolError) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  p->fake->Send(0, FrameType::kPing, Stream::kNone, std::string(65, 'p'));
  for (int i = 0; i < 500 && p->conn->alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_FALSE(p->conn->alive());
}

TEST(ClientConnectionTest, DestroyingTheConnectionWithOpenChannelsIsClean) {
  auto p = MakePair();
  ASSERT_TRUE(p);
  auto ch = p->conn->Open(R"({"op":"exec"})");
  ASSERT_TRUE(ch);
  std::shared_ptr<Channel> keep = *ch;
  p->conn.reset();  // joins the reader; the channel outlives the connection safely
  auto ev = keep->Next(1000);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, Kind::kError);
  EXPECT_EQ(keep->Write("x").error().code(), ErrorCode::kCancelled);
}

}  // namespace
}  // namespace asb::protocol
