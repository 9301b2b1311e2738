// The port tools, over what the REST API has for ports (handlers_ports.cc): every port a
// sandbox listens on is reachable through /v1/sandboxes/{id}/ports/{port}/ with the API key,
// so there is nothing to expose or unexpose. sandbox_port_list finds the listening ports
// (the sandbox's /proc/net/tcp{,6}, read with an exec) and sandbox_port_request sends one HTTP
// request through the proxy (the manager back end speaks to the port as the proxy would).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/text.h"
#include "mcp/tools_util.h"

namespace asb::mcp::tools_internal {

namespace json = boost::json;

namespace {

constexpr int64_t kMaxPort = 65535;
/// sandbox_port_request's limits: target, headers, body, time.
constexpr size_t kMaxPathBytes = 8 * 1024;
constexpr size_t kMaxHeaders = 32;
constexpr size_t kMaxHeaderBytes = 8 * 1024;  // name + value of one header
constexpr size_t kMaxBodyBytes = 1024 * 1024;
constexpr double kDefaultTimeoutSeconds = 30;
constexpr double kMaxTimeoutSeconds = 300;

std::string PortPath(const std::string& id, int64_t port) {
  return "/v1/sandboxes/" + id + "/ports/" + std::to_string(port) + "/";
}

// ---- sandbox_port_list ----------------------------------------------------------------------

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// /proc/net/tcp{,6} write addresses as 32-bit words in host (little-endian) byte order.
bool DecodeAddress(std::string_view hex, std::vector<unsigned char>* bytes) {
  if (hex.size() != 8 && hex.size() != 32) return false;
  bytes->clear();
  for (size_t w = 0; w < hex.size(); w += 8) {
    for (int i = 3; i >= 0; --i) {
      int hi = HexDigit(hex[w + 2 * i]), lo = HexDigit(hex[w + 2 * i + 1]);
      if (hi < 0 || lo < 0) return false;
      bytes->push_back(static_cast<unsigned char>(hi * 16 + lo));
    }
  }
  return true;
}

std::string Ipv4(const unsigned char* b) {
  return std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) + "." +
         std::to_string(b[3]);
}

// The address as text, and whether the proxy (which connects to 127.0.0.1) reaches it.
std::pair<std::string, bool> AddressText(const std::vector<unsigned char>& b) {
  if (b.size() == 4) return {Ipv4(b.data()), b[0] == 127 || (b[0] | b[1] | b[2] | b[3]) == 0};
  bool zero10 = std::all_of(b.begin(), b.begin() + 10, [](unsigned char c) { return c == 0; });
  bool zero12 = zero10 && b[10] == 0 && b[11] == 0;
  if (zero12 && std::all_of(b.begin() + 12, b.end(), [](unsigned char c) { return c == 0; })) {
    return {"::", true};  // dual-stack: IPv4 connections arrive too
  }
  if (zero12 && b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] == 1) return {"::1", false};
  if (zero10 && b[10] == 0xff && b[11] == 0xff) {
    return {"::ffff:" + Ipv4(b.data() + 12), b[12] == 127 || (b[12] | b[13] | b[14] | b[15]) == 0};
  }
  std::string s;
  const char* digits = "0123456789abcdef";
  for (size_t i = 0; i < 16; i += 2) {
    if (i) s += ':';
    unsigned v = b[i] * 256u + b[i + 1];
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      unsigned d = (v >> shift) & 0xf;
      if (d || started || shift == 0) s += digits[d], started = true;
    }
  }
  return {s, false};
}

struct Listener {
  int64_t port;
  std::string address;
  bool reachable;
  bool operator<(const Listener& o) const {
    return std::tie(port, address) < std::tie(o.port, o.address);
  }
};

// The LISTEN (state 0A) sockets of /proc/net/tcp and /proc/net/tcp6 text.
std::set<Listener> ParseListeners(std::string_view text) {
  std::set<Listener> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    std::vector<std::string_view> f;
    for (size_t i = 0; i < line.size() && f.size() < 4;) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) f.push_back(line.substr(i, j - i));
      i = j;
    }
    if (f.size() < 4 || f[3] != "0A") continue;
    size_t colon = f[1].find(':');
    if (colon == std::string_view::npos) continue;
    std::vector<unsigned char> addr;
    int64_t port = 0;
    std::string_view port_hex = f[1].substr(colon + 1);
    if (!DecodeAddress(f[1].substr(0, colon), &addr) || port_hex.size() != 4) continue;
    for (char c : port_hex) port = port * 16 + std::max(HexDigit(c), 0);
    auto [address, reachable] = AddressText(addr);
    out.insert(Listener{port, std::move(address), reachable});
  }
  return out;
}

json::object List(Args& args, ToolBackend& b) {
  auto id = args.Need("sandbox_id");
  if (!id) return args.error();
  json::object body;
  body["argv"] = json::array{"cat", "/proc/net/tcp", "/proc/net/tcp6"};
  std::string text;
  ExecHooks hooks;
  hooks.output = [&](std::string_view stream, std::string_view data) {
    if (stream == "stdout") text.append(data);
  };
  auto exit = b.Exec(*id, body, hooks);
  if (!exit) return ErrorResult(exit.error());
  json::array ports;
  std::string shown;
  for (const Listener& l : ParseListeners(text)) {
    json::object o;
    o["port"] = l.port;
    o["address"] = l.address;
    o["reachable"] = l.reachable;
    o["path"] = PortPath(*id, l.port);
    ports.emplace_back(std::move(o));
    shown += std::to_string(l.port) + " on " + l.address +
             (l.reachable ? " -> " + PortPath(*id, l.port) + "\n"
                          : " (not reachable: listens on neither 127.0.0.1 nor all addresses)\n");
  }
  if (shown.empty()) shown = "no listening TCP ports\n";
  json::object s;
  s["ports"] = std::move(ports);
  return OkResult(std::move(s), std::move(shown));
}

// ---- sandbox_port_request -------------------------------------------------------------------

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// RFC 9110 token characters.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Headers the proxy sets or drops itself (api/port_proxy.cc), which a caller cannot send.
bool Reserved(const std::string& lower) {
  static const char* kNames[] = {
      "host",          "connection",          "keep-alive", "proxy-connection", "te",
      "trailer",       "transfer-encoding",   "upgrade",    "content-length",   "expect",
      "authorization", "proxy-authorization", "x-api-key",  "x-request-id"};
  for (const char* n : kNames) {
    if (lower == n) return true;
  }
  return false;
}

// Headers of the answer that describe our transport, not the app's answer.
bool Hidden(const std::string& lower) {
  return lower == "connection" || lower == "keep-alive" || lower == "transfer-encoding" ||
         lower == "content-length" || lower == "x-request-id" || lower == "server";
}

json::object Request(Args& args, ToolBackend& b, const CallContext& ctx) {
  auto id = args.Need("sandbox_id");
  auto port = args.NeedInt("port", 1, kMaxPort);
  auto method = args.Opt("method");
  auto path = args.Opt("path");
  auto body = args.Opt("body");
  auto timeout = args.Number("timeout", kMaxTimeoutSeconds, false, kDefaultTimeoutSeconds);
  if (args.failed()) return args.error();
  PortRequest req;
  req.port = *port;
  req.method = method ? *method : "GET";
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST" && req.method != "PUT" &&
      req.method != "PATCH" && req.method != "DELETE") {
    return ErrorResult("invalid_request", "method: must be GET, HEAD, POST, PUT, PATCH or DELETE");
  }
  req.path = path.value_or("/");
  if (req.path.empty() || req.path[0] != '/' || req.path.size() > kMaxPathBytes ||
      std::any_of(req.path.begin(), req.path.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    return ErrorResult("invalid_request",
                       "path: must start with '/', have no spaces or control "
                       "characters (percent-encode them) and be at most " +
                           std::to_string(kMaxPathBytes) + " bytes");
  }
  req.body = body.value_or("");
  if (req.body.size() > kMaxBodyBytes) {
    return ErrorResult("invalid_request", "body: at most " + std::to_string(kMaxBodyBytes) +
                                              " bytes (got " + std::to_string(req.body.size()) +
                                              ")");
  }
  bool has_type = false;
  if (const json::value* h = args.Raw("headers")) {
    if (!h->is_object()) return ErrorResult("invalid_request", "headers: must be an object");
    if (h->as_object().size() > kMaxHeaders) {
      return ErrorResult("invalid_request",
                         "headers: at most " + std::to_string(kMaxHeaders) + " headers");
    }
    for (const auto& kv : h->as_object()) {
      std::string name(kv.key());
      if (!kv.value().is_string()) {
        return ErrorResult("invalid_request", "headers." + name + ": must be a string");
      }
      std::string value(kv.value().as_string());
      if (!IsToken(name) || value.find_first_of("\r\n", 0) != std::string::npos ||
          value.find('\0') != std::string::npos || name.size() + value.size() > kMaxHeaderBytes) {
        return ErrorResult(
            "invalid_request",
            "headers." + api::SanitizeUtf8(name) +
                ": names are HTTP tokens and values have no CR, LF or NUL (at most " +
                std::to_string(kMaxHeaderBytes) + " bytes together)");
      }
      std::string lower = Lower(name);
      if (Reserved(lower)) {
        return ErrorResult("invalid_request",
                           "headers." + name + ": set by the ports proxy, cannot be sent");
      }
      has_type |= lower == "content-type";
      req.headers.emplace_back(std::move(name), std::move(value));
    }
  }
  if (!req.body.empty() && !has_type) {
    req.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  }
  req.timeout_ms = static_cast<int64_t>(*timeout * 1000);
  req.max_body_bytes = kMaxTextBytes;
  req.cancelled = ctx.cancelled;
  auto r = b.RequestPort(*id, req);
  if (!r) return ErrorResult(r.error());

  json::object headers;
  std::string text = "HTTP " + std::to_string(r->status) + "\n";
  for (auto& [name, value] : r->headers) {
    if (Hidden(name)) continue;
    text += name + ": " + value + "\n";
    auto it = headers.find(name);
    if (it != headers.end()) {
      it->value() = std::string(it->value().as_string()) + ", " + value;
    } else {
      headers[name] = value;
    }
  }
  json::object s;
  s["status"] = r->status;
  s["headers"] = std::move(headers);
  s["body_bytes"] = r->body.size();
  s["truncated"] = r->truncated;
  s["path"] = PortPath(*id, req.port) + req.path.substr(1);
  text += "\n";
  if (IsValidUtf8(r->body)) {
    s["encoding"] = "utf8";
    text += r->body;
    s["body"] = std::move(r->body);
  } else {
    s["encoding"] = "base64";
    s["body"] = api::Base64Encode(r->body);
    text += "(binary body, " + std::to_string(r->body.size()) + " bytes, base64 in body)";
  }
  if (r->truncated) text += "\n[body truncated at " + std::to_string(kMaxTextBytes) + " bytes]";
  return OkResult(std::move(s), std::move(text));
}

}  // namespace

void AddPortTools(json::array& defs) {
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    json::object item;
    item["port"] = Prop("integer", "");
    item["address"] = Prop("string", "The address it listens on (0.0.0.0, 127.0.0.1, ::, ...).");
    item["reachable"] = Prop("boolean",
                             "The proxy reaches it (it listens on 127.0.0.1 or on "
                             "all addresses).");
    item["path"] = Prop("string", "Its URL path on this server (with your API key).");
    json::object o;
    o["ports"] =
        ArrayOf(ObjectSchema(std::move(item), {"port", "address", "reachable", "path"}), "");
    defs.emplace_back(Tool("sandbox_port_list", "List listening ports",
                           "List the TCP ports that programs in the sandbox listen on, and the "
                           "URL path of each on this server. Every port is reachable that "
                           "way; nothing needs to be exposed first.",
                           ObjectSchema(std::move(p), {"sandbox_id"}),
                           ObjectSchema(std::move(o), {"ports"})));
  }
  {
    json::object p;
    p["sandbox_id"] = Prop("string", "");
    p["port"] = IntProp("The port a program in the sandbox listens on.", 1, kMaxPort);
    p["method"] = Prop("string", "Default GET.");
    p["method"].as_object()["enum"] = json::array{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
    p["path"] = Prop("string",
                     "Path and query, starting with '/' (default /), at most 8192 "
                     "bytes.");
    json::object h = StringMapProp(
        "Request headers (at most 32; not Host, Authorization or "
        "framing headers).");
    h["maxProperties"] = static_cast<int64_t>(kMaxHeaders);
    p["headers"] = std::move(h);
    p["body"] = Prop("string",
                     "Request body (text, at most 1 MiB; Content-Type defaults to "
                     "text/plain).");
    json::object t = Prop("number", "Seconds for the whole exchange (default 30, at most 300).");
    t["exclusiveMinimum"] = 0;
    t["maximum"] = kMaxTimeoutSeconds;
    p["timeout"] = std::move(t);
    json::object o;
    o["status"] = Prop("integer", "");
    o["headers"] = StringMapProp("Response headers, lower-case names.");
    o["body"] = Prop("string", "");
    o["encoding"] = EncodingProp("utf8 when the body is text, base64 otherwise.");
    o["body_bytes"] = Prop("integer", "Bytes of body returned.");
    o["truncated"] = Prop("boolean", "The body was cut at 262144 bytes.");
    o["path"] = Prop("string", "The URL path this request took on this server.");
    defs.emplace_back(Tool("sandbox_port_request", "HTTP request to a port",
                           "Send an HTTP request to a server running in the sandbox (for "
                           "example one started with sandbox_process_start) and return its "
                           "answer; 4xx/5xx answers are results, not errors.",
                           ObjectSchema(std::move(p), {"sandbox_id", "port"}),
                           ObjectSchema(std::move(o), {"status", "headers", "body", "encoding"})));
  }
}

std::optional<json::object> CallPortTool(std::string_view name, const json::object& a,
                                         ToolBackend& b, const CallContext& ctx) {
  Args args(a);
  if (name == "sandbox_port_list") return List(args, b);
  if (name == "sandbox_port_request") return Request(args, b, ctx);
  return std::nullopt;
}

}  // namespace asb::mcp::tools_internal
