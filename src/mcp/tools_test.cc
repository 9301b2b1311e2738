// The tool layer over a scripted ToolBackend (the real back ends run against the real server in
// tests/mcp): the 256 KiB text limit at its boundary (exactly kMaxTextBytes passes whole, one
// byte more is cut with a note giving the full size) for exec output, text files and binary
// files; the server's own truncation flag; and the session's per-request reply routing
// (progress and the answer go to the POST's sink; a cancelled call ends with kNoResponse and
// its exec sees the cancel flag).
#include "mcp/tools.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp/session.h"

namespace asb::mcp {
namespace {

namespace json = boost::json;

// Answers what the test scripted; Exec streams `stdout_text` and, when `block` is set, waits
// for the cancel flag.
class ScriptedBackend final : public ToolBackend {
 public:
  std::string file;
  std::string stdout_text;
  bool server_truncated = false;
  bool server_stderr_truncated = false;
  bool block = false;
  std::atomic<bool> saw_cancel{false};

  ToolResult<json::object> CreateSandbox(const json::object&) override { return Nope(); }
  ToolResult<json::object> ListSandboxes() override { return Nope(); }
  ToolResult<json::object> ListTemplates() override { return Nope(); }
  ToolResult<json::object> Exec(const std::string&, const json::object&,
                                const ExecHooks& hooks) override {
    for (size_t off = 0; off < stdout_text.size(); off += 4096) {
      hooks.output("stdout", std::string_view(stdout_text).substr(off, 4096));
    }
    while (block) {
      if (hooks.cancelled && hooks.cancelled->load()) {
        saw_cancel = true;
        return ToolFail("cancelled", "killed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    json::object o;
    o["exit_code"] = 0;
    o["signal"] = 0;
    o["timed_out"] = false;
    o["duration_ms"] = 1;
    o["truncated"] = server_truncated || server_stderr_truncated;
    o["stdout_truncated"] = server_truncated;
    o["stderr_truncated"] = server_stderr_truncated;
    return o;
  }
  ToolResult<std::string> ReadFile(const std::string&, const std::string&) override { return file; }
  ToolResult<json::object> WriteFile(const std::string&, const std::string&, std::string_view,
                                     const std::optional<std::string>&) override {
    return Nope();
  }
  ToolResult<json::object> ListFiles(const std::string&, const std::string&, bool) override {
    return Nope();
  }
  ToolResult<json::object> Snapshot(const std::string&,
                                    const std::optional<std::string>&) override {
    return Nope();
  }
  ToolResult<json::object> Rollback(const std::string&, const std::string&) override {
    return Nope();
  }
  ToolResult<json::object> Fork(const std::string&, const json::object&) override { return Nope(); }
  ToolResult<void> Destroy(const std::string&) override {
    return ToolFail("not_found", "sandbox not found");
  }

 private:
  static tl::unexpected<ToolError> Nope() { return ToolFail("internal", "not scripted"); }
};

json::object Args(std::string_view text) { return json::parse(text).as_object(); }

const std::string& Text(const json::object& r) {
  static std::string s;
  s = r.at("content").at(0).at("text").as_string();
  return s;
}

TEST(ToolLimits, ExecOutputAtTheLimitIsWholeOneMoreIsCutWithTheFullSize) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  json::object args = Args(R"({"sandbox_id":"sb_1","command":"x"})");
  b->stdout_text.assign(kMaxTextBytes, 'a');
  json::object r = tools.Call("sandbox_exec", args, {});
  const auto& s = r.at("structuredContent").as_object();
  EXPECT_FALSE(s.at("truncated").as_bool());
  EXPECT_EQ(s.at("stdout").as_string().size(), kMaxTextBytes);
  EXPECT_EQ(s.at("stdout_bytes").to_number<int64_t>(), static_cast<int64_t>(kMaxTextBytes));

  b->stdout_text.assign(kMaxTextBytes + 1, 'a');
  r = tools.Call("sandbox_exec", args, {});
  const auto& t = r.at("structuredContent").as_object();
  EXPECT_TRUE(t.at("truncated").as_bool());
  EXPECT_TRUE(t.at("stdout_truncated").as_bool());
  EXPECT_FALSE(t.at("stderr_truncated").as_bool());
  EXPECT_EQ(t.at("stdout").as_string().size(), kMaxTextBytes);
  EXPECT_EQ(t.at("stdout_bytes").to_number<int64_t>(), static_cast<int64_t>(kMaxTextBytes + 1));
  EXPECT_NE(Text(r).find("stdout " + std::to_string(kMaxTextBytes + 1) + " bytes"),
            std::string::npos);
}

TEST(ToolLimits, TheServersOwnOutputLimitIsReported) {
  auto b = std::make_shared<ScriptedBackend>();
  b->stdout_text = "short";
  b->server_truncated = true;
  json::object r = Tools(b).Call("sandbox_exec", Args(R"({"sandbox_id":"s","command":"x"})"), {});
  EXPECT_TRUE(r.at("structuredContent").at("truncated").as_bool());
  EXPECT_NE(Text(r).find("server's output limit"), std::string::npos) << Text(r);
}

// Issue 17 item 6: the per-stream flags of the server come through, each on its own.
TEST(ToolLimits, TheServersPerStreamFlagsAreReported) {
  auto b = std::make_shared<ScriptedBackend>();
  b->stdout_text = "short";
  b->server_stderr_truncated = true;
  json::object r = Tools(b).Call("sandbox_exec", Args(R"({"sandbox_id":"s","command":"x"})"), {});
  const auto& s = r.at("structuredContent").as_object();
  EXPECT_TRUE(s.at("truncated").as_bool());
  EXPECT_FALSE(s.at("stdout_truncated").as_bool());
  EXPECT_TRUE(s.at("stderr_truncated").as_bool());
}

TEST(ToolLimits, FilesAtTheLimitAreWholeOneMoreIsCut) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  json::object args = Args(R"({"sandbox_id":"sb_1","path":"f"})");
  b->file.assign(kMaxTextBytes, 'z');
  json::object r = tools.Call("sandbox_read_file", args, {});
  EXPECT_FALSE(r.at("structuredContent").at("truncated").as_bool());
  EXPECT_EQ(r.at("structuredContent").at("content").as_string().size(), kMaxTextBytes);

  b->file.assign(kMaxTextBytes + 1, 'z');
  r = tools.Call("sandbox_read_file", args, {});
  const auto& s = r.at("structuredContent").as_object();
  EXPECT_TRUE(s.at("truncated").as_bool());
  EXPECT_EQ(s.at("size").to_number<int64_t>(), static_cast<int64_t>(kMaxTextBytes + 1));
  EXPECT_EQ(s.at("content").as_string().size(), kMaxTextBytes);
  EXPECT_NE(Text(r).find(std::to_string(kMaxTextBytes + 1) + " bytes in full"), std::string::npos);

  // Binary: base64 of the first kMaxTextBytes bytes.
  b->file.assign(kMaxTextBytes + 1, '\xff');
  r = tools.Call("sandbox_read_file", args, {});
  const auto& bin = r.at("structuredContent").as_object();
  EXPECT_EQ(bin.at("encoding").as_string(), "base64");
  EXPECT_TRUE(bin.at("truncated").as_bool());
  std::string decoded;
  ASSERT_TRUE(Base64Decode(bin.at("content").as_string(), &decoded));
  EXPECT_EQ(decoded.size(), kMaxTextBytes);
}

TEST(ToolLimits, BackendErrorsAreIsErrorResultsWithTheirCode) {
  json::object r = Tools(std::make_shared<ScriptedBackend>())
                       .Call("sandbox_destroy", Args(R"({"sandbox_id":"sb_1"})"), {});
  EXPECT_TRUE(r.at("isError").as_bool());
  EXPECT_EQ(Text(r), "not_found: sandbox not found");
}

// The session with a per-request reply sink, as the HTTP transport uses it.
class ReplyTest : public ::testing::Test {
 protected:
  ReplyTest() : backend_(std::make_shared<ScriptedBackend>()), session_(Tools(backend_), nullptr) {
    session_.HandleText(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":)"
                        R"({"protocolVersion":"2025-06-18"}})",
                        [](Outgoing, const std::string&) {});
  }

  struct Sink {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::pair<Outgoing, std::string>> got;
    McpSession::Reply fn() {
      return [this](Outgoing k, const std::string& t) {
        std::lock_guard<std::mutex> lock(mu);
        got.emplace_back(k, t);
        cv.notify_all();
      };
    }
    bool WaitFor(Outgoing kind) {
      std::unique_lock<std::mutex> lock(mu);
      return cv.wait_for(lock, std::chrono::seconds(10), [&] {
        for (auto& [k, t] : got) {
          if (k == kind) return true;
        }
        return false;
      });
    }
  };

  std::shared_ptr<ScriptedBackend> backend_;
  McpSession session_;
};

TEST_F(ReplyTest, ProgressAndTheAnswerGoToTheRequestsSink) {
  backend_->stdout_text = "hello";
  Sink a, other;
  session_.HandleText(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":)"
                      R"("sandbox_exec","arguments":{"sandbox_id":"s","command":"x"},)"
                      R"("_meta":{"progressToken":"p"}}})",
                      a.fn());
  ASSERT_TRUE(a.WaitFor(Outgoing::kResponse));
  std::lock_guard<std::mutex> lock(a.mu);
  ASSERT_EQ(a.got.size(), 2u);
  EXPECT_EQ(a.got[0].first, Outgoing::kNotification);
  EXPECT_NE(a.got[0].second.find("notifications/progress"), std::string::npos);
  EXPECT_NE(a.got[1].second.find("\"id\":2"), std::string::npos);
  EXPECT_TRUE(other.got.empty());
}

TEST_F(ReplyTest, ACancelledCallEndsWithNoResponseAndItsExecSeesTheFlag) {
  backend_->block = true;
  Sink a;
  session_.HandleText(R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":)"
                      R"("sandbox_exec","arguments":{"sandbox_id":"s","command":"x"}}})",
                      a.fn());
  session_.Cancel(json::value("c"));
  ASSERT_TRUE(a.WaitFor(Outgoing::kNoResponse));
  EXPECT_TRUE(backend_->saw_cancel);
  std::lock_guard<std::mutex> lock(a.mu);
  for (auto& [k, t] : a.got) EXPECT_NE(k, Outgoing::kResponse) << t;
}

}  // namespace
}  // namespace asb::mcp
