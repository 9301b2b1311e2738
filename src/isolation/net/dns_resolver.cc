#include "isolation/net/dns_resolver.h"

#include <arpa/inet.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <map>
#include <thread>
#include <utility>

namespace asb::isolation::net {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using asio::ip::udp;
using namespace asio::experimental::awaitable_operators;

constexpr size_t kHeader = 12;
constexpr int kMaxInFlight = 256;   // queries being forwarded at once (all clients)
constexpr int kMaxTcpClients = 64;  // open TCP connections at once (all clients)
// Open TCP connections at once per client address: without a share, one sandbox holding every
// slot (a query every < kTcpIdleTimeout keeps a connection) denied TCP DNS to all the others.
constexpr int kMaxTcpPerClient = 8;
constexpr auto kUpstreamTimeout = std::chrono::seconds(2);
constexpr auto kTcpIdleTimeout = std::chrono::seconds(10);
constexpr auto kDropLogWindow = std::chrono::seconds(60);
constexpr int kDropLogBurst = 20;
// Completion token for operations whose errors are results, not exceptions.
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

uint16_t U16(std::string_view m, size_t off) {
  return static_cast<uint16_t>((static_cast<uint8_t>(m[off]) << 8) |
                               static_cast<uint8_t>(m[off + 1]));
}

// Skips a (possibly compressed) name at `*off`. False if malformed.
bool SkipName(std::string_view m, size_t* off) {
  for (int guard = 0; guard < 128; ++guard) {
    if (*off >= m.size()) return false;
    const uint8_t len = static_cast<uint8_t>(m[*off]);
    if ((len & 0xC0) == 0xC0) {
      if (*off + 2 > m.size()) return false;
      *off += 2;
      return true;
    }
    if (len & 0xC0) return false;
    *off += 1 + len;
    if (len == 0) return true;
  }
  return false;
}

// A name from a sandbox's query for the log: printable ASCII as is; backslash, '"' and every other
// byte as \xNN; at most 253 bytes of it (ParseQuestionName's bound).
std::string EscapeForLog(std::string_view s) {
  std::string out;
  for (unsigned char c : s.substr(0, 253)) {
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '"') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// End of the question section (offset after QTYPE/QCLASS of every question), or 0.
size_t QuestionEnd(std::string_view m) {
  if (m.size() < kHeader) return 0;
  size_t off = kHeader;
  for (int q = 0; q < U16(m, 4); ++q) {
    if (!SkipName(m, &off) || off + 4 > m.size()) return 0;
    off += 4;
  }
  return off;
}

}  // namespace

Result<std::string> ParseQuestionName(std::string_view m) {
  auto bad = [](const char* why) { return Fail(Error::InvalidArgument(why)); };
  if (m.size() < kHeader + 5) return bad("shorter than a header and a question");
  if (U16(m, 2) & 0x8000) return bad("not a query");
  if (U16(m, 4) != 1) return bad("QDCOUNT must be 1");
  std::string name;
  size_t off = kHeader;
  for (;;) {
    if (off >= m.size()) return bad("truncated name");
    const uint8_t len = static_cast<uint8_t>(m[off]);
    if (len & 0xC0) return bad("compressed or extended label in a question");
    ++off;
    if (len == 0) break;
    if (off + len > m.size()) return bad("truncated label");
    if (!name.empty()) name += '.';
    for (size_t i = 0; i < len; ++i) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(m[off + i])));
    }
    off += len;
    if (name.size() > 253) return bad("name longer than 253");
  }
  if (off + 4 > m.size()) return bad("truncated question");
  return name;
}

std::string MakeErrorReply(std::string_view q, int rcode) {
  if (q.size() < kHeader) return {};
  size_t end = U16(q, 4) == 1 ? QuestionEnd(q) : 0;
  std::string r(q.substr(0, end == 0 ? kHeader : end));
  const uint16_t flags = U16(q, 2);
  // QR, the query's opcode and RD, RA, the rcode.
  const uint16_t out =
      static_cast<uint16_t>(0x8000 | (flags & 0x7800) | (flags & 0x0100) | 0x0080 | (rcode & 0xF));
  r[2] = static_cast<char>(out >> 8);
  r[3] = static_cast<char>(out & 0xFF);
  r[4] = 0;
  r[5] = end == 0 ? 0 : 1;
  for (int i = 6; i < 12; ++i) r[i] = 0;
  return r;
}

std::vector<DnsAddress> ParseAnswerAddresses(std::string_view m) {
  std::vector<DnsAddress> out;
  size_t off = QuestionEnd(m);
  if (off == 0) return out;
  const int an = U16(m, 6);
  for (int i = 0; i < an; ++i) {
    if (!SkipName(m, &off) || off + 10 > m.size()) break;
    const uint16_t type = U16(m, off);
    const uint16_t cls = U16(m, off + 2);
    const uint32_t ttl = (uint32_t{U16(m, off + 4)} << 16) | U16(m, off + 6);
    const uint16_t rdlen = U16(m, off + 8);
    off += 10;
    if (off + rdlen > m.size()) break;
    if (type == 1 && cls == 1 && rdlen == 4) {
      uint32_t a = 0;
      for (int k = 0; k < 4; ++k) a = (a << 8) | static_cast<uint8_t>(m[off + k]);
      out.push_back({a, ttl});
    }
    off += rdlen;
  }
  return out;
}

namespace {

// A name's labels, read from `m` at `*off` following compression pointers (backwards only, so
// no loop); `*off` moves past the name where it starts. False if malformed or over 255 bytes.
bool ReadName(std::string_view m, size_t* off, std::vector<std::string>* labels) {
  labels->clear();
  size_t pos = *off, wire = 1;
  bool jumped = false;
  for (int guard = 0; guard < 128; ++guard) {
    if (pos >= m.size()) return false;
    const uint8_t len = static_cast<uint8_t>(m[pos]);
    if ((len & 0xC0) == 0xC0) {
      if (pos + 2 > m.size()) return false;
      const size_t target = ((len & 0x3F) << 8) | static_cast<uint8_t>(m[pos + 1]);
      if (target >= pos) return false;
      if (!jumped) *off = pos + 2;
      jumped = true;
      pos = target;
      continue;
    }
    if (len & 0xC0) return false;
    if (len == 0) {
      if (!jumped) *off = pos + 1;
      return true;
    }
    if (pos + 1 + len > m.size() || (wire += 1 + len) > 255) return false;
    labels->emplace_back(m.substr(pos + 1, len));
    pos += 1 + len;
  }
  return false;
}

// Writes names into a message being built, compressing against the suffixes written before
// (RFC 1035 4.1.4; exact bytes, so case is preserved).
class NameWriter {
 public:
  explicit NameWriter(std::string* out) : out_(out) {}
  // Records a name already in `out` at `at` (the question's).
  void Note(const std::vector<std::string>& labels, size_t at) {
    for (size_t i = 0; i < labels.size(); ++i) {
      if (at < 0x4000) seen_.emplace_back(Key(labels, i), at);
      at += 1 + labels[i].size();
    }
  }
  void Write(const std::vector<std::string>& labels) {
    for (size_t i = 0; i < labels.size(); ++i) {
      const std::string key = Key(labels, i);
      for (const auto& [k, at] : seen_) {
        if (k == key) {
          *out_ += static_cast<char>(0xC0 | (at >> 8));
          *out_ += static_cast<char>(at & 0xFF);
          return;
        }
      }
      if (out_->size() < 0x4000) seen_.emplace_back(key, out_->size());
      *out_ += static_cast<char>(labels[i].size());
      *out_ += labels[i];
    }
    *out_ += '\0';
  }

 private:
  static std::string Key(const std::vector<std::string>& labels, size_t from) {
    std::string k;
    for (size_t i = from; i < labels.size(); ++i)
      k += static_cast<char>(labels[i].size()) + labels[i];
    return k;
  }
  std::string* out_;
  std::vector<std::pair<std::string, size_t>> seen_;
};

void PutU16(std::string* out, size_t at, size_t v) {
  (*out)[at] = static_cast<char>((v >> 8) & 0xFF);
  (*out)[at + 1] = static_cast<char>(v & 0xFF);
}

std::string Dotted4(uint32_t a) {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr in{htonl(a)};
  ::inet_ntop(AF_INET, &in, buf, sizeof buf);
  return buf;
}

// Why an answer's address is removed, or "" when it is kept.
std::string DropReason4(uint32_t a, const NetworkPolicy& p, const AnswerGuard& g) {
  for (const auto& [net, len] : g.blocked4) {
    const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
    if ((a & mask) == net) return "server or sandbox address";
  }
  std::string_view range;
  const AddressClass cls = ClassifyAddress(a, &range);
  if (cls == AddressClass::kPublic || AllowRuleCovers(p, a)) return "";
  if (cls == AddressClass::kPrivate && p.allow_out.empty()) return "";
  return std::string(range);
}

std::string DropReason6(const unsigned char* b, const AnswerGuard& g) {
  for (const auto& own : g.blocked6) {
    if (std::equal(own.begin(), own.end(), b)) return "server address";
  }
  return std::string(SpecialRange6(b));
}

}  // namespace

FilteredAnswer FilterAnswer(std::string_view m, const NetworkPolicy& p, const AnswerGuard& g) {
  FilteredAnswer f;
  const size_t qend = QuestionEnd(m);
  if (qend == 0) {
    f.reply = std::string(m);
    return f;
  }
  struct Record {
    size_t fixed, end;  // in m: type..rdlength, end of rdata
    std::vector<std::string> owner;
    uint16_t type;
    bool keep;
  };
  std::vector<Record> records;
  size_t off = qend;
  const int an = U16(m, 6);
  for (int i = 0; i < an; ++i) {
    Record r;
    if (!ReadName(m, &off, &r.owner) || off + 10 > m.size()) break;
    r.fixed = off;
    r.type = U16(m, off);
    const uint16_t cls = U16(m, off + 2);
    const uint32_t ttl = (uint32_t{U16(m, off + 4)} << 16) | U16(m, off + 6);
    const uint16_t rdlen = U16(m, off + 8);
    off += 10;
    if (off + rdlen > m.size()) break;
    const auto* rd = reinterpret_cast<const unsigned char*>(m.data() + off);
    std::string why;
    if (r.type == 1 && cls == 1 && rdlen == 4) {
      const uint32_t a =
          (uint32_t{rd[0]} << 24) | (uint32_t{rd[1]} << 16) | (uint32_t{rd[2]} << 8) | rd[3];
      why = DropReason4(a, p, g);
      if (!why.empty()) {
        f.dropped.push_back(Dotted4(a) + " (" + why + ")");
      } else if (ClassifyAddress(a) == AddressClass::kPublic) {
        f.admitted.push_back({a, ttl});
      }
    } else if (r.type == 28 && cls == 1 && rdlen == 16) {
      why = DropReason6(rd, g);
      if (!why.empty()) {
        char buf[INET6_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET6, rd, buf, sizeof buf);
        f.dropped.push_back(std::string(buf) + " (" + why + ")");
      }
    }
    off += rdlen;
    r.end = off;
    r.keep = why.empty();
    records.push_back(std::move(r));
  }
  const bool complete = records.size() == static_cast<size_t>(an);
  if (f.dropped.empty()) {
    f.reply = std::string(m);
    return f;
  }
  // Rebuild: header and question as they were, the kept records with their names (and the
  // names in RFC 1035 rdata) written again, so no pointer into a removed record survives.
  std::string out(m.substr(0, qend));
  NameWriter names(&out);
  {
    size_t q = kHeader;
    std::vector<std::string> qname;
    if (ReadName(m, &q, &qname)) names.Note(qname, kHeader);
  }
  size_t kept = 0;
  for (const auto& r : records) {
    if (!r.keep) continue;
    std::vector<std::string> labels;
    names.Write(r.owner);
    out += m.substr(r.fixed, 8);  // type, class, ttl
    const size_t rdlen_at = out.size();
    out += std::string(2, '\0');
    const size_t rd_start = r.fixed + 10, rd_end = r.end;
    size_t rp = rd_start;
    bool ok = true;
    auto name = [&] {
      ok = ok && ReadName(m, &rp, &labels) && rp <= rd_end;
      if (ok) names.Write(labels);
    };
    auto bytes = [&](size_t n) {
      ok = ok && rp + n <= rd_end;
      if (ok) out += m.substr(rp, n);
      rp += n;
    };
    const size_t before = out.size();
    switch (r.type) {
      case 2:
      case 5:
      case 12:
      case 39:  // NS, CNAME, PTR, DNAME
        name();
        break;
      case 15:  // MX
        bytes(2);
        name();
        break;
      case 6:  // SOA
        name();
        name();
        bytes(20);
        break;
      default:  // no compressed names (RFC 3597 3)
        bytes(rd_end - rd_start);
        break;
    }
    if (!ok || rp != rd_end) {  // odd rdata: copied as it came (no names in it for us)
      out.resize(before);
      out += m.substr(rd_start, rd_end - rd_start);
    }
    PutU16(&out, rdlen_at, out.size() - rdlen_at - 2);
    ++kept;
  }
  // The OPT pseudo-record (EDNS) of the additional section, if the sections parse.
  size_t opts = 0;
  if (complete) {
    size_t pos = records.empty() ? qend : records.back().end;
    const int rest = U16(m, 8) + U16(m, 10);
    std::vector<std::string> labels;
    for (int i = 0; i < rest; ++i) {
      const size_t start = pos;
      if (!ReadName(m, &pos, &labels) || pos + 10 > m.size()) break;
      const size_t end = pos + 10 + U16(m, pos + 8);
      if (end > m.size()) break;
      if (i >= U16(m, 8) && U16(m, pos) == 41 && labels.empty()) {
        out += m.substr(start, end - start);
        ++opts;
      }
      pos = end;
    }
  }
  PutU16(&out, 6, kept);
  PutU16(&out, 8, 0);
  PutU16(&out, 10, opts);
  if (out.size() > m.size()) {
    // Longer than what came (a contrived reply): truncated, the client asks again over TCP.
    out.resize(qend);
    out[2] = static_cast<char>(out[2] | 0x02);  // TC
    PutU16(&out, 6, 0);
    PutU16(&out, 10, 0);
  }
  f.reply = std::move(out);
  return f;
}

Result<DnsUpstream> ParseUpstream(std::string_view text) {
  DnsUpstream u;
  std::string host(text);
  if (size_t c = host.find(':'); c != std::string::npos) {
    unsigned port = 0;
    auto tail = std::string_view(host).substr(c + 1);
    auto [p, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), port);
    if (ec != std::errc() || p != tail.data() + tail.size() || port == 0 || port > 65535) {
      return Fail(Error::InvalidArgument("DNS upstream '" + std::string(text) + "': bad port"));
    }
    u.port = static_cast<uint16_t>(port);
    host.resize(c);
  }
  in_addr a;
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) {
    return Fail(
        Error::InvalidArgument("DNS upstream '" + std::string(text) + "': not an IPv4 address"));
  }
  u.addr = ntohl(a.s_addr);
  return u;
}

std::vector<DnsUpstream> UpstreamsFromResolvConf(std::string_view text) {
  std::vector<DnsUpstream> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.starts_with("nameserver")) continue;
    line.remove_prefix(10);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) {
      line.remove_prefix(1);
    }
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
      line.remove_suffix(1);
    }
    if (line.find(':') != std::string_view::npos) continue;  // IPv6
    if (auto u = ParseUpstream(line)) out.push_back(*u);
  }
  return out;
}

struct DnsResolver::Impl {
  // Declared before io: destroying io destroys the suspended connection coroutines, whose
  // guards decrement these counters.
  int tcp_clients = 0;                     // io thread only
  std::map<uint32_t, int> tcp_per_client;  // io thread only; open connections by address
  asio::io_context io{1};
  udp::socket udp_sock{io};
  tcp::acceptor acceptor{io};
  std::vector<DnsUpstream> upstreams;
  PolicyFor policy_for;
  Learned learned;
  AnswerGuard guard;
  int in_flight = 0;  // io thread only
  // Log budget for dropped answers (io thread only): a sandbox asking in a loop must not
  // flood the log. kDropLogBurst lines per kDropLogWindow, then one count of the rest.
  std::chrono::steady_clock::time_point drop_log_window{};
  int drop_log_lines = 0;
  uint64_t drop_log_suppressed = 0;

  void LogDropped(uint32_t client, std::string_view name, const std::vector<std::string>& d) {
    const auto now = std::chrono::steady_clock::now();
    if (now - drop_log_window > kDropLogWindow) {
      drop_log_window = now;
      drop_log_lines = 0;
    }
    if (drop_log_lines >= kDropLogBurst) {
      ++drop_log_suppressed;
      return;
    }
    ++drop_log_lines;
    std::string list;
    for (size_t i = 0; i < d.size() && i < 8; ++i) list += (i ? ", " : "") + d[i];
    if (d.size() > 8) list += ", and " + std::to_string(d.size() - 8) + " more";
    spdlog::warn(
        "dns: answer for sandbox {} name \"{}\" dropped {} (private, local or host address "
        "not in allow_out){}",
        asio::ip::address_v4(client).to_string(), EscapeForLog(name), list,
        drop_log_suppressed ? fmt::format("; {} earlier such lines suppressed",
                                          std::exchange(drop_log_suppressed, 0))
                            : std::string());
  }
  std::thread thread;

  awaitable<std::string> Forward(std::string query) {
    for (const auto& up : upstreams) {
      udp::socket s(io, udp::v4());
      udp::endpoint ep(asio::ip::address_v4(up.addr), up.port);
      boost::system::error_code ec;
      s.connect(ep, ec);
      if (ec) continue;
      co_await s.async_send(asio::buffer(query), use_awaitable);
      std::string buf(4096, '\0');
      asio::steady_timer timer(io, kUpstreamTimeout);
      // An error (ICMP port unreachable) moves on to the next upstream at once.
      auto r = co_await (s.async_receive(asio::buffer(buf), kAsTuple) ||
                         timer.async_wait(use_awaitable));
      if (r.index() != 0 || std::get<0>(std::get<0>(r))) continue;
      buf.resize(std::get<1>(std::get<0>(r)));
      if (buf.size() < kHeader || buf[0] != query[0] || buf[1] != query[1]) continue;
      co_return buf;
    }
    co_return std::string();
  }

  awaitable<std::string> Answer(std::string query, uint32_t client) {
    auto name = ParseQuestionName(query);
    if (!name) co_return MakeErrorReply(query, kRcodeFormErr);
    auto policy = policy_for(client);
    if (!policy) co_return MakeErrorReply(query, kRcodeRefused);
    if (!NameAllowed(*policy, *name)) co_return MakeErrorReply(query, kRcodeNxDomain);
    if (in_flight >= kMaxInFlight) co_return MakeErrorReply(query, kRcodeServFail);
    ++in_flight;
    std::string reply;
    try {
      reply = co_await Forward(query);
    } catch (const std::exception&) {
    }
    --in_flight;
    if (reply.empty()) co_return MakeErrorReply(query, kRcodeServFail);
    FilteredAnswer f = FilterAnswer(reply, *policy, guard);
    if (!f.dropped.empty()) LogDropped(client, *name, f.dropped);
    learned(client, f.admitted);
    co_return std::move(f.reply);
  }

  awaitable<void> HandleUdp(std::string query, udp::endpoint from) {
    try {
      std::string reply = co_await Answer(std::move(query), from.address().to_v4().to_uint());
      if (!reply.empty()) co_await udp_sock.async_send_to(asio::buffer(reply), from, use_awaitable);
    } catch (const std::exception& e) {
      spdlog::debug("dns udp: {}", e.what());
    }
  }

  awaitable<void> UdpLoop() {
    std::string buf(4096, '\0');
    for (;;) {
      udp::endpoint from;
      boost::system::error_code ec;
      size_t n = co_await udp_sock.async_receive_from(asio::buffer(buf), from,
                                                      asio::redirect_error(use_awaitable, ec));
      if (ec == asio::error::operation_aborted) co_return;
      if (ec || !from.address().is_v4()) continue;
      asio::co_spawn(io, HandleUdp(buf.substr(0, n), from), asio::detached);
    }
  }

  // TcpLoop counted the connection (before the spawn, so a burst of accepts sees it).
  awaitable<void> HandleTcp(tcp::socket sock, uint32_t client) {
    struct Count {
      Impl* self;
      uint32_t client;
      ~Count() {
        --self->tcp_clients;
        if (--self->tcp_per_client[client] == 0) self->tcp_per_client.erase(client);
      }
    } count{this, client};
    try {
      for (;;) {
        uint8_t len_buf[2];
        asio::steady_timer timer(io, kTcpIdleTimeout);
        // The reads complete as (error, n) tuples: `||` waits for the first operation that
        // succeeds, so a read that threw on the client's close would leave the slot held until
        // the timer fired (a client could keep its share by opening and closing).
        auto r = co_await (asio::async_read(sock, asio::buffer(len_buf), kAsTuple) ||
                           timer.async_wait(use_awaitable));
        if (r.index() != 0 || std::get<0>(std::get<0>(r))) co_return;
        std::string query((len_buf[0] << 8) | len_buf[1], '\0');
        timer.expires_after(kTcpIdleTimeout);
        auto r2 = co_await (asio::async_read(sock, asio::buffer(query), kAsTuple) ||
                            timer.async_wait(use_awaitable));
        if (r2.index() != 0 || std::get<0>(std::get<0>(r2))) co_return;
        std::string reply = co_await Answer(std::move(query), client);
        if (reply.empty() || reply.size() > 65535) co_return;
        const uint8_t out_len[2] = {static_cast<uint8_t>(reply.size() >> 8),
                                    static_cast<uint8_t>(reply.size() & 0xFF)};
        std::array<asio::const_buffer, 2> bufs = {asio::buffer(out_len), asio::buffer(reply)};
        co_await asio::async_write(sock, bufs, use_awaitable);
      }
    } catch (const std::exception& e) {
      spdlog::debug("dns tcp: {}", e.what());
    }
  }

  awaitable<void> TcpLoop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec == asio::error::operation_aborted) co_return;
      if (ec) continue;
      const tcp::endpoint peer = s.remote_endpoint(ec);
      if (ec || !peer.address().is_v4()) continue;
      const uint32_t client = peer.address().to_v4().to_uint();
      // Over a cap the connection is closed at once: a flood gets nothing.
      if (tcp_clients >= kMaxTcpClients) continue;
      if (auto it = tcp_per_client.find(client);
          it != tcp_per_client.end() && it->second >= kMaxTcpPerClient) {
        continue;
      }
      ++tcp_clients;
      ++tcp_per_client[client];
      asio::co_spawn(io, HandleTcp(std::move(s), client), asio::detached);
    }
  }
};

DnsResolver::DnsResolver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DnsResolver::~DnsResolver() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<DnsResolver>> DnsResolver::Start(uint32_t listen_addr, uint16_t port,
                                                        std::vector<DnsUpstream> upstreams,
                                                        PolicyFor policy_for, Learned learned,
                                                        AnswerGuard guard) {
  auto impl = std::make_unique<Impl>();
  impl->guard = std::move(guard);
  impl->upstreams = std::move(upstreams);
  impl->policy_for = std::move(policy_for);
  impl->learned = std::move(learned);
  const auto addr = asio::ip::address_v4(listen_addr);
  boost::system::error_code ec;
  impl->udp_sock.open(udp::v4(), ec);
  if (!ec) impl->udp_sock.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->udp_sock.bind(udp::endpoint(addr, port), ec);
  if (ec) {
    return Fail(
        Error::FromErrno(ErrorCode::kConflict, ec.value(),
                         "DNS resolver udp bind " + addr.to_string() + ":" + std::to_string(port)));
  }
  impl->acceptor.open(tcp::v4(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(tcp::endpoint(addr, port), ec);
  if (!ec) impl->acceptor.listen(64, ec);
  if (ec) {
    return Fail(
        Error::FromErrno(ErrorCode::kConflict, ec.value(),
                         "DNS resolver tcp bind " + addr.to_string() + ":" + std::to_string(port)));
  }
  Impl* p = impl.get();
  asio::co_spawn(p->io, p->UdpLoop(), asio::detached);
  asio::co_spawn(p->io, p->TcpLoop(), asio::detached);
  p->thread = std::thread([p] {
    for (;;) {
      try {
        p->io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::warn("dns resolver: {}", e.what());
      }
    }
  });
  return std::unique_ptr<DnsResolver>(new DnsResolver(std::move(impl)));
}

}  // namespace asb::isolation::net
