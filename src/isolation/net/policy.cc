#include "isolation/net/policy.h"

#include <arpa/inet.h>

#include <boost/json.hpp>
#include <cctype>
#include <charconv>

namespace asb::isolation::net {
namespace {

namespace json = boost::json;

Error Bad(std::string_view rule, std::string_view why) {
  return Error::InvalidArgument("rule '" + std::string(rule.substr(0, 80)) +
                                "': " + std::string(why));
}

bool ParseUint(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > max) return false;
  *out = v;
  return true;
}

Result<std::string> ParseDomain(std::string_view text) {
  std::string d(text);
  for (char& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!d.empty() && d.back() == '.') d.pop_back();
  std::string_view body = d;
  if (body.starts_with("*.")) body.remove_prefix(2);
  if (body.empty() || d.size() > kMaxDomainLength) return Fail(Bad(text, "bad domain length"));
  size_t label = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i == body.size() || body[i] == '.') {
      if (label == 0 || label > 63) return Fail(Bad(text, "empty or over-long label"));
      if (body[i - 1] == '-' || body[i - label] == '-') {
        return Fail(Bad(text, "a label may not start or end with '-'"));
      }
      label = 0;
      continue;
    }
    char c = body[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return Fail(Bad(text, "domains hold letters, digits, '-', '_' and '.', with '*.' first"));
    }
    ++label;
  }
  return d;
}

Result<AddressRule> ParseAddress(std::string_view text) {
  AddressRule r;
  std::string_view s = text;
  if (size_t slash = s.rfind('/'); slash != std::string_view::npos &&
                                   s.find(':') != std::string_view::npos && slash > s.find(':')) {
    r.proto = std::string(s.substr(slash + 1));
    if (r.proto != "tcp" && r.proto != "udp") return Fail(Bad(text, "proto must be tcp or udp"));
    s = s.substr(0, slash);
  }
  if (size_t colon = s.find(':'); colon != std::string_view::npos) {
    uint64_t port = 0;
    if (!ParseUint(s.substr(colon + 1), 65535, &port) || port == 0) {
      return Fail(Bad(text, "port must be 1..65535"));
    }
    r.port = static_cast<uint16_t>(port);
    s = s.substr(0, colon);
  }
  if (!r.proto.empty() && r.port == 0) return Fail(Bad(text, "a proto needs a port"));
  std::string_view addr = s;
  r.prefix_len = 32;
  if (size_t slash = s.find('/'); slash != std::string_view::npos) {
    uint64_t len = 0;
    if (!ParseUint(s.substr(slash + 1), 32, &len)) return Fail(Bad(text, "prefix must be 0..32"));
    r.prefix_len = static_cast<int>(len);
    addr = s.substr(0, slash);
  }
  in_addr a;
  std::string as(addr);
  if (as.empty() || as.size() > 15 || ::inet_pton(AF_INET, as.c_str(), &a) != 1) {
    return Fail(Bad(text, "not an IPv4 address, CIDR or domain"));
  }
  uint32_t mask = r.prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - r.prefix_len);
  r.network = ntohl(a.s_addr) & mask;
  return r;
}

std::vector<std::string> SplitCommaList(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view item = s.substr(start, end - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) {
      item.remove_prefix(1);
    }
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) {
      item.remove_suffix(1);
    }
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string AddressRule::ToString() const {
  in_addr a;
  a.s_addr = htonl(network);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  std::string s = std::string(buf) + "/" + std::to_string(prefix_len);
  if (port != 0) s += ":" + std::to_string(port);
  if (!proto.empty()) s += "/" + proto;
  return s;
}

Result<Rule> ParseRule(std::string_view text) {
  Rule r;
  if (text.empty() || text.size() > kMaxDomainLength + 2) return Fail(Bad(text, "bad length"));
  const char c = text.front();
  if (std::isdigit(static_cast<unsigned char>(c))) {
    // A domain may start with a digit too ("1password.com"): an address has only digits,
    // dots, '/', ':' and the proto.
    auto addr = ParseAddress(text);
    if (addr) {
      r.address = *addr;
      return r;
    }
    bool has_letter = false;
    for (char ch : text.substr(0, text.find(':'))) {
      has_letter = has_letter || std::isalpha(static_cast<unsigned char>(ch));
    }
    if (!has_letter) return Fail(addr.error());
  }
  ASB_ASSIGN_OR_RETURN(r.domain, ParseDomain(text));
  return r;
}

Result<NetworkPolicy> Canonicalize(const NetworkPolicy& p) {
  NetworkPolicy out;
  auto list = [](const std::vector<std::string>& in, std::string_view field,
                 std::vector<std::string>* dst) -> Status {
    if (in.size() > kMaxRules) {
      return Fail(Error::InvalidArgument(std::string(field) + ": at most " +
                                         std::to_string(kMaxRules) + " rules"));
    }
    for (size_t i = 0; i < in.size(); ++i) {
      auto r = ParseRule(in[i]);
      if (!r) {
        return Fail(Error::InvalidArgument(std::string(field) + "[" + std::to_string(i) +
                                           "]: " + r.error().message()));
      }
      std::string s = r->ToString();
      bool dup = false;
      for (const auto& e : *dst) dup = dup || e == s;
      if (!dup) dst->push_back(std::move(s));
    }
    return {};
  };
  ASB_TRY(list(p.allow_out, "allow_out", &out.allow_out));
  ASB_TRY(list(p.deny_out, "deny_out", &out.deny_out));
  if (p.bandwidth_kbit > kMaxBandwidthKbit) {
    return Fail(Error::InvalidArgument("bandwidth_kbit: must be 0 (unlimited) .. " +
                                       std::to_string(kMaxBandwidthKbit)));
  }
  if (p.burst_kbit > kMaxBandwidthKbit) {
    return Fail(Error::InvalidArgument("burst_kbit: must be 0 (derived) .. " +
                                       std::to_string(kMaxBandwidthKbit)));
  }
  if (p.bandwidth_kbit > 0 && p.bandwidth_kbit < 8) {
    return Fail(Error::InvalidArgument("bandwidth_kbit: below 8 kbit/s is not a usable link"));
  }
  if (p.burst_kbit > 0 && p.burst_kbit < 16) {
    return Fail(Error::InvalidArgument("burst_kbit: must be at least 16 (one 1500-byte frame)"));
  }
  out.bandwidth_kbit = p.bandwidth_kbit;
  out.burst_kbit = p.burst_kbit;
  return out;
}

std::string PolicyToJson(const NetworkPolicy& p) {
  json::object o;
  json::array a, d;
  for (const auto& s : p.allow_out) a.emplace_back(s);
  for (const auto& s : p.deny_out) d.emplace_back(s);
  o["allow_out"] = std::move(a);
  o["deny_out"] = std::move(d);
  o["bandwidth_kbit"] = p.bandwidth_kbit;
  o["burst_kbit"] = p.burst_kbit;
  return json::serialize(o);
}

Result<NetworkPolicy> PolicyFromJson(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec) return Fail(Error::InvalidArgument("network policy is not valid JSON: " + ec.message()));
  if (!v.is_object()) return Fail(Error::InvalidArgument("network policy must be a JSON object"));
  NetworkPolicy p;
  for (const auto& [key, val] : v.get_object()) {
    if (key == "allow_out" || key == "deny_out") {
      auto* dst = key == "allow_out" ? &p.allow_out : &p.deny_out;
      if (val.is_null()) continue;
      if (!val.is_array()) {
        return Fail(Error::InvalidArgument(std::string(key) + ": must be an array of strings"));
      }
      if (val.get_array().size() > kMaxRules) {
        return Fail(Error::InvalidArgument(std::string(key) + ": at most " +
                                           std::to_string(kMaxRules) + " rules"));
      }
      for (const auto& e : val.get_array()) {
        if (!e.is_string()) {
          return Fail(Error::InvalidArgument(std::string(key) + ": must be an array of strings"));
        }
        dst->emplace_back(e.get_string());
      }
    } else if (key == "bandwidth_kbit" || key == "burst_kbit") {
      auto* dst = key == "bandwidth_kbit" ? &p.bandwidth_kbit : &p.burst_kbit;
      if (val.is_null()) continue;
      if (val.is_uint64()) {
        *dst = val.get_uint64();
      } else if (val.is_int64() && val.get_int64() >= 0) {
        *dst = static_cast<uint64_t>(val.get_int64());
      } else {
        return Fail(Error::InvalidArgument(std::string(key) + ": must be an integer >= 0"));
      }
    } else {
      return Fail(Error::InvalidArgument("unknown field: " + std::string(key)));
    }
  }
  return Canonicalize(p);
}

Result<NetworkPolicy> PolicyFromSeedEnv(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k, const char* def) {
    auto it = env.find(k);
    return it == env.end() ? std::string(def) : it->second;
  };
  NetworkPolicy p;
  for (const char* kind : {"DNS", "DEST"}) {
    const std::string mode_var = std::string("VM_") + kind + "_MODE";
    const std::string list_var =
        std::string("VM_") + kind + (kind[1] == 'N' ? "_DOMAINS" : "_RULES");
    const std::string mode = get(mode_var.c_str(), "none");
    const auto items = SplitCommaList(get(list_var.c_str(), ""));
    if (mode == "none") continue;
    if (mode != "allow" && mode != "deny") {
      return Fail(Error::InvalidArgument(mode_var + " must be none, allow or deny"));
    }
    for (const auto& item : items) {
      // DNS lists hold domains, DEST lists hold address rules.
      auto r = ParseRule(item);
      if (!r) return Fail(Error::InvalidArgument(list_var + ": " + r.error().message()));
      if ((kind[1] == 'N') == r->address.has_value()) {
        return Fail(Error::InvalidArgument(list_var + ": '" + item + "' is not a " +
                                           (kind[1] == 'N' ? "domain" : "CIDR rule")));
      }
      (mode == "allow" ? p.allow_out : p.deny_out).push_back(item);
    }
  }
  const std::string bw = get("VM_BW_ENABLED", "false");
  if (bw != "true" && bw != "false") {
    return Fail(Error::InvalidArgument("VM_BW_ENABLED must be true or false"));
  }
  if (bw == "true") {
    for (auto [var, def, dst] : {std::tuple{"VM_BW_RATE_KBIT", "10240", &p.bandwidth_kbit},
                                 std::tuple{"VM_BW_BURST_KBIT", "1024", &p.burst_kbit}}) {
      if (!ParseUint(get(var, def), kMaxBandwidthKbit, dst)) {
        return Fail(Error::InvalidArgument(std::string(var) + " must be an integer"));
      }
    }
  }
  return Canonicalize(p).map_error(
      [](Error e) { return std::move(e).WithContext("server network policy"); });
}

bool DomainMatches(std::string_view pattern, std::string_view name) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  auto ieq = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) !=
          std::tolower(static_cast<unsigned char>(b[i]))) {
        return false;
      }
    }
    return true;
  };
  if (pattern.starts_with("*.")) {
    std::string_view suffix = pattern.substr(1);  // ".x"
    return name.size() > suffix.size() && ieq(name.substr(name.size() - suffix.size()), suffix);
  }
  return ieq(pattern, name);
}

bool DeniesAllTraffic(const NetworkPolicy& p) {
  for (const auto& r : p.deny_out) {
    if (r.empty() || !std::isdigit(static_cast<unsigned char>(r.front()))) continue;
    auto rule = ParseRule(r);
    if (rule && rule->address && rule->address->prefix_len == 0 && rule->address->port == 0 &&
        rule->address->proto.empty()) {
      return true;
    }
  }
  return false;
}

bool NameAllowed(const NetworkPolicy& p, std::string_view name) {
  if (DeniesAllTraffic(p)) return false;
  auto is_domain = [](const std::string& r) {
    return !r.empty() && r.find('/') == std::string::npos;
  };
  for (const auto& r : p.deny_out) {
    if (is_domain(r) && DomainMatches(r, name)) return false;
  }
  bool any_allowed_domain = false;
  for (const auto& r : p.allow_out) {
    if (!is_domain(r)) continue;
    any_allowed_domain = true;
    if (DomainMatches(r, name)) return true;
  }
  return !any_allowed_domain;
}

AddressClass ClassifyAddress(uint32_t a, std::string_view* range) {
  struct Range {
    uint32_t net;
    int len;
    AddressClass cls;
    std::string_view name;
  };
  static constexpr Range kRanges[] = {
      {0xFFFFFFFF, 32, AddressClass::kUnreachable, "broadcast"},
      {0x00000000, 8, AddressClass::kUnreachable, "this-network"},
      {0x7F000000, 8, AddressClass::kUnreachable, "loopback"},
      {0xA9FE0000, 16, AddressClass::kUnreachable, "link-local"},
      {0xE0000000, 4, AddressClass::kUnreachable, "multicast"},
      {0xF0000000, 4, AddressClass::kUnreachable, "reserved"},
      {0x0A000000, 8, AddressClass::kPrivate, "private"},
      {0xAC100000, 12, AddressClass::kPrivate, "private"},
      {0xC0A80000, 16, AddressClass::kPrivate, "private"},
      {0x64400000, 10, AddressClass::kPrivate, "shared"},
  };
  for (const auto& r : kRanges) {
    const uint32_t mask = ~uint32_t{0} << (32 - r.len);
    if ((a & mask) == r.net) {
      if (range) *range = r.name;
      return r.cls;
    }
  }
  if (range) *range = "";
  return AddressClass::kPublic;
}

std::string_view SpecialRange6(const unsigned char* b) {
  bool zero10 = true;
  for (int i = 0; i < 10; ++i) zero10 = zero10 && b[i] == 0;
  if (zero10 && b[10] == 0 && b[11] == 0 && b[12] == 0 && b[13] == 0 && b[14] == 0) {
    if (b[15] == 1) return "loopback";
    if (b[15] == 0) return "unspecified";
  }
  if ((b[0] & 0xFE) == 0xFC) return "ula";
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) return "link-local";
  if (b[0] == 0xFF) return "multicast";
  if (zero10 && b[10] == 0xFF && b[11] == 0xFF) {
    const uint32_t v4 =
        (uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15];
    if (ClassifyAddress(v4) != AddressClass::kPublic) return "v4-mapped";
  }
  return "";
}

bool AllowRuleCovers(const NetworkPolicy& p, uint32_t addr) {
  for (const auto& r : p.allow_out) {
    if (r.empty() || !std::isdigit(static_cast<unsigned char>(r.front()))) continue;
    auto rule = ParseRule(r);
    if (!rule || !rule->address) continue;
    const int len = rule->address->prefix_len;
    const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
    if ((addr & mask) == rule->address->network) return true;
  }
  return false;
}

}  // namespace asb::isolation::net
