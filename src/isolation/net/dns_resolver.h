// The sandboxes' DNS resolver (ADR 0013): a small forwarder on the bridge's gateway
// address, in the server process. For each query it finds the asking sandbox by source address,
// answers NXDOMAIN for names its policy does not allow, forwards allowed ones to the upstream
// servers, and reports the A records of the answer (before relaying it) so that the host side
// can admit exactly those addresses. UDP and TCP (RFC 1035 4.2); only QDCOUNT=1 queries.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "isolation/net/policy.h"

namespace asb::isolation::net {

/// An IPv4 address (host byte order) and its TTL, seconds, from an answer's A records.
struct DnsAddress {
  uint32_t addr = 0;
  uint32_t ttl = 0;
};

/// An upstream server: IPv4 address (host order) and port.
struct DnsUpstream {
  uint32_t addr = 0;
  uint16_t port = 53;
};

/// RCODEs (RFC 1035 4.1.1).
inline constexpr int kRcodeFormErr = 1;
inline constexpr int kRcodeServFail = 2;
inline constexpr int kRcodeNxDomain = 3;
inline constexpr int kRcodeRefused = 5;

/// The question name of a query ("www.example.com", no trailing dot, lower case).
/// Errors: kInvalidArgument for anything but one well-formed question without compression.
Result<std::string> ParseQuestionName(std::string_view msg);
/// A reply to `query` with `rcode` and the query's question; "" if the query is shorter than a
/// header.
std::string MakeErrorReply(std::string_view query, int rcode);
/// The A records (class IN) of a reply's answer section; malformed parts end the scan.
std::vector<DnsAddress> ParseAnswerAddresses(std::string_view msg);

/// Addresses no answer may carry besides the fixed special ranges (policy.h): the sandbox
/// subnet and the server's own addresses.
struct AnswerGuard {
  std::vector<std::pair<uint32_t, int>> blocked4;       // network (host order), prefix length
  std::vector<std::array<unsigned char, 16>> blocked6;  // network order
};

/// What FilterAnswer relays, admits and dropped.
struct FilteredAnswer {
  std::string reply;                 // the message for the sandbox
  std::vector<DnsAddress> admitted;  // A records that join the sandbox's learned set
  std::vector<std::string> dropped;  // "10.0.0.1 (private)", in answer order
};

/// The DNS-rebinding guard (ADR 0013 addendum) on an upstream reply for a sandbox
/// under policy `p`:
///  - a public A record is relayed and admitted;
///  - an A record in a private or unreachable range (ClassifyAddress) is never admitted; it is
///    relayed only when an allow_out address rule covers it (that rule, with its ports, is what
///    admits it), or, for a private one, when allow_out is empty (everything is allowed);
///    otherwise it is removed from the answer;
///  - an A record in `g.blocked4` and an AAAA record in a special IPv6 range or `g.blocked6` are
///    always removed.
/// When something is removed the reply is rebuilt: header, question, the kept answer records
/// (names recompressed), the OPT record; the authority section is left out. `reply` is relayed
/// unchanged when nothing is removed.
FilteredAnswer FilterAnswer(std::string_view reply, const NetworkPolicy& p, const AnswerGuard& g);

class DnsResolver {
 public:
  /// The policy for a client address; nullopt = not a sandbox of ours (answered REFUSED).
  using PolicyFor = std::function<std::optional<NetworkPolicy>(uint32_t client)>;
  /// Called with the addresses of an allowed answer before it is relayed.
  using Learned = std::function<void(uint32_t client, const std::vector<DnsAddress>&)>;

  /// Binds UDP and TCP `listen_addr`:`port` (host order) and serves on a thread of its own.
  /// TCP: at most 64 connections at once, 8 per client address (more are closed at once), each
  /// closed after 10 s without a complete query.
  /// Answers pass FilterAnswer with `guard`; what it drops is logged (rate-limited).
  /// Errors: FromErrno of bind (kConflict if the port is taken).
  static Result<std::unique_ptr<DnsResolver>> Start(uint32_t listen_addr, uint16_t port,
                                                    std::vector<DnsUpstream> upstreams,
                                                    PolicyFor policy_for, Learned learned,
                                                    AnswerGuard guard = {});
  ~DnsResolver();
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;

  struct Impl;

 private:
  explicit DnsResolver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Upstreams from resolv.conf text ("nameserver a.b.c.d" lines, IPv4 only).
std::vector<DnsUpstream> UpstreamsFromResolvConf(std::string_view text);
/// Parses "a.b.c.d" or "a.b.c.d:port". Errors: kInvalidArgument.
Result<DnsUpstream> ParseUpstream(std::string_view text);

}  // namespace asb::isolation::net
