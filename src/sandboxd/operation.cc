#include "sandboxd/operation.h"

#include "protocol/messages.h"
#include "sandboxd/connection.h"

namespace asb::sandboxd {

using protocol::FrameType;
using protocol::Stream;

void Operation::OnData(std::string&& bytes) {
  // Nobody consumes stdin of this operation: credit it back at once (flow-control rule 5).
  if (!bytes.empty()) SendWindow(static_cast<uint32_t>(bytes.size()));
}

void Operation::OnCancel() { FailWith(Error::Cancelled("cancelled")); }

void Operation::SendData(Stream stream, std::string_view bytes) {
  if (finished_ || bytes.empty()) return;
  conn_.SendFrame(channel_, FrameType::kData, stream, bytes);
}

void Operation::SendEof(Stream stream) {
  if (finished_) return;
  conn_.SendFrame(channel_, FrameType::kEof, stream, {});
}

void Operation::SendWindow(uint32_t bytes) {
  if (finished_ || bytes == 0) return;
  conn_.SendFrame(channel_, FrameType::kWindow, Stream::kStdin,
                  protocol::EncodeWindowIncrement(bytes));
  conn_.GrantedStdin(channel_, bytes);
}

void Operation::SendInfo(const std::string& json) {
  if (finished_) return;
  conn_.SendFrame(channel_, FrameType::kInfo, Stream::kNone, json);
}

void Operation::Succeed(const std::string& json) {
  if (finished_) return;
  conn_.SendFrame(channel_, FrameType::kResult, Stream::kNone, json);
  finished_ = true;
  conn_.FinishChannel(channel_);
}

void Operation::FailWith(const Error& error) {
  if (finished_) return;
  conn_.SendFrame(channel_, FrameType::kError, Stream::kNone,
                  protocol::EncodeWireError(protocol::ToWireError(error)));
  finished_ = true;
  conn_.FinishChannel(channel_);
}

}  // namespace asb::sandboxd
