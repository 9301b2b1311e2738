#include "api/e2b_network.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace asb::api {
namespace {

namespace net = isolation::net;

uint32_t Ip(const char* dotted) {
  in_addr a{};
  EXPECT_EQ(::inet_pton(AF_INET, dotted, &a), 1) << dotted;
  return ntohl(a.s_addr);
}

// Whether our deny-wins policy rejects a direct connection to `addr` (address rules only: what
// the host's nftables rules decide for an address no resolver answer admitted).
bool Rejected(const net::NetworkPolicy& p, uint32_t addr) {
  auto covers = [&](const std::vector<std::string>& rules) {
    for (const std::string& text : rules) {
      auto r = net::ParseRule(text);
      if (!r || !r->address) continue;
      const int len = r->address->prefix_len;
      const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
      if ((addr & mask) == r->address->network) return true;
    }
    return false;
  };
  if (covers(p.deny_out)) return true;
  return !p.allow_out.empty() && !covers(p.allow_out);
}

Result<net::NetworkPolicy> Policy(std::optional<bool> internet, std::vector<std::string> allow,
                                  std::vector<std::string> deny) {
  E2bEgress e;
  e.allow_internet_access = internet;
  e.allow_out = std::move(allow);
  e.deny_out = std::move(deny);
  return E2bEgressPolicy(e, net::NetworkPolicy{});
}

TEST(E2bNetworkTest, InternetOnWithoutListsAllowsEverything) {
  auto p = Policy(true, {}, {});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->allow_out.empty());
  EXPECT_TRUE(p->deny_out.empty());
  EXPECT_FALSE(net::DeniesAllTraffic(*p));
  EXPECT_TRUE(net::NameAllowed(*p, "example.com"));
}

TEST(E2bNetworkTest, InternetOffDeniesEveryAddressAndEveryName) {
  for (auto p : {Policy(false, {}, {}), Policy(std::nullopt, {}, {kE2bAllTraffic})}) {
    ASSERT_TRUE(p) << p.error().ToString();
    EXPECT_EQ(p->deny_out, std::vector<std::string>{"0.0.0.0/0"});
    EXPECT_TRUE(net::DeniesAllTraffic(*p));
    EXPECT_TRUE(Rejected(*p, Ip("1.1.1.1")));
    // The resolver answers nothing: a question would still carry bytes to the upstream.
    EXPECT_FALSE(net::NameAllowed(*p, "example.com"));
  }
}

TEST(E2bNetworkTest, AllowListWithAllTrafficDeniedReachesOnlyTheList) {
  auto p = Policy(std::nullopt, {"api.example.com", "*.pypi.org", "8.8.8.8", "1.1.0.0/16"},
                  {kE2bAllTraffic, "9.9.9.9"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->allow_out, (std::vector<std::string>{"api.example.com", "*.pypi.org", "8.8.8.8/32",
                                                    "1.1.0.0/16"}));
  EXPECT_TRUE(p->deny_out.empty());
  EXPECT_FALSE(Rejected(*p, Ip("8.8.8.8")));
  EXPECT_FALSE(Rejected(*p, Ip("1.1.200.3")));
  EXPECT_TRUE(Rejected(*p, Ip("8.8.4.4")));
  EXPECT_TRUE(Rejected(*p, Ip("9.9.9.9")));
  EXPECT_TRUE(net::NameAllowed(*p, "api.example.com"));
  EXPECT_TRUE(net::NameAllowed(*p, "files.pypi.org"));
  EXPECT_FALSE(net::NameAllowed(*p, "example.com"));
  // allow_internet_access: false is all traffic denied too: the list still wins.
  auto q = Policy(false, {"api.example.com"}, {});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->allow_out, std::vector<std::string>{"api.example.com"});
  EXPECT_FALSE(net::DeniesAllTraffic(*q));
}

TEST(E2bNetworkTest, AnAllowedAddressIsCutOutOfADeniedRange) {
  auto p = Policy(std::nullopt, {"10.1.2.3", "10.200.0.0/16"}, {"10.0.0.0/8", "192.0.2.0/24"});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_TRUE(p->allow_out.empty());
  // 10/8 less a /32 is 24 ranges; the /16 lies in one of them, 10.128.0.0/9, which becomes 7;
  // + 192.0.2.0/24.
  EXPECT_EQ(p->deny_out.size(), 24u - 1 + 7 + 1);
  for (const char* ok :
       {"10.1.2.3", "10.200.0.1", "10.200.255.255", "11.0.0.1", "9.255.255.255", "192.0.3.1"}) {
    EXPECT_FALSE(Rejected(*p, Ip(ok))) << ok;
  }
  for (const char* no : {"10.0.0.0", "10.1.2.2", "10.1.2.4", "10.255.255.255", "10.199.255.255",
                         "10.201.0.0", "192.0.2.77"}) {
    EXPECT_TRUE(Rejected(*p, Ip(no))) << no;
  }
  // A wider allowed range removes the denied one; a disjoint one leaves it.
  auto q = Policy(true, {"10.0.0.0/7"}, {"10.0.0.0/8", "172.16.0.0/12"});
  ASSERT_TRUE(q);
  EXPECT_EQ(q->deny_out, std::vector<std::string>{"172.16.0.0/12"});
  // Domains in allowOut add nothing when everything is allowed anyway.
  auto r = Policy(std::nullopt, {"example.com"}, {"203.0.113.0/24"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->allow_out.empty());
  EXPECT_TRUE(net::NameAllowed(*r, "other.org"));
}

TEST(E2bNetworkTest, BadEntriesAreRefusedByName) {
  struct Case {
    std::vector<std::string> allow, deny;
    std::string says;
  };
  const Case cases[] = {
      {{}, {"example.com"}, "denyOut[0]: \"example.com\": deny rules take IP addresses"},
      {{"10.0.0.0/8:443"}, {}, "allowOut[0]: \"10.0.0.0/8:443\": an IP address or a CIDR"},
      {{"1.2.3.4", "10.0.0.0/33"}, {}, "allowOut[1]"},
      {{}, {"1.2.3.4", ""}, "denyOut[1]"},
  };
  for (const Case& c : cases) {
    auto p = Policy(std::nullopt, c.allow, c.deny);
    ASSERT_FALSE(p) << c.says;
    EXPECT_EQ(p.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(p.error().message().find(c.says), std::string::npos) << p.error().message();
  }
}

TEST(E2bNetworkTest, CarvingPastTheRuleLimitIsRefused) {
  std::vector<std::string> allow;
  for (int i = 1; i <= 20; ++i) allow.push_back(std::to_string(i) + ".0.0.1");
  auto p = Policy(std::nullopt, allow, {"0.0.0.0/1"});
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("more than 256 address ranges"), std::string::npos)
      << p.error().message();
  allow.resize(3);
  EXPECT_TRUE(Policy(std::nullopt, allow, {"0.0.0.0/1"}));
}

TEST(E2bNetworkTest, BandwidthComesFromTheServersDefault) {
  net::NetworkPolicy base;
  base.bandwidth_kbit = 10240;
  base.burst_kbit = 1024;
  base.deny_out = {"203.0.113.0/24"};  // the default's rules are replaced, not merged
  E2bEgress e;
  e.allow_out = {"example.com"};
  e.deny_out = {kE2bAllTraffic};
  auto p = E2bEgressPolicy(e, base);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->bandwidth_kbit, 10240u);
  EXPECT_EQ(p->burst_kbit, 1024u);
  EXPECT_TRUE(p->deny_out.empty());
}

TEST(E2bNetworkTest, TheE2bViewEnforcesTheSamePolicyAgain) {
  for (auto p : {Policy(true, {}, {}), Policy(false, {}, {}),
                 Policy(std::nullopt, {"a.example.com", "8.8.8.8"}, {kE2bAllTraffic}),
                 Policy(std::nullopt, {"10.1.2.3"}, {"10.0.0.0/8"})}) {
    ASSERT_TRUE(p);
    const E2bEgress view = E2bEgressOf(*p);
    EXPECT_EQ(view.allow_internet_access, !net::DeniesAllTraffic(*p));
    auto again = E2bEgressPolicy(view, net::NetworkPolicy{});
    ASSERT_TRUE(again) << again.error().ToString();
    EXPECT_EQ(*again, *p);
  }
}

}  // namespace
}  // namespace asb::api
