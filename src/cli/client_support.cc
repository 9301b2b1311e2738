#include "cli/client_support.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "api/url.h"

namespace asb::cli {

namespace json = boost::json;

ClientGlobals& Globals() {
  static ClientGlobals g;
  return g;
}

std::string ServerUrl() {
  if (!Globals().url.empty()) return Globals().url;
  const char* url = std::getenv("AGENT_SANDBOX_URL");
  return url && *url ? url : "http://127.0.0.1:8080";
}

std::string ApiKey() {
  if (!Globals().api_key.empty()) return Globals().api_key;
  const char* key = std::getenv("AGENT_SANDBOX_API_KEY");
  return key ? key : "";
}

Result<api::HttpClient> MakeClient() { return api::HttpClient::Create(ServerUrl(), ApiKey()); }

Error ServerError(const api::ClientResponse& r) {
  std::string code = r.error_code.empty() ? "http " + std::to_string(r.status) : r.error_code;
  std::string msg = r.error_message.empty() ? r.body : r.error_message;
  return Error(ErrorCodeFromName(r.error_code), code + ": " + msg);
}

Result<api::ClientResponse> Call(std::string_view method, const std::string& target,
                                 std::string_view body, std::string_view type) {
  ASB_ASSIGN_OR_RETURN(api::HttpClient c, MakeClient());
  ASB_ASSIGN_OR_RETURN(api::ClientResponse r, c.Request(method, target, body, type));
  if (r.status >= 300) return Fail(ServerError(r));
  return r;
}

Result<json::value> CallJson(std::string_view method, const std::string& target,
                             std::string_view body) {
  ASB_ASSIGN_OR_RETURN(api::ClientResponse r, Call(method, target, body));
  return ParseJson(r.body);
}

Result<json::value> ParseJson(const std::string& body) {
  json::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return Fail(Error::Backend("server answered invalid JSON: " + ec.message()));
  return v;
}

std::string NumberText(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  if (!v.is_double()) return json::serialize(v);
  const double d = v.as_double();
  if (!std::isfinite(d)) return "null";  // JSON has no inf/nan
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip
  return ec == std::errc() ? std::string(buf, end) : json::serialize(v);
}

void Pretty(std::ostream& os, const json::value& v, int indent) {
  std::string pad(indent, ' ');
  if (v.is_object()) {
    const auto& o = v.as_object();
    if (o.empty()) {
      os << "{}";
      return;
    }
    os << "{\n";
    size_t i = 0;
    for (const auto& kv : o) {
      os << pad << "  " << json::serialize(json::value(kv.key())) << ": ";
      Pretty(os, kv.value(), indent + 2);
      os << (++i < o.size() ? ",\n" : "\n");
    }
    os << pad << "}";
  } else if (v.is_array() && !v.as_array().empty()) {
    const auto& a = v.as_array();
    os << "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      os << pad << "  ";
      Pretty(os, a[i], indent + 2);
      os << (i + 1 < a.size() ? ",\n" : "\n");
    }
    os << pad << "]";
  } else if (v.is_number()) {
    os << NumberText(v);
  } else {
    os << json::serialize(v);
  }
}

std::string Str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->as_string());
  if (v->is_number()) return NumberText(*v);
  return json::serialize(*v);
}

std::string SandboxPath(const std::string& id) { return "/v1/sandboxes/" + api::PercentEncode(id); }

Result<std::string> ReadStdin() {
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n == 0) return data;
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno("read stdin");
    }
    data.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace asb::cli
