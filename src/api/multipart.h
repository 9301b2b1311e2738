// A multipart/form-data body (RFC 7578) split into its parts, as envd's POST /files receives
// uploads from the `e2b` SDKs (one part named "file" per file, its filename the destination
// path). The whole body is in memory already (the server bounded it), so parts are views.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::api {

struct MultipartPart {
  std::string name;      // Content-Disposition's name="..."
  std::string filename;  // its filename="..." ("" when absent)
  std::string content_type;
  std::string_view data;  // into the body passed to ParseMultipart
};

/// The boundary parameter of a multipart Content-Type ("multipart/form-data; boundary=x").
/// Errors: kInvalidArgument (not multipart, no boundary, or one over 70 characters, RFC 2046).
Result<std::string> MultipartBoundary(std::string_view content_type);

/// The parts of `body` between `--boundary` delimiters, at most `max_parts`. Errors:
/// kInvalidArgument naming what is malformed (no opening delimiter, a part without headers or
/// without its closing delimiter, a header line without ':'), kLimitExceeded over max_parts.
Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body, std::string_view boundary,
                                                  size_t max_parts);

}  // namespace asb::api
