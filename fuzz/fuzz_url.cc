// libFuzzer target: request-target parsing (api/url.h) and route matching (api/router.h).
//
// Input: a request target. Invariants:
//  1. PercentDecode never crashes; it fails exactly when some '%' is not followed by two hex
//     digits, and PercentDecode(PercentEncode(s)) == s for every s;
//  2. SplitTarget never crashes, and a target without '%' or '?' is its own path;
//  3. Router::Find on the real routing table: a match's params are non-empty, contain no '/'
//     (except a tail route's last one, the rest of the path), and a failed match is a 404 or a
//     405 with an Allow header value.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "api/url.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_check.h"

namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool WellFormedEscapes(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') continue;
    if (i + 2 >= s.size()) return false;
    if (!IsHex(s[i + 1]) || !IsHex(s[i + 2])) return false;
    i += 2;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);

  // 1.
  for (bool plus : {false, true}) {
    auto decoded = asb::api::PercentDecode(in, plus);
    ASB_FUZZ_CHECK(decoded.has_value() == WellFormedEscapes(in));
    if (decoded) ASB_FUZZ_CHECK(decoded->size() <= in.size());
    auto back = asb::api::PercentDecode(asb::api::PercentEncode(in), plus);
    ASB_FUZZ_CHECK(back.has_value() && *back == in);
  }

  // 2.
  std::string path;
  std::map<std::string, std::string> query;
  asb::api::SplitTarget(in, &path, &query);
  if (in.find_first_of("%?") == std::string_view::npos) ASB_FUZZ_CHECK(path == in);

  // 3. The method is the part before the first space (or GET).
  size_t sp = in.find(' ');
  std::string method = sp == std::string_view::npos ? "GET" : std::string(in.substr(0, sp));
  auto m = asb::fuzz::ApiRouter().Find(method, path);
  if (m.route) {
    ASB_FUZZ_CHECK(m.status == 0);
    // A tail route's last {name} takes the rest of the path, '/' included and possibly empty
    // (RouteOptions::tail: the exposed-ports proxy's {path}); every other parameter is one
    // non-empty segment.
    std::string tail_name;
    if (m.route->options.tail) {
      const std::string& pattern = m.route->pattern;
      size_t open = pattern.rfind('{');
      ASB_FUZZ_CHECK(open != std::string::npos && pattern.back() == '}');
      tail_name = pattern.substr(open + 1, pattern.size() - open - 2);
    }
    for (const auto& [name, value] : m.params) {
      if (name == tail_name) continue;
      ASB_FUZZ_CHECK(!value.empty());
      ASB_FUZZ_CHECK(value.find('/') == std::string::npos);
    }
  } else {
    ASB_FUZZ_CHECK(m.status == 404 || m.status == 405);
    if (m.status == 405) ASB_FUZZ_CHECK(!m.allow.empty());
  }
  return 0;
}
