// tcp.connect against the real sandboxd (label privileged): the host client's relay
// (protocol/tcp_client.h) to a TCP peer on loopback that this test runs, bytes both ways beyond
// one window, each side's close reaching the other, and a refused port's clear error.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "protocol/tcp_client.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

// A listening socket on 127.0.0.1 and a port nothing listens on.
struct Listener {
  UniqueFd fd;
  uint16_t port = 0;
};

Listener Listen() {
  Listener l;
  l.fd.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(l.fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(l.fd.get(), 4) != 0 ||
      ::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return {};
  }
  l.port = ntohs(a.sin_port);
  return l;
}

std::string ReadToEof(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

TEST_F(SandboxdTest, TcpConnectRelaysBothWaysAndEachClose) {
  Listener l = Listen();
  ASSERT_TRUE(l.fd) << "cannot listen on loopback";
  // The peer: reads everything, then answers with it reversed and closes.
  std::thread peer([&] {
    UniqueFd c(::accept4(l.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) return;
    std::string got = ReadToEof(c.get());
    std::string back(got.rbegin(), got.rend());
    (void)WriteAll(c.get(), back.data(), back.size());
  });
  auto fd = protocol::ConnectTcpThroughSandboxd(*conn_, l.port, 5000);
  ASSERT_TRUE(fd) << fd.error().ToString();
  UniqueFd ours(*fd);
  std::string sent(1 << 20, '\0');  // four windows' worth
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>('a' + i % 26);
  std::thread writer([&] {
    (void)WriteAll(ours.get(), sent.data(), sent.size());
    ::shutdown(ours.get(), SHUT_WR);  // our close reaches the peer as its end of file
  });
  const std::string got = ReadToEof(ours.get());  // the peer's close reaches us the same way
  writer.join();
  peer.join();
  EXPECT_EQ(got, std::string(sent.rbegin(), sent.rend()));
}

TEST_F(SandboxdTest, TcpConnectToAPortNobodyListensOnIsUnavailable) {
  uint16_t port;
  {
    Listener l = Listen();  // take a free port, then free it again
    ASSERT_TRUE(l.fd);
    port = l.port;
  }
  auto fd = protocol::ConnectTcpThroughSandboxd(*conn_, port, 5000);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(fd.error().message().find("nothing listens on port"), std::string::npos)
      << fd.error().ToString();
  // The connection serves on.
  EXPECT_EQ(Sh("echo still").stdout_data, "still\n");
}

}  // namespace
}  // namespace asb::sandboxd::testing
