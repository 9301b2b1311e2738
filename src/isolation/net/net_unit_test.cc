// Unit tests of the pure parts of networking: policy rules (seed A's syntax), the seed
// variables, domain matching, and DNS message parsing/building (RFC 1035 4.1).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "isolation/net/dns_resolver.h"
#include "isolation/net/policy.h"

namespace asb::isolation::net {
namespace {

TEST(NetPolicy, RulesInSeedSyntax) {
  auto r = ParseRule("10.0.0.0/8:443/tcp");
  ASSERT_TRUE(r) << r.error().ToString();
  ASSERT_TRUE(r->address);
  EXPECT_EQ(r->ToString(), "10.0.0.0/8:443/tcp");
  EXPECT_EQ(ParseRule("10.1.2.3/8")->ToString(), "10.0.0.0/8");  // masked
  EXPECT_EQ(ParseRule("169.254.169.254")->ToString(), "169.254.169.254/32");
  EXPECT_EQ(ParseRule("0.0.0.0/0:53")->ToString(), "0.0.0.0/0:53");
  EXPECT_EQ(ParseRule("1.2.3.4:65535/udp")->ToString(), "1.2.3.4/32:65535/udp");
  EXPECT_EQ(ParseRule("GitHub.COM.")->ToString(), "github.com");
  EXPECT_EQ(ParseRule("*.npmjs.org")->ToString(), "*.npmjs.org");
  EXPECT_EQ(ParseRule("1password.com")->ToString(), "1password.com");
  for (const char* bad :
       {"", "10.0.0.0/33", "10.0.0.0/8:0", "10.0.0.0/8:65536", "1.2.3.4/tcp", "10.0.0.0/8:443/icmp",
        "256.1.1.1", "a..b", "-a.com", "a b.com", "*.", "**.a.com", "a.*.com", "1.2.3"}) {
    EXPECT_FALSE(ParseRule(bad)) << bad;
  }
  EXPECT_TRUE(ParseRule(std::string(63, 'a') + ".com"));
  EXPECT_FALSE(ParseRule(std::string(64, 'a') + ".com"));
}

TEST(NetPolicy, JsonStrictAndLimitsAtTheBoundary) {
  auto p = PolicyFromJson(R"({"allow_out":["A.com","10.0.0.0/8:443/tcp","a.com"],
                              "deny_out":[],"bandwidth_kbit":1000})");
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->allow_out, (std::vector<std::string>{"a.com", "10.0.0.0/8:443/tcp"}));
  EXPECT_EQ(p->bandwidth_kbit, 1000u);
  EXPECT_EQ(*PolicyFromJson(PolicyToJson(*p)), *p);
  EXPECT_FALSE(PolicyFromJson(R"({"allow":[]})"));
  EXPECT_FALSE(PolicyFromJson(R"({"allow_out":"a.com"})"));
  EXPECT_FALSE(PolicyFromJson(R"({"allow_out":[1]})"));
  EXPECT_FALSE(PolicyFromJson(R"({"bandwidth_kbit":-1})"));
  EXPECT_FALSE(PolicyFromJson(R"([])"));
  EXPECT_TRUE(PolicyFromJson(R"({"bandwidth_kbit":100000000})"));
  EXPECT_FALSE(PolicyFromJson(R"({"bandwidth_kbit":100000001})"));
  EXPECT_TRUE(PolicyFromJson(R"({"bandwidth_kbit":8})"));
  EXPECT_FALSE(PolicyFromJson(R"({"bandwidth_kbit":7})"));
  std::string many = R"({"deny_out":[)";
  for (size_t i = 0; i < kMaxRules; ++i)
    many += (i ? "," : "") + std::string("\"10.0.0.") + std::to_string(i % 256) +
            "/32:" + std::to_string(i + 1) + "\"";
  EXPECT_TRUE(PolicyFromJson(many + "]}"));
  EXPECT_FALSE(PolicyFromJson(many + R"(,"1.1.1.1"]})"));
}

TEST(NetPolicy, SeedVariables) {
  auto p = PolicyFromSeedEnv({{"VM_DNS_MODE", "allow"},
                              {"VM_DNS_DOMAINS", "*.npmjs.org, github.com"},
                              {"VM_DEST_MODE", "deny"},
                              {"VM_DEST_RULES", "169.254.169.254/32,10.0.0.0/8:443/tcp"},
                              {"VM_BW_ENABLED", "true"},
                              {"VM_BW_RATE_KBIT", "2048"}});
  ASSERT_TRUE(p) << p.error().ToString();
  EXPECT_EQ(p->allow_out, (std::vector<std::string>{"*.npmjs.org", "github.com"}));
  EXPECT_EQ(p->deny_out, (std::vector<std::string>{"169.254.169.254/32", "10.0.0.0/8:443/tcp"}));
  EXPECT_EQ(p->bandwidth_kbit, 2048u);
  EXPECT_EQ(p->burst_kbit, 1024u);
  EXPECT_EQ(*PolicyFromSeedEnv({}), NetworkPolicy{});
  EXPECT_FALSE(PolicyFromSeedEnv({{"VM_DNS_MODE", "block"}}));
  EXPECT_FALSE(PolicyFromSeedEnv({{"VM_DNS_MODE", "allow"}, {"VM_DNS_DOMAINS", "10.0.0.0/8"}}));
  EXPECT_FALSE(PolicyFromSeedEnv({{"VM_DEST_MODE", "allow"}, {"VM_DEST_RULES", "a.com"}}));
  EXPECT_FALSE(PolicyFromSeedEnv({{"VM_BW_ENABLED", "yes"}}));
}

TEST(NetPolicy, DomainMatching) {
  EXPECT_TRUE(DomainMatches("a.com", "A.COM."));
  EXPECT_FALSE(DomainMatches("a.com", "b.a.com"));
  EXPECT_TRUE(DomainMatches("*.a.com", "b.a.com"));
  EXPECT_TRUE(DomainMatches("*.a.com", "c.b.a.com"));
  EXPECT_FALSE(DomainMatches("*.a.com", "a.com"));
  EXPECT_FALSE(DomainMatches("*.a.com", "xa.com"));
  NetworkPolicy p;
  EXPECT_TRUE(NameAllowed(p, "anything.org"));
  p.deny_out = {"*.bad.org"};
  EXPECT_FALSE(NameAllowed(p, "x.bad.org"));
  EXPECT_TRUE(NameAllowed(p, "good.org"));
  p.allow_out = {"10.0.0.0/8", "good.org"};
  EXPECT_TRUE(NameAllowed(p, "good.org"));
  EXPECT_FALSE(NameAllowed(p, "other.org"));
  p.allow_out = {"*.bad.org"};
  EXPECT_FALSE(NameAllowed(p, "x.bad.org"));  // deny wins
}

std::string Query(const std::string& name, uint16_t id = 0x1234) {
  std::string q = {
      static_cast<char>(id >> 8), static_cast<char>(id & 0xFF), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  while (start < name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    q += static_cast<char>(dot - start);
    q += name.substr(start, dot - start);
    start = dot + 1;
  }
  q += '\0';
  q += std::string("\0\x01\0\x01", 4);
  return q;
}

TEST(NetDns, QuestionAndReplies) {
  std::string q = Query("WWW.Example.com");
  EXPECT_EQ(*ParseQuestionName(q), "www.example.com");
  EXPECT_FALSE(ParseQuestionName(q.substr(0, q.size() - 1)));
  EXPECT_FALSE(ParseQuestionName(q.substr(0, 11)));
  std::string two = q;
  two[5] = 2;
  EXPECT_FALSE(ParseQuestionName(two));
  std::string compressed = q.substr(0, 12) + std::string("\xC0\x0C\0\x01\0\x01", 6);
  EXPECT_FALSE(ParseQuestionName(compressed));

  std::string r = MakeErrorReply(q, kRcodeNxDomain);
  ASSERT_EQ(r.size(), q.size());
  EXPECT_EQ(r.substr(0, 2), q.substr(0, 2));
  EXPECT_EQ(static_cast<uint8_t>(r[2]) & 0x80, 0x80);  // QR
  EXPECT_EQ(static_cast<uint8_t>(r[3]) & 0x0F, 3);     // NXDOMAIN
  EXPECT_EQ(r.substr(12), q.substr(12));
  EXPECT_EQ(MakeErrorReply("short", 2), "");

  // An answer: CNAME then two A records, names compressed.
  std::string ans = q;
  ans[2] = static_cast<char>(0x81);
  ans[3] = static_cast<char>(0x80);
  ans[7] = 3;
  ans += std::string("\xC0\x0C\0\x05\0\x01\0\0\0\x3C\0\x02\xC0\x10", 14);
  ans += std::string("\xC0\x10\0\x01\0\x01\0\0\x01\x2C\0\x04\x0A\x61\x01\x01", 16);
  ans += std::string("\xC0\x10\0\x01\0\x01\0\0\0\x05\0\x04\x0A\x61\x01\x02", 16);
  auto addrs = ParseAnswerAddresses(ans);
  ASSERT_EQ(addrs.size(), 2u);
  EXPECT_EQ(addrs[0].addr, 0x0A610101u);
  EXPECT_EQ(addrs[0].ttl, 300u);
  EXPECT_EQ(addrs[1].addr, 0x0A610102u);
  // Truncated: what is complete counts, the rest is ignored.
  EXPECT_EQ(ParseAnswerAddresses(ans.substr(0, ans.size() - 3)).size(), 1u);
}

// A TCP DNS client from a given loopback source address (127.0.0.0/8 is all local, so each
// address stands for a different sandbox).
int TcpFrom(uint32_t src, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(src);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends one query on `fd` and returns the reply's RCODE (SERVFAIL here: no upstreams), or -1
// when the resolver closed the connection (or said nothing within 5 s).
int AskTcp(int fd) {
  std::string q = Query("x");
  std::string msg =
      std::string(1, static_cast<char>(q.size() >> 8)) + static_cast<char>(q.size() & 0xFF) + q;
  if (send(fd, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size())) {
    return -1;
  }
  std::string in;
  char buf[512];
  while (in.size() < 2 + 4) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return -1;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return -1;
    in.append(buf, static_cast<size_t>(n));
  }
  return static_cast<uint8_t>(in[2 + 3]) & 0x0F;
}

TEST(NetDns, OneClientCannotTakeEveryTcpSlot) {
  // A free port on 127.0.0.1 for the resolver (bound and released; the resolver binds it next).
  int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const uint16_t port = ntohs(a.sin_port);
  close(probe);
  auto resolver = DnsResolver::Start(
      INADDR_LOOPBACK, port, {},
      [](uint32_t) -> std::optional<NetworkPolicy> { return NetworkPolicy{}; },
      [](uint32_t, const std::vector<DnsAddress>&) {});
  ASSERT_TRUE(resolver) << resolver.error().ToString();

  const uint32_t hog = 0x7F000002, other = 0x7F000003;  // 127.0.0.2, 127.0.0.3
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) {  // exactly the per-client share: all answered
    int fd = TcpFrom(hog, port);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
    EXPECT_GE(AskTcp(fd), 0) << "connection " << i;
  }
  int over = TcpFrom(hog, port);  // one more from the same address: closed unanswered
  ASSERT_GE(over, 0);
  EXPECT_EQ(AskTcp(over), -1);
  close(over);
  int fd = TcpFrom(other, port);  // another client is still served
  ASSERT_GE(fd, 0);
  EXPECT_GE(AskTcp(fd), 0);
  close(fd);
  for (int h : held) EXPECT_GE(AskTcp(h), 0);  // the first 8 still work
  for (int h : held) close(h);
  // Closed connections give their slots back at once, not after the 10 s idle timeout.
  auto t0 = std::chrono::steady_clock::now();
  bool served = false;
  while (!served && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    int again = TcpFrom(hog, port);
    ASSERT_GE(again, 0);
    served = AskTcp(again) >= 0;
    close(again);
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(served) << "the closed connections' slots were still held after 2 s";
}

TEST(NetDns, Upstreams) {
  auto u = UpstreamsFromResolvConf(
      "# x\nnameserver 10.0.0.2\nnameserver ::1\nsearch a\n"
      "nameserver  192.168.1.1 \n");
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].addr, 0x0A000002u);
  EXPECT_EQ(u[1].port, 53);
  EXPECT_EQ(ParseUpstream("10.0.0.2:5353")->port, 5353);
  EXPECT_FALSE(ParseUpstream("10.0.0.2:0"));
  EXPECT_FALSE(ParseUpstream("dns.google"));
}

}  // namespace
}  // namespace asb::isolation::net
