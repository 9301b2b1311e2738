// libFuzzer target: the parsers in front of E2B's sandbox traffic (docs/e2b.md): the Connect
// envelope of streaming requests (api/e2b_connect.h) and multipart uploads (api/multipart.h).
//
// Input: any bytes. Invariants:
//  1. ParseConnectRequestEnvelope succeeds exactly for one uncompressed, non-final envelope
//     whose length is the rest of the body and at most the limit; its message re-encodes to the
//     input; a failure is invalid_argument or payload_too_large.
//  2. MultipartBoundary never crashes; a boundary it returns is 1..70 characters.
//  3. ParseMultipart never crashes, returns at most max_parts parts, and every part's data is
//     bytes of the body (the first line of the input, after "--", is tried as the boundary);
//     MultipartReader fed one byte per read (an upload split anywhere) agrees with it exactly.
//  4. GunzipBounded (gzip uploads, api/gzip.h) never returns more than its limit; a failure is
//     invalid_argument or payload_too_large.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/e2b_connect.h"
#include "api/gzip.h"
#include "api/multipart.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  // 1.
  constexpr size_t kMax = 1024;
  auto msg = asb::api::ParseConnectRequestEnvelope(in, kMax);
  const bool well_formed = [&] {
    if (in.size() < 5 || in[0] != 0) return false;
    uint32_t n = 0;
    for (size_t i = 1; i < 5; ++i) n = (n << 8) | static_cast<uint8_t>(in[i]);
    return n <= kMax && n == in.size() - 5;
  }();
  ASB_FUZZ_CHECK(msg.has_value() == well_formed);
  if (msg) {
    ASB_FUZZ_CHECK(asb::api::ConnectEnvelope(0, *msg) == in);
  } else {
    const auto code = msg.error().code();
    ASB_FUZZ_CHECK(code == asb::ErrorCode::kInvalidArgument || code == asb::ErrorCode::kTooLarge);
  }

  // 2.
  auto boundary = asb::api::MultipartBoundary(in);
  if (boundary) ASB_FUZZ_CHECK(!boundary->empty() && boundary->size() <= 70);

  // 3.
  std::string b = "b";
  if (in.size() > 2 && in.substr(0, 2) == "--") {
    size_t eol = in.find("\r\n");
    if (eol != std::string_view::npos && eol > 2 && eol - 2 <= 70) b = in.substr(2, eol - 2);
  }
  constexpr size_t kMaxParts = 8;
  auto parts = asb::api::ParseMultipart(in, b, kMaxParts);
  if (parts) {
    ASB_FUZZ_CHECK(parts->size() <= kMaxParts);
    size_t total = 0;
    for (const auto& p : *parts) {
      ASB_FUZZ_CHECK(in.find(p.data) != std::string_view::npos);  // bytes of the body, as sent
      total += p.data.size();
    }
    ASB_FUZZ_CHECK(total <= in.size());
  }
  // The streaming reader fed a byte at a time (an upload's reads split anywhere) finds the
  // same parts, or fails the same way.
  {
    size_t at = 0;
    asb::api::MultipartReader reader(
        [&](char* buf, size_t n) -> asb::Result<size_t> {
          if (at == in.size() || n == 0) return size_t{0};
          buf[0] = in[at++];
          return size_t{1};
        },
        b, kMaxParts);
    std::vector<asb::api::MultipartPart> slow;
    bool ok = true;
    for (;;) {
      auto part = reader.NextPart();
      if (!part) {
        ok = false;
        break;
      }
      if (!*part) break;
      char c[7];
      for (;;) {
        auto n = reader.ReadData(c, sizeof c);
        if (!n) {
          ok = false;
          break;
        }
        if (*n == 0) break;
        (*part)->data.append(c, *n);
      }
      if (!ok) break;
      slow.push_back(std::move(**part));
    }
    ASB_FUZZ_CHECK(ok == static_cast<bool>(parts));
    if (ok && parts) {
      ASB_FUZZ_CHECK(slow.size() == parts->size());
      for (size_t i = 0; i < slow.size(); ++i) {
        ASB_FUZZ_CHECK(slow[i].data == (*parts)[i].data && slow[i].name == (*parts)[i].name &&
                       slow[i].filename == (*parts)[i].filename);
      }
    }
  }

  // 4.
  constexpr uint64_t kMaxInflated = 64 * 1024;
  auto inflated = asb::api::GunzipBounded(in, kMaxInflated);
  if (inflated) {
    ASB_FUZZ_CHECK(inflated->size() <= kMaxInflated);
  } else {
    const auto code = inflated.error().code();
    ASB_FUZZ_CHECK(code == asb::ErrorCode::kInvalidArgument || code == asb::ErrorCode::kTooLarge);
  }
  return 0;
}
