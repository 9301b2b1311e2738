#include "common/ids.h"

#include <sys/random.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace asb {

std::string HexU64(uint64_t v, int width) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*" PRIx64, width, v);
  return buf;
}

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string RandomHex(size_t n_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string raw(n_bytes, '\0');
  size_t got = 0;
  while (got < n_bytes) {
    ssize_t n = ::getrandom(raw.data() + got, n_bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::abort();
    }
    got += static_cast<size_t>(n);
  }
  std::string out;
  out.reserve(n_bytes * 2);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::string NewId(std::string_view prefix) {
  std::string id(prefix);
  id += RandomHex(8);
  return id;
}

bool IsValidId(std::string_view id, std::string_view prefix) {
  if (id.size() != prefix.size() + 16 || id.substr(0, prefix.size()) != prefix) return false;
  for (char c : id.substr(prefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace asb
