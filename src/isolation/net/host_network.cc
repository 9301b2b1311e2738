#include "isolation/net/host_network.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "isolation/net/command.h"

namespace asb::isolation::net {
namespace {

std::string Dotted(uint32_t a) {
  in_addr in;
  in.s_addr = htonl(a);
  char buf[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &in, buf, sizeof buf);
  return buf;
}

// FNV-1a: stable across builds and restarts (std::hash is not promised to be).
uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  }
  return h;
}

std::string ReadFileOr(const std::string& path, std::string def) {
  std::ifstream f(path);
  if (!f) return def;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

constexpr char kReject[] = "reject with icmpx type admin-prohibited";

// "ip daddr 10.0.0.0/8 meta l4proto tcp th dport 443" for one address rule.
std::string MatchOf(const AddressRule& r) {
  std::string m = "ip daddr " + Dotted(r.network) + "/" + std::to_string(r.prefix_len);
  if (r.port != 0) {
    m += r.proto.empty() ? " meta l4proto { tcp, udp }" : " meta l4proto " + r.proto;
    m += " th dport " + std::to_string(r.port);
  }
  return m;
}

// Burst in kbit: given, or 20 ms of the rate, at least 32 kbit (a few full frames).
uint64_t BurstKbit(const NetworkPolicy& p) {
  if (p.burst_kbit != 0) return p.burst_kbit;
  return std::max<uint64_t>(32, p.bandwidth_kbit / 50);
}

}  // namespace

Result<std::shared_ptr<HostNetwork>> HostNetwork::Make(const HostNetworkOptions& options) {
  std::shared_ptr<HostNetwork> n(new HostNetwork());
  n->opts_ = options;
  for (auto [name, dst] : {std::pair{"ip", &n->ip_}, std::pair{"nft", &n->nft_},
                           std::pair{"tc", &n->tc_}, std::pair{"nsenter", &n->nsenter_}}) {
    *dst = FindTool(name);
    if (dst->empty()) {
      return Fail(Error::Unavailable(std::string("networking needs the '") + name +
                                     "' tool (iproute2, nftables, util-linux)"));
    }
  }
  // Subnet.
  const std::string& s = options.subnet;
  size_t slash = s.find('/');
  int len = -1;
  in_addr a;
  if (slash != std::string::npos) {
    auto tail = std::string_view(s).substr(slash + 1);
    auto [p, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), len);
    if (ec != std::errc() || p != tail.data() + tail.size()) len = -1;
  }
  if (slash == std::string::npos || len < 8 || len > 24 ||
      ::inet_pton(AF_INET, s.substr(0, slash).c_str(), &a) != 1) {
    return Fail(Error::InvalidArgument("network subnet must be a.b.c.d/len with len 8..24, got '" +
                                       s + "'"));
  }
  n->prefix_len_ = len;
  n->subnet_ = ntohl(a.s_addr) & (~uint32_t{0} << (32 - len));
  if (!options.uplink.empty() && (options.uplink.size() >= IFNAMSIZ ||
                                  options.uplink.find_first_of("\"/ \\*") != std::string::npos)) {
    return Fail(Error::InvalidArgument("network uplink: not an interface name"));
  }
  // Upstreams.
  if (options.dns_upstreams.empty()) {
    n->upstreams_ = UpstreamsFromResolvConf(ReadFileOr("/etc/resolv.conf", ""));
  } else {
    for (const auto& u : options.dns_upstreams) {
      ASB_ASSIGN_OR_RETURN(auto up, ParseUpstream(u));
      n->upstreams_.push_back(up);
    }
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "%06x", Fnv1a(options.state_dir) & 0xFFFFFF);
  n->hash_ = hex;
  n->bridge_ = "asb" + n->hash_;
  n->veth_prefix_ = "asb" + n->hash_ + "v";
  n->table_ = "asb_" + n->hash_;
  return n;
}

HostNetwork::~HostNetwork() {
  resolver_.reset();
  std::lock_guard lock(mu_);
  if (!base_ready_) return;
  // Anything attached? Then the sandboxes (and a later server) still need it all.
  auto listing = RunTool({nft_, "list", "map", "inet", table_, "sandboxes"});
  if (!listing || listing->find("elements") != std::string::npos) return;
  (void)RunTool({nft_, "-f", "-"},
                "delete table inet " + table_ + "\ndelete table bridge " + table_ + "\n");
  (void)RunTool({ip_, "link", "del", bridge_});
}

std::string HostNetwork::VethName(uint32_t slot) const {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%x", slot & 0xFFFF);
  return veth_prefix_ + hex;
}

std::string HostNetwork::SetName(const std::string& id) const {
  return "dns_" + (id.size() > 3 ? id.substr(3) : id);
}

Result<std::string> HostNetwork::AddressOf(uint32_t slot) const {
  const uint64_t size = uint64_t{1} << (32 - prefix_len_);
  if (uint64_t{slot} + 3 >= size) {
    return Fail(Error::LimitExceeded("the network subnet " + opts_.subnet +
                                     " has no address left for sandbox slot " +
                                     std::to_string(slot)));
  }
  return Dotted(subnet_ + 2 + slot);
}

std::string HostNetwork::ResolvConf() const {
  return "nameserver " + Dotted(subnet_ + 1) + "\noptions edns0 timeout:2 attempts:2\n";
}

Status HostNetwork::EnsureBaseLocked() {
  if (base_ready_) return {};
  // Uplink: configured, or the interface of the default route.
  uplink_ = opts_.uplink;
  if (uplink_.empty()) {
    ASB_ASSIGN_OR_RETURN(std::string routes,
                         RunTool({ip_, "-j", "-4", "route", "show", "default"}));
    boost::system::error_code ec;
    auto v = boost::json::parse(routes, ec);
    if (!ec && v.is_array() && !v.get_array().empty() && v.get_array()[0].is_object()) {
      if (auto* dev = v.get_array()[0].get_object().if_contains("dev"); dev && dev->is_string()) {
        uplink_ = std::string(dev->get_string());
      }
    }
    if (uplink_.empty()) {
      return Fail(Error::Unavailable("networking: no default route, and no uplink configured"));
    }
  }
  const std::string gw = Dotted(subnet_ + 1);
  const std::string cidr = Dotted(subnet_) + "/" + std::to_string(prefix_len_);
  // Bridge (kept if it exists: adopted sandboxes hang on it).
  auto exists = RunTool({ip_, "link", "show", "dev", bridge_});
  if (!exists) {
    ASB_TRY(RunTool({ip_, "-batch", "-"}, "link add " + bridge_ + " type bridge\n" + "addr add " +
                                              gw + "/" + std::to_string(prefix_len_) + " dev " +
                                              bridge_ + "\n" + "link set " + bridge_ + " up\n"));
  }
  // Forwarding on the two interfaces the sandboxes' packets cross (per interface, not the
  // host-wide ip_forward).
  for (const std::string& dev : {bridge_, uplink_}) {
    std::ofstream f("/proc/sys/net/ipv4/conf/" + dev + "/forwarding");
    f << "1";
    if (!f) return Fail(Error::Backend("networking: cannot enable forwarding on " + dev));
  }
  // Tables: base chains are rewritten; maps and sets (the sandboxes' state) are kept.
  const std::string t = table_, br = bridge_, v = veth_prefix_ + "*";
  std::string s;
  s += "add table inet " + t + "\n";
  s += "add map inet " + t + " sandboxes { type ipv4_addr : verdict; }\n";
  for (const char* c : {"input", "forward"}) {
    s += "add chain inet " + t + " " + c + " { type filter hook " + c +
         " priority 0; policy accept; }\n";
    s += "flush chain inet " + t + " " + c + "\n";
  }
  s += "add chain inet " + t + " egress\nflush chain inet " + t + " egress\n";
  s += "add chain inet " + t +
       " postrouting { type nat hook postrouting priority 100; policy accept; }\n";
  s += "flush chain inet " + t + " postrouting\n";
  const std::string dns_port = std::to_string(opts_.dns_port);
  s += "add rule inet " + t + " input iifname \"" + br + "\" ip daddr " + gw +
       " meta l4proto { tcp, udp } th dport " + dns_port + " accept\n";
  s += "add rule inet " + t + " input iifname \"" + br + "\" " + kReject + "\n";
  s += "add rule inet " + t + " forward oifname \"" + br +
       "\" ct state established,related accept\n";
  s += "add rule inet " + t + " forward oifname \"" + br + "\" drop\n";
  s += "add rule inet " + t + " forward iifname \"" + br + "\" jump egress\n";
  s += "add rule inet " + t + " egress meta nfproto ipv6 " + kReject + "\n";
  s += "add rule inet " + t + " egress ip saddr != " + cidr + " drop\n";
  s += "add rule inet " + t + " egress oifname != \"" + uplink_ + "\" " + kReject + "\n";
  s += "add rule inet " + t + " egress ip daddr { 0.0.0.0/8, 127.0.0.0/8, 169.254.0.0/16, " +
       "224.0.0.0/3, " + cidr + " } " + kReject + "\n";
  s += "add rule inet " + t + " egress ip saddr vmap @sandboxes\n";
  s += "add rule inet " + t + " egress " + kReject + "\n";
  s += "add rule inet " + t + " postrouting ip saddr " + cidr + " oifname \"" + uplink_ +
       "\" masquerade\n";
  s += "add table bridge " + t + "\n";
  s += "add set bridge " + t + " ports { type ifname . ipv4_addr; }\n";
  for (const char* c : {"input", "forward"}) {
    s += "add chain bridge " + t + " " + c + " { type filter hook " + c +
         " priority 0; policy accept; }\n";
    s += "flush chain bridge " + t + " " + c + "\n";
  }
  s += "add rule bridge " + t + " forward iifname \"" + v + "\" drop\n";
  s += "add rule bridge " + t + " input iifname \"" + v +
       "\" ether type ip iifname . ip saddr != @ports drop\n";
  s += "add rule bridge " + t + " input iifname \"" + v +
       "\" ether type arp iifname . arp saddr ip != @ports drop\n";
  s += "add rule bridge " + t + " input iifname \"" + v + "\" ether type ip6 drop\n";
  ASB_TRY_CTX(RunTool({nft_, "-f", "-"}, s), "networking base rules");
  // The resolver. Answers never carry the sandbox subnet or the server's own addresses
  // (unreachable: the always-on rules), nor, under an allow list, private ones it does not name.
  AnswerGuard guard;
  guard.blocked4.emplace_back(subnet_, prefix_len_);
  if (ifaddrs* ifs = nullptr; ::getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr) continue;
      if (i->ifa_addr->sa_family == AF_INET) {
        guard.blocked4.emplace_back(
            ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr), 32);
      } else if (i->ifa_addr->sa_family == AF_INET6) {
        const auto* a6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr.s6_addr;
        std::array<unsigned char, 16> own;
        std::copy(a6, a6 + 16, own.begin());
        guard.blocked6.push_back(own);
      }
    }
    ::freeifaddrs(ifs);
  }
  auto self = this;
  auto resolver = DnsResolver::Start(
      subnet_ + 1, opts_.dns_port, upstreams_,
      [self](uint32_t client) -> std::optional<NetworkPolicy> {
        std::lock_guard l(self->clients_mu_);
        auto it = self->clients_.find(client);
        if (it == self->clients_.end()) return std::nullopt;
        return it->second.policy;
      },
      [self](uint32_t client, const std::vector<DnsAddress>& a) { self->Learn(client, a); },
      std::move(guard));
  if (!resolver) return Fail(std::move(resolver).error().WithContext("networking"));
  resolver_ = std::move(*resolver);
  base_ready_ = true;
  spdlog::info("networking: bridge {} {} uplink {} table {} resolver {}:{}", bridge_, cidr, uplink_,
               table_, gw, opts_.dns_port);
  return {};
}

void HostNetwork::Learn(uint32_t client, const std::vector<DnsAddress>& answers) {
  if (answers.empty()) return;
  std::string id;
  {
    std::lock_guard l(clients_mu_);
    auto it = clients_.find(client);
    if (it == clients_.end()) return;
    id = it->second.id;
  }
  // add (creates), delete, add again with the new timeout: refreshes an existing element.
  std::string elems;
  for (const auto& a : answers) {
    if (!elems.empty()) elems += ", ";
    uint32_t ttl = std::clamp<uint32_t>(a.ttl, 60, 86400);
    elems += Dotted(a.addr) + " timeout " + std::to_string(ttl) + "s";
  }
  const std::string set = "inet " + table_ + " " + SetName(id);
  std::string plain;
  for (const auto& a : answers) plain += (plain.empty() ? "" : ", ") + Dotted(a.addr);
  auto r = RunTool({nft_, "-f", "-"}, "add element " + set + " { " + plain + " }\n" +
                                          "delete element " + set + " { " + plain + " }\n" +
                                          "add element " + set + " { " + elems + " }\n");
  if (!r) spdlog::warn("sandbox_id={} dns learn: {}", id, r.error().ToString());
}

Status HostNetwork::ApplyPolicyLocked(const std::string& id, uint32_t slot,
                                      const NetworkPolicy& policy, bool forget_resolved) {
  ASB_ASSIGN_OR_RETURN(std::string addr, AddressOf(slot));
  const std::string t = table_, set = SetName(id);
  std::string s;
  s += "add chain inet " + t + " " + id + "\nflush chain inet " + t + " " + id + "\n";
  s += "add set inet " + t + " " + set + " { type ipv4_addr; flags timeout; }\n";
  if (forget_resolved) s += "flush set inet " + t + " " + set + "\n";
  bool allow_mode = false;
  for (const auto& r : policy.deny_out) {
    auto rule = ParseRule(r);
    if (rule && rule->address) {
      s += "add rule inet " + t + " " + id + " " + MatchOf(*rule->address) + " " + kReject + "\n";
    }
  }
  s += "add rule inet " + t + " " + id + " ct state established,related accept\n";
  for (const auto& r : policy.allow_out) {
    allow_mode = true;
    auto rule = ParseRule(r);
    if (rule && rule->address) {
      s += "add rule inet " + t + " " + id + " " + MatchOf(*rule->address) + " accept\n";
    }
  }
  if (allow_mode) {
    s += "add rule inet " + t + " " + id + " ip daddr @" + set + " accept\n";
    s += "add rule inet " + t + " " + id + " " + kReject + "\n";
  } else {
    s += "add rule inet " + t + " " + id + " accept\n";
  }
  s += "add element inet " + t + " sandboxes { " + addr + " : jump " + id + " }\n";
  s += "add element bridge " + t + " ports { \"" + VethName(slot) + "\" . " + addr + " }\n";
  ASB_TRY_CTX(RunTool({nft_, "-f", "-"}, s), "network policy");
  in_addr a;
  ::inet_pton(AF_INET, addr.c_str(), &a);
  std::lock_guard l(clients_mu_);
  clients_[ntohl(a.s_addr)] = Client{id, policy};
  return {};
}

Status HostNetwork::ApplyBandwidthLocked(uint32_t slot, int pid, const NetworkPolicy& policy) {
  // Host side of the veth: traffic into the sandbox. eth0 inside: traffic out of it (the
  // sandbox has no CAP_NET_ADMIN over its namespace, so it cannot lift the limit).
  const std::string veth = VethName(slot);
  const std::string netns = "--net=/proc/" + std::to_string(pid) + "/ns/net";
  if (policy.bandwidth_kbit == 0) {
    (void)RunTool({tc_, "qdisc", "del", "dev", veth, "root"});
    if (pid > 0) (void)RunTool({nsenter_, netns, tc_, "qdisc", "del", "dev", "eth0", "root"});
    return {};
  }
  const std::string args = "root tbf rate " + std::to_string(policy.bandwidth_kbit) +
                           "kbit burst " + std::to_string(BurstKbit(policy)) +
                           "kbit latency 100ms\n";
  ASB_TRY_CTX(RunTool({tc_, "-batch", "-"}, "qdisc replace dev " + veth + " " + args),
              "bandwidth limit");
  if (pid > 0) {
    ASB_TRY_CTX(RunTool({nsenter_, netns, tc_, "-batch", "-"}, "qdisc replace dev eth0 " + args),
                "bandwidth limit");
  }
  return {};
}

std::string HostNetwork::GatewayAddress() const { return Dotted(subnet_ + 1); }

Status HostNetwork::Attach(const std::string& id, uint32_t slot, int pid,
                           const NetworkPolicy& policy) {
  std::lock_guard lock(mu_);
  ASB_TRY(EnsureBaseLocked());
  ASB_ASSIGN_OR_RETURN(std::string addr, AddressOf(slot));
  const std::string veth = VethName(slot);
  (void)RunTool({ip_, "link", "del", veth});  // a leftover of a crashed create
  ASB_TRY_CTX(
      RunTool({ip_, "-batch", "-"},
              "link add " + veth + " type veth peer name eth0 netns " + std::to_string(pid) + "\n" +
                  "link set " + veth + " master " + bridge_ + "\n" + "link set dev " + veth +
                  " type bridge_slave isolated on\n" + "link set " + veth + " up\n"),
      "veth");
  ASB_TRY_CTX(
      RunTool({nsenter_, "--net=/proc/" + std::to_string(pid) + "/ns/net", ip_, "-batch", "-"},
              "addr add " + addr + "/" + std::to_string(prefix_len_) + " dev eth0\n" +
                  "link set eth0 up\n" + "route add default via " + Dotted(subnet_ + 1) + "\n"),
      "eth0 in the sandbox");
  ASB_TRY(ApplyPolicyLocked(id, slot, policy, true));
  ASB_TRY(ApplyBandwidthLocked(slot, pid, policy));
  return {};
}

Status HostNetwork::Update(const std::string& id, uint32_t slot, int pid,
                           const NetworkPolicy& policy, bool forget_resolved) {
  std::lock_guard lock(mu_);
  ASB_TRY(EnsureBaseLocked());
  ASB_TRY(ApplyPolicyLocked(id, slot, policy, forget_resolved));
  return ApplyBandwidthLocked(slot, pid, policy);
}

Status HostNetwork::Detach(const std::string& id, uint32_t slot) {
  std::lock_guard lock(mu_);
  auto addr = AddressOf(slot);
  if (!addr) return {};
  {
    std::lock_guard l(clients_mu_);
    in_addr a;
    ::inet_pton(AF_INET, addr->c_str(), &a);
    clients_.erase(ntohl(a.s_addr));
  }
  // Nothing to remove if our tables were never made on this host.
  if (!RunTool({nft_, "list", "table", "inet", table_})) {
    (void)RunTool({ip_, "link", "del", VethName(slot)});
    return {};
  }
  // Each "add" makes the following "delete" valid whether or not the thing existed, so the
  // transaction is idempotent. The chain comes first: nft refuses a map element that jumps to a
  // chain that does not exist, which failed the destroy of every sandbox without network once
  // the tables existed (that sandbox never had a chain).
  const std::string t = table_, set = SetName(id), veth = VethName(slot);
  std::string s;
  s += "add chain inet " + t + " " + id + "\n";
  s += "add element inet " + t + " sandboxes { " + *addr + " : jump " + id + " }\n";
  s += "delete element inet " + t + " sandboxes { " + *addr + " : jump " + id + " }\n";
  s += "flush chain inet " + t + " " + id + "\ndelete chain inet " + t + " " + id + "\n";
  s += "add set inet " + t + " " + set + " { type ipv4_addr; flags timeout; }\n";
  s += "delete set inet " + t + " " + set + "\n";
  s += "add table bridge " + t + "\nadd set bridge " + t + " ports { type ifname . ipv4_addr; }\n";
  s += "add element bridge " + t + " ports { \"" + veth + "\" . " + *addr + " }\n";
  s += "delete element bridge " + t + " ports { \"" + veth + "\" . " + *addr + " }\n";
  ASB_TRY_CTX(RunTool({nft_, "-f", "-"}, s), "network detach");
  // The veth normally died with the sandbox's namespace. The kernel tears a namespace down
  // after its last process is gone, so the device can vanish between the check and the
  // delete (seen once in CI as a 502 on DELETE: "Cannot find device"): gone is success.
  if (RunTool({ip_, "link", "show", "dev", veth})) {
    auto del = RunTool({ip_, "link", "del", veth});
    if (!del && RunTool({ip_, "link", "show", "dev", veth})) {
      return Fail(del.error().WithContext("network detach"));
    }
  }
  return {};
}

}  // namespace asb::isolation::net
