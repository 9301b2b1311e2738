// JSON codec of the tcp.connect request (tcp_messages.h), driven by a field table
// (field_table.h) as every other message.
#include "protocol/tcp_messages.h"

#include <tuple>

#include "protocol/field_table.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<TcpConnectRequest> {
  static constexpr std::string_view kWhat = "tcp.connect request";
  static constexpr std::string_view kOp = "tcp.connect";
  static constexpr auto kFields = std::tuple(Field("port", &TcpConnectRequest::port));
};

}  // namespace internal

std::string EncodeTcpConnectRequest(const TcpConnectRequest& m) { return internal::Encode(m); }
Result<TcpConnectRequest> DecodeTcpConnectRequest(std::string_view json) {
  return internal::Decode<TcpConnectRequest>(json);
}

}  // namespace asb::protocol
