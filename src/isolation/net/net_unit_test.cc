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

NetworkPolicy Allow(std::vector<std::string> allow_out) {
  NetworkPolicy p;
  p.allow_out = std::move(allow_out);
  return p;
}

TEST(NetDns, AddressClasses) {
  struct Case {
    const char* addr;
    AddressClass cls;
    const char* range;
  };
  for (const Case& c : std::vector<Case>{
           {"8.8.8.8", AddressClass::kPublic, ""},
           {"198.19.1.1", AddressClass::kPublic, ""},
           {"172.32.0.1", AddressClass::kPublic, ""},
           {"100.128.0.1", AddressClass::kPublic, ""},
           {"10.0.0.1", AddressClass::kPrivate, "private"},
           {"172.16.0.1", AddressClass::kPrivate, "private"},
           {"172.31.255.255", AddressClass::kPrivate, "private"},
           {"192.168.1.1", AddressClass::kPrivate, "private"},
           {"100.64.0.1", AddressClass::kPrivate, "shared"},
           {"100.127.255.255", AddressClass::kPrivate, "shared"},
           {"127.0.0.1", AddressClass::kUnreachable, "loopback"},
           {"0.0.0.0", AddressClass::kUnreachable, "this-network"},
           {"169.254.169.254", AddressClass::kUnreachable, "link-local"},
           {"224.0.0.1", AddressClass::kUnreachable, "multicast"},
           {"240.0.0.1", AddressClass::kUnreachable, "reserved"},
           {"255.255.255.255", AddressClass::kUnreachable, "broadcast"},
       }) {
    in_addr a;
    ASSERT_EQ(inet_pton(AF_INET, c.addr, &a), 1);
    std::string_view range = "unset";
    EXPECT_EQ(ClassifyAddress(ntohl(a.s_addr), &range), c.cls) << c.addr;
    EXPECT_EQ(range, c.range) << c.addr;
  }
  for (auto [addr, range] : std::vector<std::pair<const char*, const char*>>{
           {"::1", "loopback"},
           {"::", "unspecified"},
           {"fd00::1", "ula"},
           {"fc00::1", "ula"},
           {"fe80::1", "link-local"},
           {"febf::1", "link-local"},
           {"ff02::1", "multicast"},
           {"::ffff:10.0.0.1", "v4-mapped"},
           {"::ffff:127.0.0.1", "v4-mapped"},
           {"::ffff:8.8.8.8", ""},
           {"2001:4860::8888", ""},
           {"fec0::1", ""},
       }) {
    in6_addr a;
    ASSERT_EQ(inet_pton(AF_INET6, addr, &a), 1);
    EXPECT_EQ(SpecialRange6(a.s6_addr), range) << addr;
  }
  NetworkPolicy p = Allow({"example.com", "10.1.0.0/16:443/tcp", "192.168.7.7/32"});
  EXPECT_TRUE(AllowRuleCovers(p, 0x0A010203));   // 10.1.2.3
  EXPECT_FALSE(AllowRuleCovers(p, 0x0A020203));  // 10.2.2.3
  EXPECT_TRUE(AllowRuleCovers(p, 0xC0A80707));   // 192.168.7.7
  EXPECT_FALSE(AllowRuleCovers(p, 0xC0A80708));
  EXPECT_FALSE(AllowRuleCovers(NetworkPolicy{}, 0x0A010203));
}

// An answer record: `owner` (wire bytes, maybe a pointer), type, TTL 300, rdata.
std::string Rr(const std::string& owner, uint16_t type, const std::string& rdata) {
  std::string r = owner;
  r += static_cast<char>(type >> 8);
  r += static_cast<char>(type & 0xFF);
  r += std::string("\0\x01\0\0\x01\x2C", 6);
  r += static_cast<char>(rdata.size() >> 8);
  r += static_cast<char>(rdata.size() & 0xFF);
  return r + rdata;
}

std::string A(const char* dotted) {
  in_addr a;
  inet_pton(AF_INET, dotted, &a);
  return std::string(reinterpret_cast<const char*>(&a.s_addr), 4);
}

std::string Aaaa(const char* text) {
  in6_addr a;
  inet_pton(AF_INET6, text, &a);
  return std::string(reinterpret_cast<const char*>(a.s6_addr), 16);
}

// A reply to Query(name) with `records` as the answer section and `an`/`ns`/`ar` counts.
std::string Reply(const std::string& name, const std::string& records, int an, int ns = 0,
                  int ar = 0) {
  std::string r = Query(name);
  r[2] = static_cast<char>(0x81);
  r[3] = static_cast<char>(0x80);
  r[7] = static_cast<char>(an);
  r[9] = static_cast<char>(ns);
  r[11] = static_cast<char>(ar);
  return r + records;
}

std::vector<std::string> Dotted(const std::vector<DnsAddress>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) {
    in_addr in{htonl(a.addr)};
    out.push_back(inet_ntoa(in));
  }
  return out;
}

// ADR 0013 (rebinding guard): a hostile upstream answering private, local and host addresses for an
// allowed name (DNS rebinding) admits none of them, and the sandbox is not told them.
TEST(NetDns, RebindingAnswersAreNeitherAdmittedNorRelayed) {
  const std::string ptr_q = "\xC0\x0C", ptr_ex = "\xC0\x10";  // www.example.com, example.com
  std::string recs = Rr(ptr_q, 5, ptr_ex);                    // CNAME example.com
  const char* hostile[] = {"10.1.1.1",        "127.0.0.1",
                           "192.168.1.1",     "100.64.0.1",
                           "172.16.0.1",      "169.254.169.254",
                           "0.0.0.0",         "224.0.0.1",
                           "255.255.255.255", "10.213.0.5" /* sandbox subnet */,
                           "203.0.113.9" /* server */};
  for (const char* h : hostile) recs += Rr(ptr_ex, 1, A(h));
  recs += Rr(ptr_ex, 1, A("198.51.100.7"));
  recs += Rr(ptr_ex, 28, Aaaa("::1"));
  recs += Rr(ptr_ex, 28, Aaaa("fd00::1"));
  recs += Rr(ptr_ex, 28, Aaaa("fe80::1"));
  recs += Rr(ptr_ex, 28, Aaaa("2001:db8::9"));  // the server's own
  recs += Rr(ptr_ex, 28, Aaaa("2001:db8::1"));
  const int n = 1 + 11 + 1 + 5;
  const std::string opt = std::string("\0\0\x29\x10\0\0\0\0\0\0\0", 11);
  const std::string soa = Rr(ptr_ex, 6, std::string("\xC0\x10\xC0\x10", 4) + std::string(20, 1));
  const std::string reply = Reply("www.example.com", recs + soa + opt, n, 1, 1);
  // Before the fix every A record was admitted.
  EXPECT_EQ(ParseAnswerAddresses(reply).size(), 12u);

  AnswerGuard g;
  g.blocked4 = {{0x0AD50000, 16}, {0xCB007109, 32}};
  std::array<unsigned char, 16> own;
  in6_addr a6;
  inet_pton(AF_INET6, "2001:db8::9", &a6);
  std::copy(a6.s6_addr, a6.s6_addr + 16, own.begin());
  g.blocked6 = {own};
  const NetworkPolicy p = Allow({"example.com"});
  FilteredAnswer f = FilterAnswer(reply, p, g);
  EXPECT_EQ(Dotted(f.admitted), (std::vector<std::string>{"198.51.100.7"}));
  EXPECT_EQ(f.admitted[0].ttl, 300u);
  EXPECT_EQ(f.dropped,
            (std::vector<std::string>{
                "10.1.1.1 (private)", "127.0.0.1 (loopback)", "192.168.1.1 (private)",
                "100.64.0.1 (shared)", "172.16.0.1 (private)", "169.254.169.254 (link-local)",
                "0.0.0.0 (this-network)", "224.0.0.1 (multicast)", "255.255.255.255 (broadcast)",
                "10.213.0.5 (server or sandbox address)", "203.0.113.9 (server or sandbox address)",
                "::1 (loopback)", "fd00::1 (ula)", "fe80::1 (link-local)",
                "2001:db8::9 (server address)"}));
  // What the sandbox gets: the question, the CNAME, the public A and AAAA, the OPT record; no
  // authority section. Names are recompressed against the question.
  const std::string want = Reply("www.example.com",
                                 Rr(ptr_q, 5, ptr_ex) + Rr(ptr_ex, 1, A("198.51.100.7")) +
                                     Rr(ptr_ex, 28, Aaaa("2001:db8::1")) + opt,
                                 3, 0, 1);
  EXPECT_EQ(f.reply, want);
  EXPECT_EQ(Dotted(ParseAnswerAddresses(f.reply)), (std::vector<std::string>{"198.51.100.7"}));

  // Named in allow_out (a range, or an address of it): relayed, but still not learned — the
  // address rule, with its ports, is what admits it. 192.168.1.1 is not named: dropped.
  const NetworkPolicy named = Allow({"example.com", "10.1.0.0/16:443/tcp", "127.0.0.1"});
  f = FilterAnswer(Reply("www.example.com",
                         Rr(ptr_q, 1, A("10.1.1.1")) + Rr(ptr_q, 1, A("127.0.0.1")) +
                             Rr(ptr_q, 1, A("192.168.1.1")) + Rr(ptr_q, 1, A("10.2.0.1")),
                         4),
                   named, g);
  EXPECT_TRUE(f.admitted.empty());
  EXPECT_EQ(Dotted(ParseAnswerAddresses(f.reply)),
            (std::vector<std::string>{"10.1.1.1", "127.0.0.1"}));
  EXPECT_EQ(f.dropped, (std::vector<std::string>{"192.168.1.1 (private)", "10.2.0.1 (private)"}));

  // No allow list (everything not denied is allowed): private answers are relayed, local and
  // host ones are not.
  f = FilterAnswer(Reply("www.example.com",
                         Rr(ptr_q, 1, A("10.1.1.1")) + Rr(ptr_q, 1, A("127.0.0.1")) +
                             Rr(ptr_q, 1, A("10.213.0.9")),
                         3),
                   NetworkPolicy{}, g);
  EXPECT_EQ(Dotted(ParseAnswerAddresses(f.reply)), (std::vector<std::string>{"10.1.1.1"}));
  EXPECT_TRUE(f.admitted.empty());
  EXPECT_EQ(f.dropped.size(), 2u);

  // Nothing dropped: the reply is relayed byte for byte.
  const std::string clean = Reply("www.example.com", Rr(ptr_q, 1, A("198.51.100.7")) + soa, 1, 1);
  f = FilterAnswer(clean, p, g);
  EXPECT_EQ(f.reply, clean);
  EXPECT_TRUE(f.dropped.empty());
  EXPECT_EQ(f.admitted.size(), 1u);
}

TEST(NetDns, RebuiltAnswerNeverPointsIntoARemovedRecord) {
  // The first (dropped) record spells "evil.test" in full; the kept one points at it.
  const std::string evil = std::string(
                               "\x04"
                               "evil\x04test",
                               10) +
                           '\0';
  const std::string reply =
      Reply("www.example.com",
            Rr(evil, 1, A("10.0.0.1")) + Rr("\xC0\x21", 1, A("198.51.100.7")) +
                Rr("\xC0\x21", 5, "\xC0\x21"),
            3);
  ASSERT_EQ(static_cast<size_t>(0x21), Query("www.example.com").size());
  const FilteredAnswer f = FilterAnswer(reply, Allow({"x.com"}), {});
  EXPECT_EQ(Dotted(f.admitted), (std::vector<std::string>{"198.51.100.7"}));
  // The kept A record now carries the name itself, and the CNAME's owner and target point at it.
  const std::string want =
      Reply("www.example.com", Rr(evil, 1, A("198.51.100.7")) + Rr("\xC0\x21", 5, "\xC0\x21"), 2);
  EXPECT_EQ(f.reply, want);

  // A truncated tail: the records before it are kept, the reply stays well-formed.
  const FilteredAnswer t = FilterAnswer(reply.substr(0, reply.size() - 3), Allow({"x.com"}), {});
  EXPECT_EQ(Dotted(t.admitted), (std::vector<std::string>{"198.51.100.7"}));
  EXPECT_EQ(Dotted(ParseAnswerAddresses(t.reply)), (std::vector<std::string>{"198.51.100.7"}));
  EXPECT_EQ(static_cast<uint8_t>(t.reply[7]), 1);
  // Pointer loops and forward pointers end the scan without admitting anything after them.
  const std::string loop = Reply("www.example.com", Rr("\xC0\x21", 1, A("198.51.100.7")), 1);
  EXPECT_TRUE(FilterAnswer(loop, NetworkPolicy{}, {}).admitted.empty());
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
