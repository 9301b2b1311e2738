// A multipart/form-data body (RFC 7578) split into its parts, as envd's POST /files receives
// uploads from the `e2b` SDKs (one part named "file" per file, its filename the destination
// path). MultipartReader reads one as it arrives, so an upload streams into the sandbox without
// being held whole (ADR 0014, round 3).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/http_types.h"
#include "common/result.h"

namespace asb::api {

struct MultipartPart {
  std::string name;      // Content-Disposition's name="..."
  std::string filename;  // its filename="..." ("" when absent)
  std::string content_type;
  std::string data;  // ParseMultipart only: MultipartReader hands data out with ReadData
};

/// Reads a multipart body from `source` part by part (RFC 2046 section 5.1.1: delimiters
/// "CRLF--boundary", transport padding, the closing "--boundary--"), holding at most one read
/// of it plus a delimiter's length. Errors of every call: kInvalidArgument naming what is
/// malformed, kLimitExceeded (a part's headers over 16 KiB, more than `max_parts` parts), and
/// the source's own.
class MultipartReader {
 public:
  MultipartReader(ByteSource source, std::string_view boundary, size_t max_parts);

  /// The next part's headers (its `data` empty), skipping what is left of the current part's
  /// data; std::nullopt after the closing delimiter, once the epilogue is read to its end.
  Result<std::optional<MultipartPart>> NextPart();
  /// Reads up to `n` bytes of the current part's data into `buf`; 0 at its end.
  Result<size_t> ReadData(char* buf, size_t n);

 private:
  enum class State { kPreamble, kHeaders, kData, kDone };
  Result<bool> Fill();      // reads more of the source; false at its end
  Status AfterDelimiter();  // at buf_[pos_] just past a delimiter: "--" or padding CRLF
  Status SkipToEnd();       // drains the epilogue

  ByteSource source_;
  const std::string delim_;  // "\r\n--" + boundary
  const size_t max_parts_;
  size_t parts_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  State state_ = State::kPreamble;
};

/// The boundary parameter of a multipart Content-Type ("multipart/form-data; boundary=x").
/// Errors: kInvalidArgument (not multipart, no boundary, or one over 70 characters, RFC 2046).
Result<std::string> MultipartBoundary(std::string_view content_type);

/// The parts of a whole `body` with their data (a MultipartReader over it). Errors: as
/// MultipartReader's (no opening delimiter, a part without its closing delimiter, a header line
/// without ':'), kLimitExceeded over max_parts.
Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body, std::string_view boundary,
                                                  size_t max_parts);

}  // namespace asb::api
