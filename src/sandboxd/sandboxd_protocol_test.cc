// Connection-level protocol rules of the real sandboxd, checked with raw frames (the host
// client would never send these): version refusal, frames before HELLO, bad channel ids,
// window overrun, PING. Label: privileged (the harness runs sandboxd as root).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "protocol/frame.h"
#include "protocol/messages.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::Frame;
using protocol::FrameType;
using protocol::Stream;

class RawConn {
 public:
  explicit RawConn(const std::string& path) {
    fd_.Reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ok_ = connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{5, 0};
    setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  bool ok() const { return ok_; }
  void Send(uint32_t ch, FrameType t, Stream s, std::string payload) {
    std::string out;
    protocol::EncodeFrame(Frame{ch, t, s, std::move(payload)}, &out);
    // MSG_NOSIGNAL: sandboxd may already have dropped us (that is what some tests check).
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = send(fd_.get(), out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  void Hello(uint32_t lo = 1, uint32_t hi = 1) {
    protocol::Hello h;
    h.min_version = lo;
    h.max_version = hi;
    h.software = "raw-test";
    Send(0, FrameType::kHello, Stream::kNone, protocol::EncodeHello(h));
  }
  // The next frame, or nullopt at EOF / timeout.
  std::optional<Frame> Next() {
    for (;;) {
      auto f = dec_.Next();
      if (!f) return std::nullopt;
      if (f->has_value()) return std::move(**f);
      char buf[65536];
      ssize_t n = read(fd_.get(), buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      dec_.Feed(std::string_view(buf, static_cast<size_t>(n)));
    }
  }
  // Skips frames until one of type `t`.
  std::optional<Frame> NextOf(FrameType t) {
    for (;;) {
      auto f = Next();
      if (!f || f->type == t) return f;
    }
  }

 private:
  UniqueFd fd_;
  bool ok_ = false;
  protocol::FrameDecoder dec_;
};

class SandboxdProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    auto p = SandboxdProcess::Start();
    ASSERT_TRUE(p) << p.error().ToString();
    proc_ = std::move(*p);
  }
  std::unique_ptr<SandboxdProcess> proc_;
};

TEST_F(SandboxdProtocolTest, HandshakePicksTheHighestCommonVersion) {
  RawConn c(proc_->socket_path());
  ASSERT_TRUE(c.ok());
  c.Hello(1, 7);
  auto f = c.Next();
  ASSERT_TRUE(f);
  ASSERT_EQ(f->type, FrameType::kHello);
  auto h = protocol::DecodeHello(f->payload);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->version, protocol::kProtocolVersion);
  EXPECT_EQ(h->min_version, protocol::kMinProtocolVersion);
  c.Send(0, FrameType::kPing, Stream::kNone, "abc");
  auto pong = c.Next();
  ASSERT_TRUE(pong);
  EXPECT_EQ(pong->type, FrameType::kPong);
  EXPECT_EQ(pong->payload, "abc");
}

TEST_F(SandboxdProtocolTest, NoCommonVersionIsAnErrorAndAClose) {
  RawConn c(proc_->socket_path());
  c.Hello(2, 3);
  auto f = c.Next();
  ASSERT_TRUE(f);
  ASSERT_EQ(f->type, FrameType::kError);
  EXPECT_EQ(f->channel, 0u);
  auto e = protocol::DecodeWireError(f->payload);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "backend_error");
  EXPECT_EQ(e->message, "protocol: no common version: host speaks 2..3, sandboxd speaks 1..1");
  EXPECT_FALSE(c.Next());  // closed
  // sandboxd itself is unaffected.
  RawConn d(proc_->socket_path());
  d.Hello();
  ASSERT_TRUE(d.Next());
}

TEST_F(SandboxdProtocolTest, FatalProtocolErrorsDropOnlyThatConnection) {
  RawConn other(proc_->socket_path());
  other.Hello();
  ASSERT_TRUE(other.Next());
  {
    RawConn c(proc_->socket_path());  // OPEN before HELLO
    c.Send(1, FrameType::kOpen, Stream::kNone, R"({"op":"kill.all"})");
    EXPECT_EQ(c.NextOf(FrameType::kError)->channel, 0u);
    EXPECT_FALSE(c.Next());
  }
  {
    RawConn c(proc_->socket_path());  // even channel id
    c.Hello();
    ASSERT_TRUE(c.Next());
    c.Send(2, FrameType::kOpen, Stream::kNone, R"({"op":"file.stat","path":"."})");
    EXPECT_EQ(c.NextOf(FrameType::kError)->channel, 0u);
    EXPECT_FALSE(c.Next());
  }
  {
    RawConn c(proc_->socket_path());  // stdin window overrun
    c.Hello();
    ASSERT_TRUE(c.Next());
    protocol::ExecRequest req = ShellRequest("sleep 5");
    req.stdin_pipe = true;
    c.Send(1, FrameType::kOpen, Stream::kNone, protocol::EncodeExecRequest(req));
    std::string chunk(protocol::kDataChunkSize, 'x');
    // 256 KiB initial window + at most 64 KiB credited for what the pipe took: 512 KiB overruns.
    for (int i = 0; i < 8; ++i) c.Send(1, FrameType::kData, Stream::kStdin, chunk);
    auto err = c.NextOf(FrameType::kError);
    ASSERT_TRUE(err);
    EXPECT_EQ(err->channel, 0u);
    EXPECT_NE(err->payload.find("window"), std::string::npos) << err->payload;
    EXPECT_FALSE(c.NextOf(FrameType::kError));
  }
  // The first connection still works; a finished channel's late frames are ignored.
  other.Send(1, FrameType::kOpen, Stream::kNone, R"({"op":"file.stat","path":"."})");
  auto r = other.NextOf(FrameType::kResult);
  ASSERT_TRUE(r);
  other.Send(1, FrameType::kWindow, Stream::kStdout, protocol::EncodeWindowIncrement(10));
  other.Send(1, FrameType::kCancel, Stream::kNone, "");
  other.Send(3, FrameType::kOpen, Stream::kNone, R"({"op":"nope"})");
  auto e = other.Next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, FrameType::kError);
  EXPECT_EQ(e->channel, 3u);
}

TEST_F(SandboxdProtocolTest, StdinForAnExecWithoutAPipeIsCredited) {
  RawConn c(proc_->socket_path());
  c.Hello();
  ASSERT_TRUE(c.Next());
  c.Send(1, FrameType::kOpen, Stream::kNone,
         protocol::EncodeExecRequest(ShellRequest("sleep 0.3")));
  c.Send(1, FrameType::kData, Stream::kStdin, std::string(1000, 'x'));
  auto w = c.NextOf(FrameType::kWindow);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->stream, Stream::kStdin);
  EXPECT_EQ(*protocol::DecodeWindowIncrement(w->payload), 1000u);
  auto r = c.NextOf(FrameType::kResult);
  ASSERT_TRUE(r);
}

}  // namespace
}  // namespace asb::sandboxd::testing
