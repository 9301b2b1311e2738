#include "protocol/frame.h"

#include <cstring>

namespace asb::protocol {

namespace {
void PutU32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v & 0xff);
  p[1] = static_cast<char>((v >> 8) & 0xff);
  p[2] = static_cast<char>((v >> 16) & 0xff);
  p[3] = static_cast<char>((v >> 24) & 0xff);
}
uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | (uint32_t{u[1]} << 8) | (uint32_t{u[2]} << 16) | (uint32_t{u[3]} << 24);
}
bool KnownType(uint8_t t) {
  return t >= static_cast<uint8_t>(FrameType::kHello) &&
         t <= static_cast<uint8_t>(FrameType::kPong);
}
}  // namespace

std::string_view FrameTypeName(FrameType t) {
  switch (t) {
    case FrameType::kHello:
      return "HELLO";
    case FrameType::kOpen:
      return "OPEN";
    case FrameType::kData:
      return "DATA";
    case FrameType::kEof:
      return "EOF";
    case FrameType::kWindow:
      return "WINDOW";
    case FrameType::kSignal:
      return "SIGNAL";
    case FrameType::kInfo:
      return "INFO";
    case FrameType::kResult:
      return "RESULT";
    case FrameType::kError:
      return "ERROR";
    case FrameType::kCancel:
      return "CANCEL";
    case FrameType::kResize:
      return "RESIZE";
    case FrameType::kPing:
      return "PING";
    case FrameType::kPong:
      return "PONG";
  }
  return "UNKNOWN";
}

void EncodeFrameHeader(uint32_t channel, FrameType type, Stream stream, uint32_t payload_len,
                       char header[kFrameHeaderSize]) {
  PutU32(header, payload_len);
  PutU32(header + 4, channel);
  header[8] = static_cast<char>(type);
  header[9] = static_cast<char>(stream);
  header[10] = 0;
  header[11] = 0;
}

void EncodeFrame(const Frame& frame, std::string* out) {
  char header[kFrameHeaderSize];
  EncodeFrameHeader(frame.channel, frame.type, frame.stream,
                    static_cast<uint32_t>(frame.payload.size()), header);
  out->append(header, kFrameHeaderSize);
  out->append(frame.payload);
}

void FrameDecoder::Feed(std::string_view bytes) {
  // Compact lazily so that a long-lived connection does not grow its buffer forever.
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

Result<std::optional<Frame>> FrameDecoder::Next() {
  if (buf_.size() - pos_ < kFrameHeaderSize) return std::optional<Frame>();
  const char* h = buf_.data() + pos_;
  uint32_t len = GetU32(h);
  if (len > kMaxFramePayload) {
    return Fail(Error::Backend("protocol: frame payload of " + std::to_string(len) +
                               " bytes exceeds the maximum of " +
                               std::to_string(kMaxFramePayload)));
  }
  uint8_t type = static_cast<uint8_t>(h[8]);
  if (!KnownType(type)) {
    return Fail(Error::Backend("protocol: unknown frame type " + std::to_string(type)));
  }
  if (h[10] != 0 || h[11] != 0) return Fail(Error::Backend("protocol: reserved bits set"));
  if (buf_.size() - pos_ < kFrameHeaderSize + len) return std::optional<Frame>();
  Frame f;
  f.channel = GetU32(h + 4);
  f.type = static_cast<FrameType>(type);
  f.stream = static_cast<Stream>(static_cast<uint8_t>(h[9]));
  f.payload.assign(h + kFrameHeaderSize, len);
  pos_ += kFrameHeaderSize + len;
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

std::string EncodeWindowIncrement(uint32_t bytes) {
  std::string s(4, '\0');
  PutU32(s.data(), bytes);
  return s;
}

Result<uint32_t> DecodeWindowIncrement(std::string_view payload) {
  if (payload.size() != 4) return Fail(Error::Backend("protocol: WINDOW payload must be 4 bytes"));
  return GetU32(payload.data());
}

}  // namespace asb::protocol
