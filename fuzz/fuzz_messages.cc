// libFuzzer target: the protocol messages (protocol/messages.h), i.e. what sandboxd parses
// out of every OPEN frame a host sends (exec, file.*, tar.*) and what the host parses out of
// sandboxd's HELLO, INFO, RESULT and ERROR frames: both sides' decoders, over hostile JSON.
//
// Input: one selector byte (which decoder), then the JSON payload. Invariants:
//  1. no decoder crashes, throws or trips a sanitizer, whatever the bytes (invalid UTF-8,
//     deep nesting, huge numbers, duplicate keys...);
//  2. whatever a decoder accepts re-encodes to JSON that the same decoder accepts, and that
//     encoding is a fixed point: Encode(Decode(Encode(m))) == Encode(m).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "protocol/messages.h"

namespace {

namespace p = asb::protocol;

template <typename M>
void RoundTrip(std::string_view json, asb::Result<M> (*decode)(std::string_view),
               std::string (*encode)(const M&)) {
  asb::Result<M> m = decode(json);
  if (!m) {
    ASB_FUZZ_CHECK(!m.error().message().empty());
    return;
  }
  std::string once = encode(*m);
  asb::Result<M> again = decode(once);
  ASB_FUZZ_CHECK(again.has_value());
  ASB_FUZZ_CHECK(encode(*again) == once);
}

// The file.list INFO payload has a vector codec of its own.
std::string EncodeList(const std::vector<p::FileStat>& v) { return p::EncodeFileStatList(v); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 21) {
    case 0:
      RoundTrip(json, p::DecodeHello, p::EncodeHello);
      break;
    case 1: {
      auto op = p::DecodeOpName(json);
      if (op) ASB_FUZZ_CHECK(!op->empty());
      break;
    }
    case 2:
      RoundTrip(json, p::DecodeExecRequest, p::EncodeExecRequest);
      break;
    case 3:
      RoundTrip(json, p::DecodeExecResult, p::EncodeExecResult);
      break;
    case 4:
      RoundTrip(json, p::DecodeFileStat, p::EncodeFileStat);
      break;
    case 5:
      RoundTrip(json, p::DecodeFileStatList, EncodeList);
      break;
    case 6:
      RoundTrip(json, p::DecodeFileReadRequest, p::EncodeFileReadRequest);
      break;
    case 7:
      RoundTrip(json, p::DecodeFileWriteRequest, p::EncodeFileWriteRequest);
      break;
    case 8:
      RoundTrip(json, p::DecodeFileListRequest, p::EncodeFileListRequest);
      break;
    case 9:
      RoundTrip(json, p::DecodeFileStatRequest, p::EncodeFileStatRequest);
      break;
    case 10:
      RoundTrip(json, p::DecodeFileMkdirRequest, p::EncodeFileMkdirRequest);
      break;
    case 11:
      RoundTrip(json, p::DecodeFileRemoveRequest, p::EncodeFileRemoveRequest);
      break;
    case 12:
      RoundTrip(json, p::DecodeFileMoveRequest, p::EncodeFileMoveRequest);
      break;
    case 13:
      RoundTrip(json, p::DecodeTarExportRequest, p::EncodeTarExportRequest);
      break;
    case 14:
      RoundTrip(json, p::DecodeTarImportRequest, p::EncodeTarImportRequest);
      break;
    case 15:
      RoundTrip(json, p::DecodeTarResult, p::EncodeTarResult);
      break;
    case 16: {
      RoundTrip(json, p::DecodeWireError, p::EncodeWireError);
      auto w = p::DecodeWireError(json);
      if (w) (void)p::FromWireError(*w);  // any code name maps to some ErrorCode
      break;
    }
    case 17:
      RoundTrip(json, p::DecodeFileWatchRequest, p::EncodeFileWatchRequest);
      break;
    case 18:
      RoundTrip(json, p::DecodeFileWatchArmed, p::EncodeFileWatchArmed);
      break;
    case 19:
      RoundTrip(json, p::DecodeFileWatchEvent, p::EncodeFileWatchEvent);
      break;
    case 20:
      RoundTrip(json, p::DecodeFileWatchEnd, p::EncodeFileWatchEnd);
      break;
  }
  return 0;
}
