#include "api/preview.h"

#include <vector>

#include "api/text.h"
#include "api/url.h"

namespace asb::api {

namespace {

// "name:port" -> "name"; a bracketed IPv6 literal has no name we serve previews under.
std::string_view HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') return {};
  size_t colon = host.find(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

bool AllOf(std::string_view s, bool (*pred)(char)) {
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLowerHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f'); }
bool IsLabelChar(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || c == '-'; }

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string_view::npos ? s.npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<PreviewHost> ParsePreviewHost(std::string_view host, std::string_view domain) {
  const std::string name = AsciiLower(HostName(host));
  const std::string suffix = "." + AsciiLower(HostName(domain));
  if (suffix.size() < 2 || name.size() <= suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  std::string_view label(name.data(), name.size() - suffix.size());
  // <1-5 digits>-sb-<16 hex>
  size_t dash = label.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 5) return std::nullopt;
  std::string_view port = label.substr(0, dash);
  std::string_view rest = label.substr(dash + 1);
  if (!AllOf(port, IsDigit) || rest.size() != 3 + 16 || rest.substr(0, 3) != "sb-" ||
      !AllOf(rest.substr(3), IsLowerHex)) {
    return std::nullopt;
  }
  return PreviewHost{"sb_" + std::string(rest.substr(3)), std::string(port)};
}

std::string PreviewHostName(std::string_view domain, std::string_view sandbox_id, int64_t port) {
  std::string id(sandbox_id);
  for (char& c : id) {
    if (c == '_') c = '-';
  }
  return std::to_string(port) + "-" + id + "." + std::string(domain);
}

std::string PreviewUrl(const PreviewOptions& options, std::string_view sandbox_id, int64_t port,
                       std::string_view token) {
  return options.scheme + "://" + PreviewHostName(options.domain, sandbox_id, port) + "/?" +
         std::string(kPreviewTokenParam) + "=" + PercentEncode(token);
}

Status ValidatePreviewDomain(std::string_view domain) {
  std::string_view name = domain;
  if (size_t colon = domain.find(':'); colon != std::string_view::npos) {
    name = domain.substr(0, colon);
    std::string_view port = domain.substr(colon + 1);
    const bool digits = !port.empty() && port.size() <= 5 && AllOf(port, IsDigit);
    int64_t v = 0;
    for (char c : digits ? port : std::string_view()) v = v * 10 + (c - '0');
    if (v < 1 || v > 65535) {
      return Fail(Error::InvalidArgument("the port after ':' must be 1..65535"));
    }
  }
  if (name.empty() || name.size() > 200) {
    return Fail(Error::InvalidArgument("must be a domain name such as preview.example.com"));
  }
  for (std::string_view label : Split(name, '.')) {
    if (label.empty() || label.size() > 63 || !AllOf(label, IsLabelChar) || label.front() == '-' ||
        label.back() == '-') {
      return Fail(Error::InvalidArgument(
          "must be lowercase DNS labels (a-z, 0-9, '-') separated by dots, optionally "
          ":port, such as preview.example.com or localhost:8080"));
    }
  }
  return {};
}

std::string RemoveQueryParam(std::string_view target, std::string_view name,
                             std::optional<std::string>* value) {
  size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string kept;
  bool removed = false;
  for (std::string_view part : Split(target.substr(q + 1), '&')) {
    std::string_view raw_name = part.substr(0, part.find('='));
    std::optional<std::string> decoded = PercentDecode(raw_name, true);
    if (decoded && *decoded == name) {
      removed = true;
      std::string_view raw_value =
          raw_name.size() < part.size() ? part.substr(raw_name.size() + 1) : std::string_view();
      *value = PercentDecode(raw_value, true).value_or(std::string(raw_value));
      continue;
    }
    if (!kept.empty()) kept += '&';
    kept += part;
  }
  if (!removed) return std::string(target);
  std::string out(target.substr(0, q));
  if (!kept.empty()) out += "?" + kept;
  return out;
}

std::string PreviewCookieName(std::string_view sandbox_id, int64_t port, bool secure) {
  std::string name = secure ? "__Host-" : "";
  name += kPreviewCookiePrefix;
  name += std::to_string(port) + "_" + std::string(sandbox_id);
  return name;
}

std::string RemovePreviewCookies(std::string_view header, std::string_view own_name,
                                 std::vector<std::string>* candidates) {
  constexpr std::string_view kHostPrefix = "__Host-";
  std::string kept;
  for (std::string_view part : Split(header, ';')) {
    part = Trim(part);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string_view name = Trim(part.substr(0, eq));
    std::string_view bare = name;
    if (bare.rfind(kHostPrefix, 0) == 0) bare.remove_prefix(kHostPrefix.size());
    if (bare.rfind(kPreviewCookiePrefix, 0) == 0 || name == kLegacyPreviewCookie) {
      if (name == own_name || name == kLegacyPreviewCookie) {
        candidates->emplace_back(eq == std::string_view::npos ? std::string_view()
                                                              : Trim(part.substr(eq + 1)));
      }
      continue;
    }
    if (!kept.empty()) kept += "; ";
    kept += part;
  }
  return kept;
}

std::string PreviewSetCookie(std::string_view name, std::string_view token, int64_t max_age_seconds,
                             bool secure) {
  std::string c = std::string(name) + "=" + std::string(token) +
                  "; Path=/; Max-Age=" + std::to_string(max_age_seconds) +
                  "; HttpOnly; SameSite=Lax";
  if (secure) c += "; Secure";
  return c;
}

}  // namespace asb::api
