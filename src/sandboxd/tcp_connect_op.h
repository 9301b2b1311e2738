// TcpConnectOp: "tcp.connect" (protocol/tcp_messages.h). sandboxd connects to 127.0.0.1:port in
// its sandbox and relays bytes between that socket and the channel: the socket's bytes go out
// as DATA stdout within the host's window, the host's DATA stdin is written to the socket and
// credited back as it is written (so at most a window's worth waits here), and each side's end
// becomes the other's EOF (shutdown of the socket's write side).
#pragma once

#include <cstdint>
#include <string>

#include "common/unique_fd.h"
#include "protocol/tcp_messages.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

class TcpConnectOp final : public Operation {
 public:
  TcpConnectOp(Daemon& d, Connection& c, uint32_t ch, protocol::TcpConnectRequest req)
      : Operation(d, c, ch), req_(req) {}
  ~TcpConnectOp() override;
  void Start() override;
  void OnData(std::string&& bytes) override;
  void OnEof() override;
  void OnWindow(protocol::Stream stream, uint32_t bytes) override;
  void OnCancel() override;
  void Abandon() override;

 private:
  void OnEvents(uint32_t events);
  void OnConnected();
  void ReadSocket();
  void WriteSocket();
  // Watches the socket for what is wanted now (reading while there is window, writing while
  // bytes wait), or ends the operation once both directions are done.
  void Rearm();
  void Close();
  void Fail(const Error& e);

  protocol::TcpConnectRequest req_;
  UniqueFd sock_;
  bool connecting_ = true;
  bool read_eof_ = false;    // the sandbox side closed: EOF sent to the host
  bool host_eof_ = false;    // the host closed its side
  bool write_shut_ = false;  // the host's EOF passed on (shutdown SHUT_WR)
  uint64_t window_ = 0;      // what the host still accepts on stdout
  std::string pending_;      // host bytes not yet written to the socket
  uint32_t watching_ = 0;    // the epoll events registered now
};

}  // namespace asb::sandboxd
