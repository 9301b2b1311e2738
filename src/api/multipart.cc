#include "api/multipart.h"

#include "api/text.h"

namespace asb::api {

namespace {

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `key` of a header value such as `form-data; name="file"; filename=x`:
// quoted (with \" and \\ escapes) or a bare token. "" when absent.
std::string Param(std::string_view value, std::string_view key) {
  size_t i = value.find(';');
  while (i != std::string_view::npos) {
    std::string_view rest = TrimSpaces(value.substr(i + 1));
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return "";
    std::string_view k = TrimSpaces(rest.substr(0, eq));
    std::string_view v = rest.substr(eq + 1);
    std::string out;
    size_t end = 0;
    if (!v.empty() && v.front() == '"') {
      size_t j = 1;
      for (; j < v.size() && v[j] != '"'; ++j) {
        if (v[j] == '\\' && j + 1 < v.size()) ++j;
        out.push_back(v[j]);
      }
      end = j + 1;
    } else {
      end = v.find(';');
      out = std::string(TrimSpaces(v.substr(0, end)));
    }
    if (AsciiLower(k) == key) return out;
    if (end >= v.size()) return "";
    i = (v.data() + end) - value.data();
    i = value.find(';', i);
  }
  return "";
}

}  // namespace

Result<std::string> MultipartBoundary(std::string_view content_type) {
  const std::string lower = AsciiLower(content_type);
  if (lower.rfind("multipart/", 0) != 0) {
    return Fail(Error::InvalidArgument("Content-Type: a multipart/form-data body is expected"));
  }
  std::string b = Param(content_type, "boundary");
  if (b.empty() || b.size() > 70) {
    return Fail(Error::InvalidArgument("Content-Type: multipart without a usable boundary"));
  }
  return b;
}

Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body, std::string_view boundary,
                                                  size_t max_parts) {
  const std::string delim = "--" + std::string(boundary);
  const std::string next = "\r\n" + delim;
  size_t pos = body.find(delim);
  if (pos == std::string_view::npos) {
    return Fail(Error::InvalidArgument("multipart: the opening boundary is missing"));
  }
  pos += delim.size();
  std::vector<MultipartPart> parts;
  while (true) {
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    // Transport padding may follow a delimiter before its CRLF (RFC 2046, section 5.1.1).
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") {
      return Fail(Error::InvalidArgument("multipart: a boundary is not followed by CRLF"));
    }
    pos += 2;
    if (parts.size() == max_parts) {
      return Fail(
          Error::LimitExceeded("multipart: more than " + std::to_string(max_parts) + " parts"));
    }
    const size_t head_end = body.find("\r\n\r\n", pos);
    const size_t end = body.find(next, pos);
    if (end == std::string_view::npos) {
      return Fail(Error::InvalidArgument("multipart: a part has no closing boundary"));
    }
    MultipartPart part;
    size_t data_start = 0;
    if (body.substr(pos, 2) == "\r\n") {
      data_start = pos + 2;  // a part without headers
    } else if (head_end == std::string_view::npos || head_end > end) {
      return Fail(Error::InvalidArgument("multipart: a part's headers do not end"));
    } else {
      std::string_view headers = body.substr(pos, head_end - pos);
      while (!headers.empty()) {
        size_t eol = headers.find("\r\n");
        std::string_view line = headers.substr(0, eol);
        headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
        size_t colon = line.find(':');
        if (colon == std::string_view::npos) {
          return Fail(Error::InvalidArgument("multipart: a header line without ':'"));
        }
        const std::string name = AsciiLower(TrimSpaces(line.substr(0, colon)));
        std::string_view value = TrimSpaces(line.substr(colon + 1));
        if (name == "content-disposition") {
          part.name = Param(value, "name");
          part.filename = Param(value, "filename");
        } else if (name == "content-type") {
          part.content_type = std::string(value);
        }
      }
      data_start = head_end + 4;
    }
    part.data = body.substr(data_start, end - data_start);
    parts.push_back(std::move(part));
    pos = end + next.size();
  }
}

}  // namespace asb::api
