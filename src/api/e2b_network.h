// E2B's egress rules on our egress policy (docs/e2b.md, "Network"; ADR 0013 holds the policy).
//
// E2B states a sandbox's egress as two lists and a switch: `allowOut` and `denyOut` (IPs, CIDRs
// and, in allowOut only, domains and "*.domain"), where an allowed entry always wins over a
// denied one and "0.0.0.0/0" in denyOut means all traffic, and `allow_internet_access: false`,
// which is the same as denyOut ["0.0.0.0/0"]. Our policy (isolation/net/policy.h) has the other
// precedence: deny wins, and a non-empty allow list allows only itself. This file turns the one
// into the other without changing what is enforced:
//  - all traffic denied: our allow_out is E2B's allowOut (only it is reachable; its domains are
//    the only names the resolver answers); with an empty allowOut, our deny_out ["0.0.0.0/0"],
//    under which the resolver answers no name at all;
//  - otherwise everything is allowed but denyOut, less what allowOut carves out of it: each
//    allowed address range is cut out of the denied ranges (a /8 less one /32 is 24 ranges),
//    so our deny-wins list denies exactly E2B's set. An allowed domain there adds nothing (all
//    names resolve), except that its addresses stay denied when they fall in a denied range
//    (E2B would let that domain through; the policy has no per-name address exception).
// Rules carry no port or protocol on E2B (our "10.0.0.0/8:443/tcp" form is refused here).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/net/policy.h"

namespace asb::api {

/// E2B's all-traffic selector (the SDK's `allTraffic`).
inline constexpr char kE2bAllTraffic[] = "0.0.0.0/0";

/// A sandbox's egress as E2B's create (`allow_internet_access` and `network.{allowOut,
/// denyOut}`) or PUT /sandboxes/{id}/network (the same at the top level) states it.
struct E2bEgress {
  std::optional<bool> allow_internet_access;  // absent: not said
  std::vector<std::string> allow_out;
  std::vector<std::string> deny_out;
};

/// Our policy enforcing `e` as E2B does (see above); bandwidth and burst come from `base` (the
/// server's default policy). Errors: kInvalidArgument naming the entry ("allowOut[1]: ...") for
/// an entry that is not an IP, a CIDR or (in allowOut) a domain, a domain in denyOut (E2B's rule:
/// deny rules take addresses only), or a result past isolation::net::kMaxRules ranges.
Result<isolation::net::NetworkPolicy> E2bEgressPolicy(const E2bEgress& e,
                                                      const isolation::net::NetworkPolicy& base);

/// E2B's view of an enforced policy, for GET /sandboxes/{id} (`network`, and
/// `allowInternetAccess` = !isolation::net::DeniesAllTraffic): the lists that, given back to
/// E2bEgressPolicy, enforce the same ({allowOut: P.allow_out, denyOut: [all]} for an allow list;
/// {denyOut: P.deny_out} else; a /v1 policy's own deny rules beside its allow list follow the
/// all-traffic entry). The carved ranges are shown as carved.
E2bEgress E2bEgressOf(const isolation::net::NetworkPolicy& p);

}  // namespace asb::api
