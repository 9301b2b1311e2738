#include "api/text.h"

#include <ctime>

namespace asb::api {

namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// Length of the well-formed UTF-8 sequence at the start of `s`: 1..4, 0 if invalid, or -n
// when `s` is a valid but incomplete prefix of an n-byte sequence.
int SequenceLength(std::string_view s) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  int n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < n; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return -n;
    unsigned char x = b(i);
    if (i == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) return 0;
  }
  return n;
}

// Appends the sanitized text of `in` to `out`; if `hold` is non-null, an incomplete sequence at
// the end is stored there instead of being replaced.
void Sanitize(std::string_view in, std::string* out, std::string* hold) {
  size_t i = 0;
  while (i < in.size()) {
    int n = SequenceLength(in.substr(i));
    if (n > 0) {
      out->append(in.substr(i, n));
      i += n;
    } else if (n < 0 && hold != nullptr) {
      hold->assign(in.substr(i));
      return;
    } else {
      out->append(kReplacement);
      i += 1;
      if (n < 0) {
        // An incomplete sequence at the very end of the stream: one replacement for it all.
        return;
      }
    }
  }
}

}  // namespace

std::string SanitizeUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  Sanitize(in, &out, nullptr);
  return out;
}

std::string Utf8Stream::Feed(std::string_view chunk) {
  std::string input = std::move(pending_);
  pending_.clear();
  input.append(chunk);
  std::string out;
  out.reserve(input.size());
  Sanitize(input, &out, &pending_);
  return out;
}

std::string Utf8Stream::Flush() {
  std::string out;
  Sanitize(pending_, &out, nullptr);
  pending_.clear();
  return out;
}

std::string Base64Encode(std::string_view in) {
  static const char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  auto u = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = u(i) << 16 | u(i + 1) << 8 | u(i + 2);
    out.push_back(kTable[v >> 18]);
    out.push_back(kTable[(v >> 12) & 63]);
    out.push_back(kTable[(v >> 6) & 63]);
    out.push_back(kTable[v & 63]);
  }
  if (i + 1 == in.size()) {
    uint32_t v = u(i) << 16;
    out.push_back(kTable[v >> 18]);
    out.push_back(kTable[(v >> 12) & 63]);
    out.append("==");
  } else if (i + 2 == in.size()) {
    uint32_t v = u(i) << 16 | u(i + 1) << 8;
    out.push_back(kTable[v >> 18]);
    out.push_back(kTable[(v >> 12) & 63]);
    out.push_back(kTable[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

std::string FormatRfc3339(int64_t unix_ms) {
  int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
  int ms = static_cast<int>(unix_ms - secs * 1000);
  time_t t = static_cast<time_t>(secs);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[64];
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

std::string FormatMode(uint32_t mode) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%04o", mode & 07777);
  return buf;
}

Result<std::string> Base64Decode(std::string_view in, std::string_view field) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  auto bad = [field] {
    return Fail(Error::InvalidArgument(std::string(field) + ": not valid base64"));
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) return bad();
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (bits >= 6) return bad();
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace asb::api
