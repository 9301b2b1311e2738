#include "api/multipart.h"

#include <cstring>

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

namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;
constexpr size_t kReadBytes = 64 * 1024;

// The header block of a part (without its final blank line) into `part`.
Status ParsePartHeaders(std::string_view headers, MultipartPart* part) {
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
      part->name = Param(value, "name");
      part->filename = Param(value, "filename");
    } else if (name == "content-type") {
      part->content_type = std::string(value);
    }
  }
  return {};
}

}  // namespace

// The body is read as if it began with CRLF, so the opening delimiter (which may start the
// body) is found like every other one.
MultipartReader::MultipartReader(ByteSource source, std::string_view boundary, size_t max_parts)
    : source_(std::move(source)),
      delim_("\r\n--" + std::string(boundary)),
      max_parts_(max_parts),
      buf_("\r\n") {}

Result<bool> MultipartReader::Fill() {
  if (eof_) return false;
  if (pos_ > kReadBytes) {  // drop what has been handed out
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const size_t old = buf_.size();
  buf_.resize(old + kReadBytes);
  auto n = source_(buf_.data() + old, kReadBytes);
  buf_.resize(old + (n ? *n : 0));
  if (!n) return Fail(n.error());
  if (*n == 0) eof_ = true;
  return *n != 0;
}

Status MultipartReader::AfterDelimiter() {
  // "--" closes the body; otherwise transport padding (spaces, tabs) and CRLF open a part.
  for (;;) {
    size_t i = pos_;
    if (buf_.size() - i >= 2 && buf_.compare(i, 2, "--") == 0) {
      pos_ = i + 2;
      state_ = State::kDone;
      return SkipToEnd();
    }
    while (i < buf_.size() && (buf_[i] == ' ' || buf_[i] == '\t') && i - pos_ < 256) ++i;
    if (buf_.size() - i >= 2) {
      if (buf_.compare(i, 2, "\r\n") != 0) {
        return Fail(Error::InvalidArgument("multipart: a boundary is not followed by CRLF"));
      }
      if (parts_ == max_parts_) {
        return Fail(
            Error::LimitExceeded("multipart: more than " + std::to_string(max_parts_) + " parts"));
      }
      ++parts_;
      pos_ = i + 2;
      state_ = State::kHeaders;
      return {};
    }
    if (i - pos_ >= 256) {
      return Fail(Error::InvalidArgument("multipart: a boundary is not followed by CRLF"));
    }
    ASB_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Fail(Error::InvalidArgument("multipart: the body ends after a boundary"));
  }
}

Status MultipartReader::SkipToEnd() {
  // The epilogue is ignored, but read: the request is over only at the body's end.
  for (;;) {
    pos_ = buf_.size();
    ASB_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return {};
  }
}

Result<size_t> MultipartReader::ReadData(char* buf, size_t n) {
  if (state_ != State::kData) return size_t{0};
  for (;;) {
    const size_t found = buf_.find(delim_, pos_);
    // Bytes that cannot be the start of a delimiter are the part's.
    const size_t safe = found != std::string::npos            ? found
                        : buf_.size() >= pos_ + delim_.size() ? buf_.size() - delim_.size() + 1
                                                              : pos_;
    if (safe > pos_) {
      const size_t take = std::min(n, safe - pos_);
      std::memcpy(buf, buf_.data() + pos_, take);
      pos_ += take;
      return take;
    }
    if (found == pos_) {
      pos_ += delim_.size();
      ASB_TRY(AfterDelimiter());
      return size_t{0};
    }
    ASB_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Fail(Error::InvalidArgument("multipart: a part has no closing boundary"));
  }
}

Result<std::optional<MultipartPart>> MultipartReader::NextPart() {
  char skip[4096];
  while (state_ == State::kData) ASB_TRY(ReadData(skip, sizeof skip));
  while (state_ == State::kPreamble) {
    const size_t found = buf_.find(delim_, pos_);
    if (found != std::string::npos) {
      pos_ = found + delim_.size();
      ASB_TRY(AfterDelimiter());
      break;
    }
    if (buf_.size() >= pos_ + delim_.size()) pos_ = buf_.size() - delim_.size() + 1;
    ASB_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Fail(Error::InvalidArgument("multipart: the opening boundary is missing"));
  }
  if (state_ == State::kDone) return std::optional<MultipartPart>();
  // kHeaders: up to the blank line (at once for a part without headers).
  MultipartPart part;
  for (;;) {
    if (buf_.size() - pos_ >= 2 && buf_.compare(pos_, 2, "\r\n") == 0) {
      pos_ += 2;
      break;
    }
    const size_t end = buf_.find("\r\n\r\n", pos_);
    if (end != std::string::npos) {
      ASB_TRY(ParsePartHeaders(std::string_view(buf_).substr(pos_, end - pos_), &part));
      pos_ = end + 4;
      break;
    }
    if (buf_.size() - pos_ > kMaxHeaderBytes) {
      return Fail(Error::LimitExceeded("multipart: a part's headers pass 16 KiB"));
    }
    ASB_ASSIGN_OR_RETURN(bool more, Fill());
    if (!more) return Fail(Error::InvalidArgument("multipart: a part's headers do not end"));
  }
  state_ = State::kData;
  return std::optional<MultipartPart>(std::move(part));
}

Result<std::vector<MultipartPart>> ParseMultipart(std::string_view body, std::string_view boundary,
                                                  size_t max_parts) {
  size_t at = 0;
  MultipartReader reader(
      [&](char* buf, size_t n) -> Result<size_t> {
        const size_t take = std::min(n, body.size() - at);
        std::memcpy(buf, body.data() + at, take);
        at += take;
        return take;
      },
      boundary, max_parts);
  std::vector<MultipartPart> parts;
  for (;;) {
    ASB_ASSIGN_OR_RETURN(std::optional<MultipartPart> part, reader.NextPart());
    if (!part) return parts;
    char chunk[4096];
    for (;;) {
      ASB_ASSIGN_OR_RETURN(size_t n, reader.ReadData(chunk, sizeof chunk));
      if (n == 0) break;
      part->data.append(chunk, n);
    }
    parts.push_back(std::move(*part));
  }
}

}  // namespace asb::api
