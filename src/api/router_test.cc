#include "api/router.h"

#include <gtest/gtest.h>

#include "api/errors.h"

namespace asb::api {
namespace {

Handler Echo(std::string tag) {
  return [tag](HttpRequest& req) {
    std::string body = tag;
    for (const auto& [k, v] : req.params) body += " " + k + "=" + v;
    return JsonResponse(200, body);
  };
}

TEST(RouterTest, MatchesTemplatesAndExtractsParams) {
  Router r;
  r.Add("GET", "/v1/sandboxes", Echo("list"));
  r.Add("GET", "/v1/sandboxes/{id}", Echo("get"));
  r.Add("DELETE", "/v1/sandboxes/{id}", Echo("del"));
  r.Add("GET", "/v1/sandboxes/{id}/files/list", Echo("ls"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/v1/sandboxes/sb_1";
  EXPECT_EQ(r.Dispatch(req).body, "get id=sb_1");
  EXPECT_EQ(req.route, "/v1/sandboxes/{id}");
  req.path = "/v1/sandboxes/sb_1/files/list";
  EXPECT_EQ(r.Dispatch(req).body, "ls id=sb_1");
  req.path = "/v1/sandboxes";
  EXPECT_EQ(r.Dispatch(req).body, "list");
}

TEST(RouterTest, TailParamTakesTheRestOfThePath) {
  Router r;
  RouteOptions tail;
  tail.tail = true;
  r.Add("GET", "/s/{id}/ports/{port}/{path}", Echo("proxy"), tail);
  r.Add("GET", "/s/{id}/ports/{port}", Echo("bare"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/s/a/ports/80/x/y/z";
  EXPECT_EQ(r.Dispatch(req).body, "proxy id=a path=x/y/z port=80");
  req.path = "/s/a/ports/80/";
  EXPECT_EQ(r.Dispatch(req).body, "proxy id=a path= port=80");
  req.path = "/s/a/ports/80";
  EXPECT_EQ(r.Dispatch(req).body, "bare id=a port=80");
  req.path = "/s/a/ports";
  EXPECT_EQ(r.Dispatch(req).status, 404);
  // Without the option a {name} is still one segment.
  Router plain;
  plain.Add("GET", "/s/{id}", Echo("get"));
  req.path = "/s/a/b";
  EXPECT_EQ(plain.Dispatch(req).status, 404);
}

TEST(RouterTest, AHostRouteTakesEveryMethodAndPathOfItsHostsFirst) {
  Router r;
  r.Add("GET", "/v1/sandboxes/{id}", Echo("api"));
  r.AddHost(
      "{id}.preview",
      [](std::string_view host, const std::map<std::string, std::string>&,
         std::map<std::string, std::string>* params) {
        if (host.size() < 9 || host.substr(host.size() - 8) != ".preview") return false;
        (*params)["id"] = std::string(host.substr(0, host.size() - 8));
        return true;
      },
      Echo("host"));
  HttpRequest req;
  req.method = "DELETE";
  req.path = "/v1/sandboxes/sb_1";
  req.headers["host"] = "app.preview";
  EXPECT_EQ(r.Dispatch(req).body, "host id=app");
  EXPECT_EQ(req.route, "{id}.preview");
  req.path = "/anything/at/all";
  EXPECT_EQ(r.Dispatch(req).body, "host id=app");
  // Other hosts, and requests without one, see only the path routes.
  req.method = "GET";
  req.path = "/v1/sandboxes/sb_1";
  req.headers["host"] = "127.0.0.1:8080";
  EXPECT_EQ(r.Dispatch(req).body, "api id=sb_1");
  req.headers.erase("host");
  EXPECT_EQ(r.Dispatch(req).body, "api id=sb_1");
  req.path = "/anything";
  EXPECT_EQ(r.Dispatch(req).status, 404);
}

TEST(RouterTest, AHostRouteMayMatchByOtherHeaders) {
  Router r;
  r.Add("GET", "/health", Echo("api"));
  r.AddHost(
      "sandbox-traffic",
      [](std::string_view, const std::map<std::string, std::string>& headers,
         std::map<std::string, std::string>* params) {
        auto it = headers.find("e2b-sandbox-id");
        if (it == headers.end()) return false;
        (*params)["id"] = it->second;
        return true;
      },
      Echo("traffic"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/health";
  EXPECT_EQ(r.Dispatch(req).body, "api");
  req.headers["e2b-sandbox-id"] = "sb_1";
  EXPECT_EQ(r.Dispatch(req).body, "traffic id=sb_1");
}

TEST(RouterTest, UnknownPathIs404AndWrongMethodIs405InTheErrorShape) {
  Router r;
  r.Add("GET", "/v1/sandboxes/{id}", Echo("get"));
  r.Add("DELETE", "/v1/sandboxes/{id}", Echo("del"));
  HttpRequest req;
  req.method = "GET";
  req.path = "/v2/nothing";
  HttpResponse a = r.Dispatch(req);
  EXPECT_EQ(a.status, 404);
  EXPECT_NE(a.body.find("\"code\":\"not_found\""), std::string::npos) << a.body;
  req.method = "PUT";
  req.path = "/v1/sandboxes/sb_1";
  HttpResponse b = r.Dispatch(req);
  EXPECT_EQ(b.status, 405);
  EXPECT_NE(b.body.find("\"code\":\"method_not_allowed\""), std::string::npos) << b.body;
  ASSERT_EQ(b.headers.size(), 1u);
  EXPECT_EQ(b.headers[0].second, "GET, DELETE");
  // An empty segment never matches a parameter.
  req.method = "GET";
  req.path = "/v1/sandboxes/";
  EXPECT_EQ(r.Dispatch(req).status, 404);
}

TEST(ErrorsTest, MapsEveryCodeToItsStatusAndHidesInternalMessages) {
  EXPECT_EQ(HttpStatusOf(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kConflict), 409);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kTooLarge), 413);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kLimitExceeded), 429);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kBackend), 502);
  EXPECT_EQ(HttpStatusOf(ErrorCode::kUnavailable), 503);
  HttpResponse r = ErrorResponse(Error::LimitExceeded("too many"), "req_1");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.body, R"({"error":{"code":"limit_exceeded","message":"too many"}})");
  HttpResponse i = ErrorResponse(Error::Internal("open /var/lib/secret: EIO"), "req_1");
  EXPECT_EQ(i.status, 500);
  EXPECT_EQ(i.body.find("/var/lib"), std::string::npos);
  EXPECT_NE(i.body.find("req_1"), std::string::npos);
}

// Found by fuzz/fuzz_http.cc (its corpus keeps the input): "GET /op\xe5napi.json" answered a
// 404 whose message quoted the raw path, so the body was not UTF-8 and so not JSON.
TEST(ErrorsTest, MessagesQuotingClientBytesStayValidUtf8Json) {
  HttpRequest req;
  req.method = "GET";
  req.path = "/op\xe5napi.json";
  HttpResponse r = Router().Dispatch(req);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body,
            "{\"error\":{\"code\":\"not_found\",\"message\":\"no route for "
            "/op\xef\xbf\xbdnapi.json\"}}");
  // Valid UTF-8 is kept as it is.
  EXPECT_EQ(ErrorResponse(404, "not_found", "caf\xc3\xa9").body,
            "{\"error\":{\"code\":\"not_found\",\"message\":\"caf\xc3\xa9\"}}");
}

}  // namespace
}  // namespace asb::api
