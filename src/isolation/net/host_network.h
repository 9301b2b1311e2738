// The host side of networked sandboxes (ADR 0013): one bridge per server, one veth
// per sandbox, NAT out of the uplink, nftables rules in tables of our own, tc bandwidth limits,
// and the DNS resolver on the gateway address.
//
// Names come from a hash of the server's state directory, so two servers on one host never
// share a bridge or a table: bridge "asb<h6>", veths "asb<h6>v<slot hex>", tables
// "inet asb_<h6>" and "bridge asb_<h6>". Every nft change is one `nft -f` transaction; no
// other table is ever read or written.
//
// Per sandbox (slot k of the backend's uid registry): address = subnet base + 2 + k, the
// gateway is subnet base + 1; a chain named after the sandbox id holds its policy, a set
// "dns_<hex>" the addresses its resolver answered for allowed names (with the answer's TTL,
// at least 60 s and at most a day), an element of the "sandboxes" verdict map sends its
// forwarded packets to that chain, and an element of the bridge table's "ports" set binds its
// veth to its address (anti-spoofing for IPv4 and ARP).
//
// Always-on rules (whatever the policy): IPv6 rejected; destinations 0/8, 127/8,
// 169.254/16 (cloud metadata, link-local), 224/3 and the sandbox subnet rejected; nothing but
// the resolver's port on the gateway reaches the host (input chain), so no host address or
// port (the API included) is reachable; packets only leave through the uplink; veth ports are
// isolated and the bridge table drops port-to-port frames, so sandboxes never reach each other;
// nothing new enters a sandbox from outside.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "isolation/net/dns_resolver.h"
#include "isolation/net/policy.h"

namespace asb::isolation::net {

struct HostNetworkOptions {
  /// The server's state directory; only its hash is used (names, see above).
  std::string state_dir;
  /// IPv4 range of the sandboxes, "a.b.c.d/len" with len in 8..24.
  std::string subnet = "10.213.0.0/16";
  /// Interface through which sandbox traffic leaves (NAT); "" = the default route's.
  std::string uplink;
  /// Upstream DNS servers "a.b.c.d[:port]"; empty = the host's /etc/resolv.conf.
  std::vector<std::string> dns_upstreams;
  /// Port of the resolver on the gateway address (sandboxes' resolv.conf cannot name another
  /// port, so only tests change it).
  uint16_t dns_port = 53;
};

class HostNetwork {
 public:
  /// Validates the options; touches nothing on the host (the bridge, tables and resolver are
  /// made by the first Attach/Update). Errors: kInvalidArgument; kUnavailable when ip, nft,
  /// tc or nsenter is missing.
  static Result<std::shared_ptr<HostNetwork>> Make(const HostNetworkOptions& options);
  /// Stops the resolver; removes the bridge and both tables if no sandbox is attached any more
  /// (sandboxes outlive the server, and a later server adopts them with Update()).
  ~HostNetwork();
  HostNetwork(const HostNetwork&) = delete;
  HostNetwork& operator=(const HostNetwork&) = delete;

  /// Gives the sandbox whose PID 1 is `pid` (paused before it runs anything) its network: a
  /// veth into its namespace as eth0 with its address and default route, rules for `policy`,
  /// the bandwidth limit. Errors: kLimitExceeded when `slot` has no address in the subnet,
  /// kBackend when a tool fails (the message has its output).
  Status Attach(const std::string& id, uint32_t slot, int pid, const NetworkPolicy& policy);
  /// Replaces the sandbox's policy in one transaction (its learned DNS addresses are dropped
  /// when `forget_resolved`), and its bandwidth limit. Also re-registers an adopted sandbox
  /// with this process's resolver. Errors: kBackend.
  Status Update(const std::string& id, uint32_t slot, int pid, const NetworkPolicy& policy,
                bool forget_resolved);
  /// Removes everything of the sandbox (map and set elements, its chain and set, the veth if
  /// still there, resolver state). Idempotent.
  Status Detach(const std::string& id, uint32_t slot);

  /// "nameserver <gateway>\n...": the sandbox's /etc/resolv.conf.
  std::string ResolvConf() const;
  /// Dotted address of `slot`; kLimitExceeded if the subnet has none for it.
  Result<std::string> AddressOf(uint32_t slot) const;
  /// The gateway's dotted address (the sandboxes' default route and resolver) and the
  /// subnet's prefix length: what a VM's guest configures itself with.
  std::string GatewayAddress() const;
  int prefix_length() const { return prefix_len_; }
  const std::string& bridge_name() const { return bridge_; }
  const std::string& table_name() const { return table_; }

 private:
  HostNetwork() = default;
  Status EnsureBaseLocked();
  Status ApplyPolicyLocked(const std::string& id, uint32_t slot, const NetworkPolicy& policy,
                           bool forget_resolved);
  Status ApplyBandwidthLocked(uint32_t slot, int pid, const NetworkPolicy& policy);
  std::string VethName(uint32_t slot) const;
  std::string SetName(const std::string& id) const;
  void Learn(uint32_t client, const std::vector<DnsAddress>& answers);

  HostNetworkOptions opts_;
  std::string ip_, nft_, tc_, nsenter_;
  std::string hash_, bridge_, table_, veth_prefix_, uplink_;
  uint32_t subnet_ = 0;  // host order
  int prefix_len_ = 16;
  std::vector<DnsUpstream> upstreams_;

  std::mutex mu_;  // host changes (held across tool runs)
  bool base_ready_ = false;
  std::unique_ptr<DnsResolver> resolver_;
  struct Client {
    std::string id;
    NetworkPolicy policy;
  };
  std::mutex clients_mu_;               // the resolver thread's view; never held across tool runs
  std::map<uint32_t, Client> clients_;  // by address (host order)
};

}  // namespace asb::isolation::net
