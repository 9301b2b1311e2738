// The "tcp.connect" operation (docs/design/sandbox-protocol.md, section 7): a TCP connection to
// a port inside the sandbox, carried over the channel. It lets the host reach a sandbox's ports
// (exposed ports, preview URLs) without a way into the sandbox's network of its own: a microVM
// has none until it is networked.
//
//   tcp.connect   OPEN TcpConnectRequest; INFO {"connected":true} once sandboxd's connect to
//                 127.0.0.1:port succeeded; then DATA stdout (the sandbox side's bytes) and
//                 host DATA stdin (the host side's) under the usual windows, EOF each way as
//                 each side closes; RESULT {} when both have. ERROR unavailable "nothing
//                 listens on port N in the sandbox" when the connect is refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace asb::protocol {

struct TcpConnectRequest {
  uint32_t port = 0;  // 1..65535, on 127.0.0.1 inside the sandbox
};

std::string EncodeTcpConnectRequest(const TcpConnectRequest& m);  // op "tcp.connect"
/// Errors: kBackend on malformed JSON or a member of the wrong type.
Result<TcpConnectRequest> DecodeTcpConnectRequest(std::string_view json);

}  // namespace asb::protocol
