// The sandboxes' DNS resolver (issue 10, ADR 0013): a small forwarder on the bridge's gateway
// address, in the server process. For each query it finds the asking sandbox by source address,
// answers NXDOMAIN for names its policy does not allow, forwards allowed ones to the upstream
// servers, and reports the A records of the answer (before relaying it) so that the host side
// can admit exactly those addresses. UDP and TCP (RFC 1035 4.2); only QDCOUNT=1 queries.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

class DnsResolver {
 public:
  /// The policy for a client address; nullopt = not a sandbox of ours (answered REFUSED).
  using PolicyFor = std::function<std::optional<NetworkPolicy>(uint32_t client)>;
  /// Called with the addresses of an allowed answer before it is relayed.
  using Learned = std::function<void(uint32_t client, const std::vector<DnsAddress>&)>;

  /// Binds UDP and TCP `listen_addr`:`port` (host order) and serves on a thread of its own.
  /// TCP: at most 64 connections at once, 8 per client address (more are closed at once), each
  /// closed after 10 s without a complete query.
  /// Errors: FromErrno of bind (kConflict if the port is taken).
  static Result<std::unique_ptr<DnsResolver>> Start(uint32_t listen_addr, uint16_t port,
                                                    std::vector<DnsUpstream> upstreams,
                                                    PolicyFor policy_for, Learned learned);
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
