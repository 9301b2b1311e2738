// Egress policy of a networked sandbox (ADR 0013): which destinations it may reach,
// which names its resolver answers, and its bandwidth. Pure data + parsing; the host side
// (host_network.h) turns it into nftables rules, resolver decisions and tc qdiscs.
//
// Rules are strings in seed A's syntax (VM_DNS_DOMAINS, VM_DEST_RULES):
//   domain:  "github.com", "*.npmjs.org"  ("*." matches every name strictly below it)
//   address: "10.0.0.0/8", "1.2.3.4" (= /32), "10.0.0.0/8:443" (tcp and udp),
//            "10.0.0.0/8:443/tcp", "0.0.0.0/0:53/udp"
// Semantics:
//  - deny_out wins over allow_out. A denied domain is answered NXDOMAIN by the resolver; a
//    denied address rule rejects packets at once (also on established connections).
//  - An empty allow_out allows every destination that is not denied. A non-empty allow_out
//    allows only its address rules plus the addresses the resolver answered for its domains;
//    a direct connection to any other address is rejected. When allow_out names at least one
//    domain, the resolver answers only names matching an allowed domain.
//  - The always-on rules (metadata/link-local, host addresses, other sandboxes) hold whatever
//    the policy says.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace asb::isolation::net {

/// One parsed address rule: prefix/len, optional port, proto "tcp", "udp" or "" (both).
struct AddressRule {
  uint32_t network = 0;  // host byte order, already masked
  int prefix_len = 32;
  uint16_t port = 0;  // 0 = every port
  std::string proto;  // "", "tcp", "udp"
  /// Canonical text: "10.0.0.0/8:443/tcp".
  std::string ToString() const;
  bool operator==(const AddressRule&) const = default;
};

/// A parsed rule: exactly one of domain (lower case, "*." kept) / address.
struct Rule {
  std::string domain;
  std::optional<AddressRule> address;
  std::string ToString() const { return address ? address->ToString() : domain; }
};

struct NetworkPolicy {
  std::vector<std::string> allow_out;  // rule strings as given (canonicalised by Parse)
  std::vector<std::string> deny_out;
  uint64_t bandwidth_kbit = 0;  // 0 = unlimited; both directions, kbit/s (1000 bit/s)
  uint64_t burst_kbit = 0;      // 0 = derived from the rate (20 ms worth, at least 32 kbit)

  bool operator==(const NetworkPolicy&) const = default;
};

/// Most rules per list, longest domain (RFC 1035 2.3.4), highest rate (100 Gbit/s).
inline constexpr size_t kMaxRules = 256;
inline constexpr size_t kMaxDomainLength = 253;
inline constexpr uint64_t kMaxBandwidthKbit = 100'000'000;

/// Parses one rule string. Errors: kInvalidArgument naming the rule and what is wrong.
Result<Rule> ParseRule(std::string_view text);

/// Validates and canonicalises (domains lower-cased, addresses as ToString) a policy.
/// Errors: kInvalidArgument ("allow_out[2]: ...", "bandwidth_kbit: ...").
Result<NetworkPolicy> Canonicalize(const NetworkPolicy& p);

/// JSON object {"allow_out":[...],"deny_out":[...],"bandwidth_kbit":N,"burst_kbit":N}.
std::string PolicyToJson(const NetworkPolicy& p);
/// Strict parse of the object above (unknown fields and wrong types are errors; absent fields
/// take the defaults), canonicalised. Errors: kInvalidArgument.
Result<NetworkPolicy> PolicyFromJson(std::string_view text);

/// The server-wide default from seed A's variables (see ADR 0013):
///   VM_DNS_MODE none|allow|deny + VM_DNS_DOMAINS (comma list) -> domains in allow/deny_out,
///   VM_DEST_MODE none|allow|deny + VM_DEST_RULES (comma list) -> address rules,
///   VM_BW_ENABLED true|false, VM_BW_RATE_KBIT (10240), VM_BW_BURST_KBIT (1024).
/// `env` maps variable names to values (absent = default). Errors: kInvalidArgument naming the
/// variable.
Result<NetworkPolicy> PolicyFromSeedEnv(const std::map<std::string, std::string>& env);

/// True if `name` (any case, optional trailing dot) matches domain rule `pattern`: equal, or
/// for "*.x" a name ending in ".x".
bool DomainMatches(std::string_view pattern, std::string_view name);

/// Whether `p` lets nothing out: a deny_out address rule of every address ("0.0.0.0/0"), every
/// port and protocol. Deny wins, so no allow rule can reach anything.
bool DeniesAllTraffic(const NetworkPolicy& p);

/// The resolver's decision for a question name under `p` (already canonical): false when a
/// deny_out domain matches, or allow_out names domains and none matches, or the policy denies
/// all traffic (an answer would reach nothing, and each question would still carry the
/// sandbox's bytes to the upstream resolver: a channel out of a sandbox meant to have none).
bool NameAllowed(const NetworkPolicy& p, std::string_view name);

/// How far an address the resolver answered may widen a sandbox's egress (ADR 0013
/// addendum). kPublic: admitted (joins the sandbox's learned set). kPrivate: RFC 1918,
/// RFC 6598 (100.64/10) — reachable through the uplink but the host's private networks, so an
/// answer never admits it. kUnreachable: loopback, 0/8, link-local, multicast, 240/4 and
/// broadcast — the always-on rules reject them (or they never leave the sandbox).
enum class AddressClass { kPublic, kPrivate, kUnreachable };

/// The class of an IPv4 address (host order) and the name of its range ("" when public):
/// "loopback", "this-network", "link-local", "multicast", "reserved", "broadcast",
/// "private", "shared" (RFC 6598).
AddressClass ClassifyAddress(uint32_t addr, std::string_view* range = nullptr);
/// The name of the special IPv6 range holding `addr` (16 bytes, network order) — "loopback",
/// "unspecified", "ula" (fc00::/7), "link-local" (fe80::/10), "multicast" (ff00::/8),
/// "v4-mapped" for ::ffff:a.b.c.d of a non-public a.b.c.d — or "" when public.
std::string_view SpecialRange6(const unsigned char* addr);

/// True when an address rule of allow_out (any port, any proto) contains `addr`: the policy
/// names that range or address explicitly.
bool AllowRuleCovers(const NetworkPolicy& p, uint32_t addr);

}  // namespace asb::isolation::net
