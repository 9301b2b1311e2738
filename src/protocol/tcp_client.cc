#include "protocol/tcp_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "common/unique_fd.h"
#include "protocol/tcp_messages.h"

namespace asb::protocol {

namespace {

// The caller's socket to the channel's stdin, until the caller stops writing.
void RelayUp(std::shared_ptr<Channel> ch, std::shared_ptr<UniqueFd> ours) {
  std::string buf(kDataChunkSize, '\0');
  for (;;) {
    const ssize_t n = ::read(ours->get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (!ch->Write(std::string_view(buf.data(), static_cast<size_t>(n)))) return;
  }
  (void)ch->CloseWrite();
}

// The channel's stdout to the caller's socket, until the operation ends. Wakes every second to
// see whether the caller closed its socket altogether (then the operation is cancelled).
void RelayDown(std::shared_ptr<Channel> ch, std::shared_ptr<UniqueFd> ours) {
  for (;;) {
    auto ev = ch->Next(1000);
    if (!ev) {
      if (ev.error().code() != ErrorCode::kTimeout) break;  // the connection is gone
      pollfd p{ours->get(), POLLRDHUP, 0};
      if (::poll(&p, 1, 0) > 0 && (p.revents & POLLHUP) != 0) {
        (void)ch->Cancel();  // the caller closed both ways: nothing more to relay
      }
      continue;
    }
    if (ev->terminal()) break;
    if (ev->kind == ChannelEvent::Kind::kEof) {
      ::shutdown(ours->get(), SHUT_WR);
      continue;
    }
    if (ev->kind != ChannelEvent::Kind::kData) continue;
    size_t off = 0;
    while (off < ev->payload.size()) {
      const ssize_t n =
          ::send(ours->get(), ev->payload.data() + off, ev->payload.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {  // the caller is gone
        (void)ch->Cancel();
        break;
      }
      off += static_cast<size_t>(n);
    }
  }
  ::shutdown(ours->get(), SHUT_RDWR);  // wakes RelayUp's read
}

}  // namespace

Result<int> ConnectTcpThroughSandboxd(Connection& conn, uint16_t port, int64_t timeout_ms) {
  TcpConnectRequest req;
  req.port = port;
  ASB_ASSIGN_OR_RETURN(std::shared_ptr<Channel> ch, conn.Open(EncodeTcpConnectRequest(req)));
  // Wait for sandboxd's connect: INFO, or its ERROR (nothing listens), or our deadline.
  for (;;) {
    auto ev = ch->Next(timeout_ms);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) {
        (void)ch->Cancel();
        return Fail(Error::Timeout("connect to port " + std::to_string(port) + " timed out"));
      }
      return Fail(std::move(ev).error());
    }
    if (ev->kind == ChannelEvent::Kind::kError) {
      return Fail(ev->error ? *ev->error : Error::Backend("protocol: ERROR without a body"));
    }
    if (ev->kind == ChannelEvent::Kind::kInfo) break;
    if (ev->terminal()) return Fail(Error::Backend("tcp.connect ended before connecting"));
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    (void)ch->Cancel();
    return FailErrno("socketpair");
  }
  auto ours = std::make_shared<UniqueFd>(sv[0]);
  std::thread(RelayUp, ch, ours).detach();
  std::thread(RelayDown, ch, ours).detach();
  return sv[1];
}

}  // namespace asb::protocol
