// The web console's static files (api/console.h): the manifest built at start (what it takes,
// what it skips, its limits exactly at and one over), the routes (index at /, /console and
// /console/; assets; 404 for anything else, traversal included; 503 when not built), the
// security headers and Content-Types, and FindConsoleDir's order.
#include "api/console.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

namespace asb::api {
namespace {

namespace fs = std::filesystem;

class ConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_console_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Write(const std::string& rel, const std::string& body) {
    fs::path p = fs::path(dir_) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << body;
  }
  HttpResponse Get(const Router& r, const std::string& path) {
    HttpRequest req;
    req.method = "GET";
    req.target = path;
    req.path = path;
    return r.Dispatch(req);
  }
  static std::string HeaderOf(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }
  static std::string Code(const HttpResponse& r) {
    return std::string(boost::json::parse(r.body).at("error").at("code").as_string());
  }
  Router Routes(const ConsoleLimits& limits = {}) {
    Router r;
    AddConsoleRoutes(r, std::make_shared<ConsoleAssets>(LoadConsoleAssets(dir_, limits)));
    return r;
  }
  std::string dir_;
};

TEST_F(ConsoleTest, ServesTheIndexAndAssetsWithTheirTypesAndHeaders) {
  Write("index.html", "<!doctype html><title>c</title>");
  Write("assets/index-abc.js", "console.log(1)");
  Write("assets/index-abc.css", "body{}");
  Router r = Routes();
  for (const char* path : {"/", "/console", "/console/", "/console/index.html"}) {
    HttpResponse res = Get(r, path);
    EXPECT_EQ(res.status, 200) << path;
    EXPECT_EQ(res.body, "<!doctype html><title>c</title>") << path;
    EXPECT_EQ(res.content_type, "text/html; charset=utf-8");
    EXPECT_EQ(HeaderOf(res, "Cache-Control"), "no-cache");
  }
  HttpResponse js = Get(r, "/console/assets/index-abc.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.body, "console.log(1)");
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(HeaderOf(js, "Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(Get(r, "/console/assets/index-abc.css").content_type, "text/css; charset=utf-8");
  HttpResponse res = Get(r, "/console");
  std::string csp = HeaderOf(res, "Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("object-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("img-src 'self' data: blob:"), std::string::npos) << csp;
  EXPECT_EQ(HeaderOf(res, "X-Frame-Options"), "DENY");
  EXPECT_EQ(HeaderOf(res, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(HeaderOf(res, "Referrer-Policy"), "no-referrer");
}

TEST_F(ConsoleTest, AnythingNotInTheManifestIs404TraversalIncluded) {
  Write("index.html", "i");
  Write(".hidden", "secret");
  Write("assets/.env", "secret");
  Write("we ird.js", "x");
  std::ofstream(dir_ + "/../asb_console_outside.txt") << "outside";
  fs::create_symlink("/etc/passwd", dir_ + "/passwd");
  fs::create_directories(dir_ + "/linked");
  fs::create_directory_symlink("/etc", dir_ + "/etcdir");
  Router r = Routes();
  for (const char* path :
       {"/console/.hidden", "/console/assets/.env", "/console/../asb_console_outside.txt",
        "/console/passwd", "/console/etcdir/passwd", "/console/assets/", "/console/nope.js",
        "/console/we ird.js", "/console//index.html", "/console/./index.html",
        "/console/assets/../index.html", "/console/index.html/"}) {
    HttpResponse res = Get(r, path);
    EXPECT_EQ(res.status, 404) << path;
    EXPECT_EQ(Code(res), "not_found") << path;
    EXPECT_EQ(HeaderOf(res, "X-Frame-Options"), "DENY") << path;
    EXPECT_EQ(res.body.find("secret"), std::string::npos);
  }
  fs::remove(dir_ + "/../asb_console_outside.txt");
  // A file added after start is not served: the manifest is made once.
  Write("late.js", "late");
  EXPECT_EQ(Get(r, "/console/late.js").status, 404);
}

TEST_F(ConsoleTest, NotBuiltIs503OnEveryRouteInTheOneErrorShape) {
  for (const std::string& dir : {std::string(), dir_}) {  // no dir; a dir without index.html
    ConsoleAssets a = LoadConsoleAssets(dir);
    EXPECT_TRUE(a.files.empty());
    EXPECT_FALSE(a.problem.empty());
    Router r;
    AddConsoleRoutes(r, std::make_shared<ConsoleAssets>(std::move(a)));
    for (const char* path : {"/", "/console", "/console/assets/x.js"}) {
      HttpResponse res = Get(r, path);
      EXPECT_EQ(res.status, 503) << path;
      EXPECT_EQ(Code(res), "unavailable");
      EXPECT_NE(res.body.find("console was not built"), std::string::npos) << res.body;
      EXPECT_EQ(res.body.find("/tmp"), std::string::npos) << "no host path: " << res.body;
      EXPECT_EQ(HeaderOf(res, "X-Content-Type-Options"), "nosniff");
    }
  }
}

TEST_F(ConsoleTest, LimitsAreExactAtTheBoundary) {
  Write("index.html", "12345");  // 5 bytes
  Write("a.js", "123");          // 3 bytes: 2 files, 8 bytes
  EXPECT_EQ(LoadConsoleAssets(dir_, {2, 8}).files.size(), 2u);
  ConsoleAssets files_over = LoadConsoleAssets(dir_, {1, 8});
  EXPECT_TRUE(files_over.files.empty());
  EXPECT_NE(files_over.problem.find("more than 1 files"), std::string::npos);
  ConsoleAssets bytes_over = LoadConsoleAssets(dir_, {2, 7});
  EXPECT_TRUE(bytes_over.files.empty());
  EXPECT_NE(bytes_over.problem.find("more than 7 bytes"), std::string::npos);
}

TEST_F(ConsoleTest, ContentTypes) {
  EXPECT_EQ(ConsoleContentType("a.svg"), "image/svg+xml");
  EXPECT_EQ(ConsoleContentType("a.png"), "image/png");
  EXPECT_EQ(ConsoleContentType("a.woff2"), "font/woff2");
  EXPECT_EQ(ConsoleContentType("a.json"), "application/json");
  EXPECT_EQ(ConsoleContentType("a"), "application/octet-stream");
  EXPECT_EQ(ConsoleContentType("a.js.bak"), "application/octet-stream");
}

TEST_F(ConsoleTest, FindConsoleDirOrder) {
  EXPECT_EQ(FindConsoleDir("/given", "/x/bin/agent-sandbox"), "/given");
  fs::create_directories(dir_ + "/bin");
  fs::create_directories(dir_ + "/share/agent-sandbox/console");
  std::ofstream(dir_ + "/share/agent-sandbox/console/index.html") << "i";
  EXPECT_EQ(FindConsoleDir("", dir_ + "/bin/agent-sandbox"), dir_ + "/share/agent-sandbox/console");
  fs::create_directories(dir_ + "/bin/console");
  std::ofstream(dir_ + "/bin/console/index.html") << "i";
  EXPECT_EQ(FindConsoleDir("", dir_ + "/bin/agent-sandbox"), dir_ + "/bin/console");
}

}  // namespace
}  // namespace asb::api
