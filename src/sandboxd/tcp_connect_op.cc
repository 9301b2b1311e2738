#include "sandboxd/tcp_connect_op.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sandboxd/daemon.h"

namespace asb::sandboxd {

using protocol::Stream;

TcpConnectOp::~TcpConnectOp() { Close(); }

void TcpConnectOp::Close() {
  if (!sock_) return;
  if (daemon_.loop().Watching(sock_.get())) daemon_.loop().Remove(sock_.get());
  watching_ = 0;
  sock_.Reset();
}

void TcpConnectOp::Fail(const Error& e) {
  Close();
  FailWith(e);
}

void TcpConnectOp::Start() {
  if (req_.port < 1 || req_.port > 65535) {
    FailWith(Error::InvalidArgument("port must be 1..65535"));
    return;
  }
  sock_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!sock_) {
    FailWith(Error::FromErrno(errno, "socket"));
    return;
  }
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(req_.port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int r = ::connect(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (r != 0 && errno != EINPROGRESS) {
    const int err = errno;
    Fail(err == ECONNREFUSED
             ? Error::Unavailable("nothing listens on port " + std::to_string(req_.port) +
                                  " in the sandbox")
             : Error::FromErrno(err, "connect to port " + std::to_string(req_.port)));
    return;
  }
  // Connected or under way: writability says which way it went.
  if (auto st = daemon_.loop().Add(sock_.get(), EPOLLOUT, [this](uint32_t ev) { OnEvents(ev); });
      !st) {
    Fail(st.error());
    return;
  }
  watching_ = EPOLLOUT;
}

void TcpConnectOp::OnEvents(uint32_t events) {
  if (finished() || !sock_) return;
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(sock_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Fail(err == ECONNREFUSED
               ? Error::Unavailable("nothing listens on port " + std::to_string(req_.port) +
                                    " in the sandbox")
               : Error::FromErrno(err, "connect to port " + std::to_string(req_.port)));
      return;
    }
    OnConnected();
    return;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && !read_eof_) ReadSocket();
  if (finished() || !sock_) return;
  if ((events & (EPOLLOUT | EPOLLERR)) != 0 && !pending_.empty()) WriteSocket();
  if (finished() || !sock_) return;
  Rearm();
}

void TcpConnectOp::OnConnected() {
  connecting_ = false;
  window_ = protocol::kInitialWindow;
  SendInfo(R"({"connected":true})");
  Rearm();
}

void TcpConnectOp::ReadSocket() {
  static char buf[protocol::kDataChunkSize];
  // Bounded per call so that one busy connection interleaves with other channels.
  for (int i = 0; i < 8 && window_ > 0; ++i) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof buf, window_));
    const ssize_t n = ::read(sock_.get(), buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {  // the sandbox side closed (or reset): its end is the host's EOF
      read_eof_ = true;
      SendEof(Stream::kStdout);
      return;
    }
    window_ -= static_cast<uint64_t>(n);
    SendData(Stream::kStdout, std::string_view(buf, static_cast<size_t>(n)));
  }
}

void TcpConnectOp::WriteSocket() {
  while (!pending_.empty()) {
    const ssize_t n = ::send(sock_.get(), pending_.data(), pending_.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) {  // the sandbox side is gone: what the host still sends is dropped
      SendWindow(static_cast<uint32_t>(pending_.size()));
      pending_.clear();
      write_shut_ = true;
      return;
    }
    pending_.erase(0, static_cast<size_t>(n));
    SendWindow(static_cast<uint32_t>(n));
  }
}

void TcpConnectOp::Rearm() {
  if (finished() || !sock_ || connecting_) return;
  if (host_eof_ && pending_.empty() && !write_shut_) {
    ::shutdown(sock_.get(), SHUT_WR);
    write_shut_ = true;
  }
  if (read_eof_ && (write_shut_ || host_eof_) && pending_.empty()) {
    Close();
    Succeed("{}");
    return;
  }
  uint32_t want = 0;
  if (!read_eof_ && window_ > 0) want |= EPOLLIN;
  if (!pending_.empty()) want |= EPOLLOUT;
  if (want == watching_) return;
  // Wanting nothing (no window, nothing to write) leaves epoll: it would still report a hang-up
  // or error, level-triggered, without end while the host's window is closed.
  if (want == 0) {
    daemon_.loop().Remove(sock_.get());
  } else if (watching_ == 0) {
    if (auto st = daemon_.loop().Add(sock_.get(), want, [this](uint32_t ev) { OnEvents(ev); });
        !st) {
      Fail(st.error());
      return;
    }
  } else {
    (void)daemon_.loop().Modify(sock_.get(), want);
  }
  watching_ = want;
}

void TcpConnectOp::OnData(std::string&& bytes) {
  if (finished() || !sock_ || connecting_ || write_shut_) {
    Operation::OnData(std::move(bytes));  // credited back, dropped
    return;
  }
  pending_.append(bytes);
  WriteSocket();
  Rearm();
}

void TcpConnectOp::OnEof() {
  if (finished()) return;
  host_eof_ = true;
  Rearm();
}

void TcpConnectOp::OnWindow(Stream stream, uint32_t bytes) {
  if (stream != Stream::kStdout || finished()) return;
  window_ += bytes;
  if (!read_eof_) ReadSocket();
  Rearm();
}

void TcpConnectOp::OnCancel() {
  Close();
  Operation::OnCancel();
}

void TcpConnectOp::Abandon() { Close(); }

}  // namespace asb::sandboxd
