// McpSession without a server: JSON-RPC framing, lifecycle, version negotiation, batching
// rules, tools/list schemas, and a tool call against an unreachable server (isError with the
// error code). The tools against a real server are tested by tests/mcp (Node, official SDK).
#include "mcp/session.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "mcp/rest_backend.h"
#include "mcp/tools.h"

namespace asb::mcp {
namespace {

namespace json = boost::json;

// A loopback port nobody listens on (bound, then closed).
int DeadPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class SessionTest : public ::testing::Test {
 protected:
  SessionTest()
      : session_(Tools(std::make_shared<RestBackend>(*api::HttpClient::Create(
                     "http://127.0.0.1:" + std::to_string(DeadPort()), "k"))),
                 [this](const std::string& text) {
                   std::lock_guard<std::mutex> lock(mu_);
                   out_.push_back(json::parse(text));
                   cv_.notify_all();
                 }) {}

  // Sends `text` and returns the next message sent back (waits for async answers).
  json::value Ask(std::string_view text) {
    size_t before;
    {
      std::lock_guard<std::mutex> lock(mu_);
      before = out_.size();
    }
    session_.HandleText(text);
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(20), [&] { return out_.size() > before; }));
    return out_.size() > before ? out_[before] : json::value();
  }

  size_t Sent() {
    std::lock_guard<std::mutex> lock(mu_);
    return out_.size();
  }

  void Init(std::string_view version = "2025-06-18") {
    json::value r = Ask(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":)"
                        R"({"protocolVersion":")" +
                        std::string(version) +
                        R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
    ASSERT_TRUE(r.as_object().contains("result")) << json::serialize(r);
    session_.HandleText(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json::value> out_;
  McpSession session_;
};

int ErrorCode(const json::value& r) {
  return static_cast<int>(r.at("error").at("code").as_int64());
}

TEST_F(SessionTest, InitializeNegotiatesTheRevision) {
  json::value r = Ask(R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":)"
                      R"({"protocolVersion":"2024-11-05","capabilities":{},)"
                      R"("clientInfo":{"name":"t","version":"1"}}})");
  EXPECT_EQ(r.at("id").as_string(), "a");
  EXPECT_EQ(r.at("result").at("protocolVersion").as_string(), "2024-11-05");
  EXPECT_TRUE(r.at("result").at("capabilities").as_object().contains("tools"));
  EXPECT_NE(std::string(r.at("result").at("instructions").as_string()).find("/workspace"),
            std::string::npos);
  // An unknown revision gets the newest one.
  r = Ask(
      R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01"}})");
  EXPECT_EQ(r.at("result").at("protocolVersion").as_string(), "2025-06-18");
}

TEST_F(SessionTest, JsonRpcErrors) {
  EXPECT_EQ(ErrorCode(Ask("{oops")), -32700);
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"1.0","id":1,"method":"ping"})")), -32600);
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":null,"method":"ping"})")), -32600);
  // Before initialize, only ping works.
  EXPECT_TRUE(Ask(R"({"jsonrpc":"2.0","id":1,"method":"ping"})").as_object().contains("result"));
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")), -32600);
  Init();
  EXPECT_EQ(ErrorCode(Ask(R"({"jsonrpc":"2.0","id":3,"method":"nope"})")), -32601);
  EXPECT_EQ(
      ErrorCode(Ask(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}})")),
      -32602);
  // Notifications are never answered.
  size_t n = Sent();
  session_.HandleText(R"({"jsonrpc":"2.0","method":"notifications/whatever"})");
  EXPECT_EQ(Sent(), n);
}

TEST_F(SessionTest, BatchesOnlyIn20250326) {
  Init("2025-06-18");
  EXPECT_EQ(ErrorCode(Ask(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])")), -32600);
  Init("2025-03-26");
  json::value r = Ask(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                      R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
                      R"({"jsonrpc":"2.0","id":2,"method":"nope"}])");
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.as_array().size(), 2u);
  EXPECT_EQ(r.as_array()[0].at("id").as_int64(), 1);
  EXPECT_EQ(ErrorCode(r.as_array()[1]), -32601);
  EXPECT_EQ(ErrorCode(Ask("[]")), -32600);
}

TEST_F(SessionTest, ToolsHaveInputAndOutputSchemas) {
  Init();
  json::value r = Ask(R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})");
  const auto& tools = r.at("result").at("tools").as_array();
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.emplace_back(t.at("name").as_string());
    EXPECT_EQ(t.at("inputSchema").at("type").as_string(), "object");
    EXPECT_EQ(t.at("outputSchema").at("type").as_string(), "object");
  }
  std::vector<std::string> want = {"sandbox_create",
                                   "sandbox_list",
                                   "sandbox_list_templates",
                                   "sandbox_exec",
                                   "sandbox_read_file",
                                   "sandbox_write_file",
                                   "sandbox_list_files",
                                   "sandbox_snapshot",
                                   "sandbox_rollback",
                                   "sandbox_fork",
                                   "sandbox_fork_running",
                                   "sandbox_destroy",
                                   "sandbox_pause",
                                   "sandbox_resume",
                                   "sandbox_process_start",
                                   "sandbox_process_list",
                                   "sandbox_process_output",
                                   "sandbox_process_stdin",
                                   "sandbox_process_signal",
                                   "sandbox_process_kill",
                                   "sandbox_port_list",
                                   "sandbox_port_request",
                                   "sandbox_watch_files",
                                   "sandbox_run_code",
                                   "sandbox_code_run",
                                   "sandbox_code_context_create",
                                   "sandbox_code_context_list",
                                   "sandbox_code_context_restart",
                                   "sandbox_code_context_delete"};
  EXPECT_EQ(names, want);
}

TEST_F(SessionTest, ToolFailuresAreIsErrorResultsWithTheCode) {
  Init();
  json::value r = Ask(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":)"
                      R"({"name":"sandbox_list","arguments":{}}})");
  const auto& res = r.at("result").as_object();
  EXPECT_TRUE(res.at("isError").as_bool());
  std::string text(res.at("content").at(0).at("text").as_string());
  EXPECT_EQ(text.rfind("unavailable: ", 0), 0u) << text;
  r = Ask(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":)"
          R"({"name":"sandbox_exec","arguments":{"sandbox_id":"sb_1"}}})");
  text = r.at("result").at("content").at(0).at("text").as_string();
  EXPECT_EQ(text.rfind("invalid_request: command", 0), 0u) << text;
}

TEST(Base64Test, DecodesAndRejects) {
  std::string out;
  EXPECT_TRUE(Base64Decode("AP8Q", &out));
  EXPECT_EQ(out, std::string("\x00\xff\x10", 3));
  EXPECT_TRUE(Base64Decode("aGk=", &out));
  EXPECT_EQ(out, "hi");
  EXPECT_FALSE(Base64Decode("a*b=", &out));
  EXPECT_FALSE(Base64Decode("aG=k", &out));
  EXPECT_TRUE(IsValidUtf8("h\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
}

}  // namespace
}  // namespace asb::mcp
