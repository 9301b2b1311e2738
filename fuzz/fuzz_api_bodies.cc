// libFuzzer target: every JSON (and raw) request body parser of the REST API, through the
// real routing table and handlers (fuzz/api_fixture.h), plus JsonBody (api/json_body.h)
// driven directly.
//
// Input: one selector byte (which route), then the body. Routes that act on a sandbox get the
// id of a live (fake) sandbox, re-created when a fuzzed request made it go away, so the body is
// parsed rather than refused for a missing sandbox. Invariants (fuzz/api_fixture.h): no crash,
// no exception out of a handler, no 500, every error in the one error shape.
#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/e2b_connect.h"
#include "api/e2b_token.h"
#include "api/json_body.h"
#include "fuzz/api_fixture.h"
#include "fuzz/fuzz_check.h"

namespace {

using asb::api::HttpRequest;
using asb::api::HttpResponse;

HttpResponse Call(const std::string& method, const std::string& target, std::string body) {
  HttpRequest req;
  req.method = method;
  req.target = target;
  size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) {
    std::string kv = target.substr(q + 1);
    size_t eq = kv.find('=');
    req.query[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  req.headers["authorization"] = std::string("Bearer ") + asb::fuzz::kFuzzKey;
  req.body = std::move(body);
  return asb::fuzz::RunAndCheck(req);
}

// E2B's in-sandbox traffic (docs/e2b.md) to `target` of the live sandbox with its access token
// (the fixture's secret), as the e2b SDKs send it.
HttpResponse Envd(const std::string& sandbox_id, const std::string& target, std::string body,
                  const std::string& content_type, const std::string& port = "49983") {
  HttpRequest req;
  req.method = "POST";
  req.target = target;
  size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos && target.compare(q + 1, 5, "path=") == 0) {
    req.query["path"] = target.substr(q + 6);
  }
  req.headers["e2b-sandbox-id"] = sandbox_id;
  req.headers["e2b-sandbox-port"] = port;
  req.headers["x-access-token"] = asb::api::E2bAccessToken(std::string(64, 'f'), sandbox_id);
  req.headers["content-type"] = content_type;
  req.body = std::move(body);
  return asb::fuzz::RunAndCheck(req);
}

std::string IdOf(const HttpResponse& r) {
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body, ec);
  if (ec || !v.is_object()) return "";
  const auto* id = v.as_object().if_contains("id");
  return id && id->is_string() ? std::string(id->as_string()) : "";
}

// A live sandbox's id. Fuzzed requests may destroy it, shorten its timeout or fill the quota;
// then the others are deleted and a fresh one is made.
const std::string& LiveSandbox() {
  static std::string id;
  if (!id.empty() && Call("GET", "/v1/sandboxes/" + id, "").status == 200) return id;
  HttpResponse list = Call("GET", "/v1/sandboxes", "");
  boost::system::error_code ec;
  auto v = boost::json::parse(list.body, ec);
  if (!ec && v.is_object() && v.as_object().contains("sandboxes")) {
    for (const auto& s : v.as_object().at("sandboxes").as_array()) {
      Call("DELETE", "/v1/sandboxes/" + std::string(s.at("id").as_string()), "");
    }
  }
  HttpResponse made = Call("POST", "/v1/sandboxes", "{\"timeout_seconds\":3600}");
  ASB_FUZZ_CHECK(made.status == 201);
  id = IdOf(made);
  return id;
}

const std::string& LiveKey() {
  static std::string id;
  if (id.empty()) {
    HttpResponse made = Call("POST", "/v1/keys", "{\"name\":\"fuzz\",\"scopes\":[\"exec\"]}");
    ASB_FUZZ_CHECK(made.status == 201);
    id = IdOf(made);
  }
  return id;
}

// JsonBody on its own: every getter on a few names, then Finish().
void DirectJsonBody(std::string_view text) {
  auto body = asb::api::JsonBody::Parse(text);
  if (!body) {
    ASB_FUZZ_CHECK(body.error().code() == asb::ErrorCode::kInvalidArgument);
    return;
  }
  for (std::string_view name : {"a", "command", "env", "timeout_seconds", ""}) {
    (void)body->String(name);
    (void)body->Bool(name);
    (void)body->Number(name);
    (void)body->Integer(name, -5, 1'000'000'000);
    (void)body->Integer(name, INT64_MIN, INT64_MAX);
    (void)body->StringArray(name);
    (void)body->StringMap(name);
  }
  (void)body->Finish();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string sb = "/v1/sandboxes/";
  switch (data[0] % 24) {
    case 0:
      DirectJsonBody(body);
      break;
    case 1:
      Call("POST", "/v1/sandboxes", body);
      break;
    case 2:
      Call("POST", sb + LiveSandbox() + "/timeout", body);
      break;
    case 3:
      Call("POST", sb + LiveSandbox() + "/exec", body);
      break;
    case 4:
      Call("POST", sb + LiveSandbox() + "/exec/stream", body);
      break;
    case 5:
      Call("POST", sb + LiveSandbox() + "/files/mkdir", body);
      break;
    case 6:
      Call("POST", sb + LiveSandbox() + "/files/move", body);
      break;
    case 7:
      Call("PUT", sb + LiveSandbox() + "/files?path=f.txt", body);
      break;
    case 8:
      Call("POST", sb + LiveSandbox() + "/snapshots", body);
      break;
    case 9:
      Call("POST", sb + LiveSandbox() + "/rollback", body);
      break;
    case 10:
      Call("POST", "/v1/snapshots/snap_0123456789abcdef/fork", body);
      break;
    case 11:
      Call("POST", "/v1/snapshots?name=fuzz", body);
      break;  // a tar.zst upload
    case 12:
      Call("PUT", sb + LiveSandbox() + "/archive", body);
      break;
    case 13:
      Call("POST", "/v1/keys", body);
      break;
    case 14:
      Call("POST", "/v1/keys/" + LiveKey() + "/rotate", body);
      break;
    case 15:
      Call("POST", "/exec/fuzz/execute", body);
      break;
    case 16:
      Call("POST", "/exec/fuzz/write", body);
      break;
    // E2B (docs/e2b.md): the control plane, envd's Connect calls and /files, the interpreter.
    case 17:
      Call("POST", "/v2/sandboxes", body);
      break;
    case 18:
      Call("POST", "/sandboxes/" + LiveSandbox() + "/connect", body);
      break;
    case 19: {
      // The two server streams: a process, a directory watch.
      const bool watch = !body.empty() && (static_cast<uint8_t>(body[0]) & 1);
      Envd(LiveSandbox(), watch ? "/filesystem.Filesystem/WatchDir" : "/process.Process/Start",
           asb::api::ConnectEnvelope(0, body), "application/connect+json");
      break;
    }
    case 20: {
      static const char* kUnary[] = {"/process.Process/SendSignal",
                                     "/process.Process/SendInput",
                                     "/process.Process/Update",
                                     "/filesystem.Filesystem/Stat",
                                     "/filesystem.Filesystem/ListDir",
                                     "/filesystem.Filesystem/Move",
                                     "/filesystem.Filesystem/CreateWatcher",
                                     "/filesystem.Filesystem/GetWatcherEvents",
                                     "/filesystem.Filesystem/RemoveWatcher"};
      const size_t pick = body.empty() ? 0 : static_cast<uint8_t>(body[0]) % 9;
      Envd(LiveSandbox(), kUnary[pick], body.empty() ? body : body.substr(1), "application/json");
      break;
    }
    case 21:
      Envd(LiveSandbox(), "/files?path=f.txt", body, "multipart/form-data; boundary=b");
      break;
    case 22:
      Envd(LiveSandbox(), "/execute", body, "application/json", "49999");
      break;
    case 23:
      Call("GET", "/v1/sandboxes/" + LiveSandbox() + "/files/watch?" + body, "");
      break;
  }
  return 0;
}
