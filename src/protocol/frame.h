// The sandbox protocol's framing: how bytes on the host<->sandboxd connection are cut into
// frames. The full protocol (messages, channels, flow control, versioning) is written down in
// docs/design/sandbox-protocol.md; frame_test.cc pins the exact bytes (golden test).
//
// Wire layout of one frame (all integers little-endian):
//
//   offset  size  field
//   0       4     payload_length   bytes that follow the 12-byte header, <= kMaxFramePayload
//   4       4     channel          0 = control channel; otherwise an operation opened by the host
//   8       1     type             FrameType
//   9       1     stream           Stream (for DATA, EOF, WINDOW); 0 otherwise
//   10      2     reserved         must be 0 (a receiver rejects other values)
//   12      n     payload          raw bytes (DATA) or UTF-8 JSON (control messages)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::protocol {

/// Current protocol version. Bump it (and add a golden test) for any change to the wire format.
inline constexpr uint32_t kProtocolVersion = 1;
/// Oldest version this build still speaks.
inline constexpr uint32_t kMinProtocolVersion = 1;

inline constexpr size_t kFrameHeaderSize = 12;
/// Largest payload a peer may send (1 MiB). A larger length is a protocol error.
inline constexpr uint32_t kMaxFramePayload = 1u << 20;
/// Size of DATA frames senders should produce (64 KiB): small enough to interleave channels.
inline constexpr uint32_t kDataChunkSize = 64u * 1024;
/// Initial flow-control window of every data stream, in bytes (256 KiB).
inline constexpr uint32_t kInitialWindow = 256u * 1024;

enum class FrameType : uint8_t {
  kHello = 1,    // control: version handshake, JSON, channel 0, both directions.
  kOpen = 2,     // host->d: starts an operation on a new channel, JSON {"op": ..., ...}.
  kData = 3,     // raw bytes of `stream` on the channel; consumes flow-control window.
  kEof = 4,      // no more DATA on `stream` (e.g. close stdin, end of an upload/download).
  kWindow = 5,   // grants the peer more window on `stream`: payload u32 LE byte count.
  kSignal = 6,   // host->d: JSON {"signal": N} to deliver to an exec's process group.
  kInfo = 7,     // d->host: JSON, non-terminal (stat of a file being read, list entries, pid).
  kResult = 8,   // d->host: JSON, terminal success (exec exit status, op result).
  kError = 9,    // d->host: JSON {"code","errno","message"}, terminal failure.
  kCancel = 10,  // host->d: abandon the operation; d answers with kError code "cancelled".
  kResize = 11,  // host->d: JSON {"cols","rows"} for a PTY exec.
  kPing = 12,    // either: keepalive, answered by kPong with the same payload.
  kPong = 13,
};

enum class Stream : uint8_t {
  kNone = 0,
  kStdin = 0,   // host->d data: stdin of an exec, bytes of a file or tar being uploaded.
  kStdout = 1,  // d->host data: stdout of an exec, bytes of a file or tar being downloaded.
  kStderr = 2,  // d->host data: stderr of an exec.
};

/// Human-readable name of a frame type ("DATA"), for logs and errors.
std::string_view FrameTypeName(FrameType t);

struct Frame {
  uint32_t channel = 0;
  FrameType type = FrameType::kData;
  Stream stream = Stream::kNone;
  std::string payload;  // bytes; std::string for cheap moves and JSON parsing.
};

/// Appends the encoded frame to `out`. The payload must be <= kMaxFramePayload.
void EncodeFrame(const Frame& frame, std::string* out);

/// Appends a frame header for a payload of `payload_len` bytes (for writev without copying).
void EncodeFrameHeader(uint32_t channel, FrameType type, Stream stream, uint32_t payload_len,
                       char header[kFrameHeaderSize]);

/// Incremental decoder: feed bytes as they arrive, take whole frames out.
class FrameDecoder {
 public:
  /// Appends received bytes.
  void Feed(std::string_view bytes);
  /// Returns the next whole frame, std::nullopt if more bytes are needed, or an error for a
  /// malformed stream (length over kMaxFramePayload, unknown type, nonzero reserved field).
  /// After an error the connection must be dropped.
  Result<std::optional<Frame>> Next();
  /// Bytes buffered but not yet returned as frames.
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

/// Encodes the u32 payload of a kWindow frame.
std::string EncodeWindowIncrement(uint32_t bytes);
/// Decodes the payload of a kWindow frame; error if it is not exactly 4 bytes.
Result<uint32_t> DecodeWindowIncrement(std::string_view payload);

}  // namespace asb::protocol
