// E2B's egress rules on our egress policy (e2b_network.h).
#include "api/e2b_network.h"

#include <cstdint>

namespace asb::api {

namespace net = isolation::net;

namespace {

// An IPv4 range: network (host order, masked) and prefix length.
struct Range {
  uint32_t network = 0;
  int len = 32;
};

uint32_t Mask(int len) { return len == 0 ? 0 : ~uint32_t{0} << (32 - len); }

bool Contains(Range outer, Range inner) {
  return outer.len <= inner.len && (inner.network & Mask(outer.len)) == outer.network;
}

// `denied` less `allowed`: nothing when `allowed` covers it, itself when they do not meet, else
// the siblings along the path from `denied` down to `allowed` (one range per bit of prefix
// between them), which together cover exactly denied \ allowed.
std::vector<Range> Subtract(Range denied, Range allowed) {
  if (Contains(allowed, denied)) return {};
  if (!Contains(denied, allowed)) return {denied};
  std::vector<Range> out;
  for (int len = denied.len + 1; len <= allowed.len; ++len) {
    const uint32_t bit = uint32_t{1} << (32 - len);
    out.push_back({(allowed.network & Mask(len)) ^ bit, len});
  }
  return out;
}

std::string RangeText(Range r) {
  net::AddressRule a;
  a.network = r.network;
  a.prefix_len = r.len;
  return a.ToString();
}

// One entry of allowOut or denyOut: an IP, a CIDR, or (allow only) a domain.
Result<net::Rule> ParseEntry(const std::string& text, std::string_view list, size_t i,
                             bool domains_ok) {
  const std::string where = std::string(list) + "[" + std::to_string(i) + "]";
  auto rule = net::ParseRule(text);
  if (!rule) {
    return Fail(Error::InvalidArgument(where + ": " + std::string(rule.error().message())));
  }
  if (rule->address && (rule->address->port != 0 || !rule->address->proto.empty())) {
    return Fail(Error::InvalidArgument(where + ": \"" + text +
                                       "\": an IP address or a CIDR block, without a port"));
  }
  if (!rule->address && !domains_ok) {
    return Fail(Error::InvalidArgument(
        where + ": \"" + text +
        "\": deny rules take IP addresses and CIDR blocks only; to allow only some domains, "
        "list them in allowOut and deny 0.0.0.0/0"));
  }
  return *rule;
}

}  // namespace

Result<net::NetworkPolicy> E2bEgressPolicy(const E2bEgress& e, const net::NetworkPolicy& base) {
  std::vector<net::Rule> allow, deny;
  for (size_t i = 0; i < e.allow_out.size(); ++i) {
    ASB_ASSIGN_OR_RETURN(net::Rule r, ParseEntry(e.allow_out[i], "allowOut", i, true));
    allow.push_back(std::move(r));
  }
  bool deny_all = e.allow_internet_access.has_value() && !*e.allow_internet_access;
  for (size_t i = 0; i < e.deny_out.size(); ++i) {
    ASB_ASSIGN_OR_RETURN(net::Rule r, ParseEntry(e.deny_out[i], "denyOut", i, false));
    deny_all = deny_all || r.address->prefix_len == 0;
    deny.push_back(std::move(r));
  }
  net::NetworkPolicy p;
  p.bandwidth_kbit = base.bandwidth_kbit;
  p.burst_kbit = base.burst_kbit;
  if (deny_all) {
    // Only the allow list is reachable, which is what a non-empty allow_out means to us.
    for (const net::Rule& r : allow) p.allow_out.push_back(r.ToString());
    if (p.allow_out.empty()) p.deny_out.push_back(kE2bAllTraffic);
  } else {
    std::vector<Range> denied;
    for (const net::Rule& r : deny) denied.push_back({r.address->network, r.address->prefix_len});
    for (const net::Rule& a : allow) {
      if (!a.address) continue;  // every name resolves already
      std::vector<Range> left;
      for (Range d : denied) {
        for (Range piece : Subtract(d, {a.address->network, a.address->prefix_len})) {
          left.push_back(piece);
        }
        if (left.size() > net::kMaxRules) break;
      }
      denied = std::move(left);
    }
    if (denied.size() > net::kMaxRules) {
      return Fail(Error::InvalidArgument("network: allowOut cuts denyOut into more than " +
                                         std::to_string(net::kMaxRules) +
                                         " address ranges; deny fewer or wider ranges"));
    }
    for (Range d : denied) p.deny_out.push_back(RangeText(d));
  }
  auto canonical = net::Canonicalize(p);
  if (!canonical) return Fail(Error::InvalidArgument("network: " + canonical.error().message()));
  return *canonical;
}

E2bEgress E2bEgressOf(const net::NetworkPolicy& p) {
  E2bEgress e;
  if (p.allow_out.empty()) {
    e.deny_out = p.deny_out;
  } else {
    e.allow_out = p.allow_out;
    e.deny_out.push_back(kE2bAllTraffic);
    for (const std::string& d : p.deny_out) {
      if (d != kE2bAllTraffic) e.deny_out.push_back(d);
    }
  }
  e.allow_internet_access = !net::DeniesAllTraffic(p);
  return e;
}

}  // namespace asb::api
