// libFuzzer target: the protocol frame codec (protocol/frame.h), the bytes a hostile sandboxd
// (or a host bug) can put on the host<->sandboxd connection.
//
// Input: arbitrary bytes. Invariants checked (any violation aborts, so libFuzzer reports it):
//  1. FrameDecoder never crashes; fed everything at once it yields frames, then either needs
//     more bytes or reports an error, and after an error it is not used again (as the client).
//  2. Streaming: feeding the same bytes cut at split points taken from the input yields exactly
//     the same frames and the same outcome (error or not) as one Feed.
//  3. Round trip: every decoded frame re-encodes (EncodeFrame) to exactly the bytes it was
//     decoded from, and the decoded type is a known one with a payload <= kMaxFramePayload.
//  4. WINDOW payloads: DecodeWindowIncrement accepts exactly 4 bytes and inverts
//     EncodeWindowIncrement.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "protocol/frame.h"

namespace {

using asb::protocol::EncodeFrame;
using asb::protocol::Frame;
using asb::protocol::FrameDecoder;

struct Outcome {
  std::vector<Frame> frames;
  bool error = false;
  size_t buffered = 0;
};

// Drains `d` after a Feed; returns false once the decoder reported an error.
bool Drain(FrameDecoder& d, Outcome* out) {
  for (;;) {
    auto next = d.Next();
    if (!next) {
      out->error = true;
      return false;
    }
    if (!next->has_value()) return true;
    out->frames.push_back(std::move(**next));
  }
}

bool SameFrame(const Frame& a, const Frame& b) {
  return a.channel == b.channel && a.type == b.type && a.stream == b.stream &&
         a.payload == b.payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // 1. All at once.
  Outcome whole;
  {
    FrameDecoder d;
    d.Feed(bytes);
    if (Drain(d, &whole)) whole.buffered = d.buffered();
  }

  // 3. Round trip: the frames are a prefix of the input, byte for byte.
  std::string reencoded;
  for (const Frame& f : whole.frames) {
    ASB_FUZZ_CHECK(f.payload.size() <= asb::protocol::kMaxFramePayload);
    ASB_FUZZ_CHECK(asb::protocol::FrameTypeName(f.type) != "UNKNOWN");
    EncodeFrame(f, &reencoded);
  }
  ASB_FUZZ_CHECK(reencoded.size() <= bytes.size());
  ASB_FUZZ_CHECK(std::memcmp(reencoded.data(), bytes.data(), reencoded.size()) == 0);
  if (!whole.error) {
    // Whatever was not returned is still buffered, waiting for more bytes.
    ASB_FUZZ_CHECK(reencoded.size() + whole.buffered == bytes.size());
    // Decoding the re-encoded frames gives them back, with nothing left over.
    FrameDecoder again;
    again.Feed(reencoded);
    Outcome second;
    ASB_FUZZ_CHECK(Drain(again, &second));
    ASB_FUZZ_CHECK(again.buffered() == 0);
    ASB_FUZZ_CHECK(second.frames.size() == whole.frames.size());
    for (size_t i = 0; i < second.frames.size(); ++i) {
      ASB_FUZZ_CHECK(SameFrame(second.frames[i], whole.frames[i]));
    }
  }

  // 2. Streaming, cut at split points derived from the input itself (its bytes read as chunk
  //    lengths 1..64, cycling), so the fuzzer explores cuts inside headers and payloads.
  if (size > 0) {
    Outcome streamed;
    FrameDecoder d;
    size_t pos = 0, k = 0;
    bool ok = true;
    while (pos < size && ok) {
      size_t n = std::min<size_t>(size - pos, 1 + data[k++ % size] % 64);
      d.Feed(bytes.substr(pos, n));
      pos += n;
      ok = Drain(d, &streamed);
    }
    if (ok) streamed.buffered = d.buffered();
    ASB_FUZZ_CHECK(streamed.error == whole.error);
    ASB_FUZZ_CHECK(streamed.frames.size() == whole.frames.size());
    for (size_t i = 0; i < streamed.frames.size(); ++i) {
      ASB_FUZZ_CHECK(SameFrame(streamed.frames[i], whole.frames[i]));
    }
    if (ok) ASB_FUZZ_CHECK(streamed.buffered == whole.buffered);
  }

  // 4. WINDOW payloads.
  for (const Frame& f : whole.frames) {
    auto inc = asb::protocol::DecodeWindowIncrement(f.payload);
    ASB_FUZZ_CHECK(inc.has_value() == (f.payload.size() == 4));
    if (inc) ASB_FUZZ_CHECK(asb::protocol::EncodeWindowIncrement(*inc) == f.payload);
  }
  return 0;
}
