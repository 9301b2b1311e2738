// The tool layer over a scripted ToolBackend (the real back ends run against the real server in
// tests/mcp): the 256 KiB text limit at its boundary (exactly kMaxTextBytes passes whole, one
// byte more is cut with a note giving the full size) for exec output, text files and binary
// files; the server's own truncation flag; and the session's per-request reply routing
// (progress and the answer go to the POST's sink; a cancelled call ends with kNoResponse and
// its exec sees the cancel flag); the process, port and code tools' arguments at their limits
// and their renderings (ADR 0010).
#include "mcp/tools.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcp/process_output.h"
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
  // What the last call asked, and what to answer (processes, ports, code).
  json::object last_body;  // Exec's or StartProcess's body
  std::string stderr_text;
  int exit_code = 0;
  OutputRequest last_output;
  WatchRequest last_watch;
  std::string proc_output;  // ReadProcessOutput answers its last tail_bytes
  uint64_t proc_received = 0;
  std::string last_stdin;
  bool stdin_closed = false;
  PortRequest last_port;
  PortResponse port_answer;
  json::object code_answer;  // RunCode's answer (the REST execution object)
  std::string last_context;  // the context id Restart/DeleteCodeContext got

  ToolResult<json::object> CreateSandbox(const json::object&) override { return Nope(); }
  ToolResult<json::object> ListSandboxes() override { return Nope(); }
  ToolResult<json::object> ListTemplates() override { return Nope(); }
  ToolResult<json::object> Exec(const std::string&, const json::object& body,
                                const ExecHooks& hooks) override {
    last_body = body;
    for (size_t off = 0; off < stdout_text.size(); off += 4096) {
      hooks.output("stdout", std::string_view(stdout_text).substr(off, 4096));
    }
    if (!stderr_text.empty()) hooks.output("stderr", stderr_text);
    while (block) {
      if (hooks.cancelled && hooks.cancelled->load()) {
        saw_cancel = true;
        return ToolFail("cancelled", "killed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    json::object o;
    o["exit_code"] = exit_code;
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
  ToolResult<json::object> ForkSandbox(const std::string&, const json::object&) override {
    return Nope();
  }
  ToolResult<void> Destroy(const std::string&) override {
    return ToolFail("not_found", "sandbox not found");
  }
  ToolResult<json::object> Pause(const std::string&, bool) override { return Nope(); }
  ToolResult<json::object> Resume(const std::string&, std::optional<int64_t>) override {
    return Nope();
  }
  ToolResult<json::object> StartProcess(const std::string&, const json::object& body) override {
    last_body = body;
    return Process(7, "running");
  }
  ToolResult<json::object> ListProcesses(const std::string&) override {
    json::object o;
    o["processes"] = json::array{Process(7, "running"), Process(8, "exited")};
    return o;
  }
  ToolResult<ProcessOutput> ReadProcessOutput(const std::string&,
                                              const OutputRequest& req) override {
    last_output = req;
    ProcessOutput out;
    out.process = Process(req.pid, "running");
    out.output = proc_output.size() > req.tail_bytes
                     ? proc_output.substr(proc_output.size() - req.tail_bytes)
                     : proc_output;
    out.received = std::max<uint64_t>(proc_received, proc_output.size());
    return out;
  }
  ToolResult<json::object> WatchFiles(const std::string&, const WatchRequest& req) override {
    last_watch = req;
    json::object o;
    o["path"] = req.path;
    json::array events;
    json::object e;
    e["type"] = "create";
    e["path"] = req.path + "/a.txt";
    e["dir"] = false;
    events.emplace_back(e);
    json::object lost;
    lost["type"] = "overflow";
    lost["dropped"] = 7;
    events.emplace_back(lost);
    o["events"] = std::move(events);
    o["ended"] = false;
    return o;
  }
  ToolResult<uint64_t> WriteProcessStdin(const std::string&, int, std::string_view data) override {
    last_stdin = std::string(data);
    return data.size();
  }
  ToolResult<void> CloseProcessStdin(const std::string&, int) override {
    stdin_closed = true;
    return {};
  }
  ToolResult<void> SignalProcess(const std::string&, int, const std::string& sig) override {
    if (sig != "SIGTERM") return ToolFail("invalid_request", "unknown signal " + sig);
    return {};
  }
  ToolResult<json::object> KillProcess(const std::string&, int pid) override {
    return Process(pid, "exited");
  }
  ToolResult<PortResponse> RequestPort(const std::string&, const PortRequest& req) override {
    last_port = req;
    return port_answer;
  }

  ToolResult<json::object> RunCode(const std::string&, const json::object& body,
                                   const ExecHooks& hooks) override {
    last_body = body;
    if (!stdout_text.empty()) hooks.output("stdout", stdout_text);
    if (block) {
      while (!(hooks.cancelled && hooks.cancelled->load())) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      saw_cancel = true;
      return ToolFail("cancelled", "interrupted");
    }
    return code_answer;
  }
  ToolResult<json::object> CreateCodeContext(const std::string&,
                                             const json::object& body) override {
    last_body = body;
    return Context("ctx_0123456789abcdef");
  }
  ToolResult<json::object> ListCodeContexts(const std::string&) override {
    json::object o;
    o["contexts"] = json::array{Context("ctx_0123456789abcdef")};
    return o;
  }
  ToolResult<json::object> RestartCodeContext(const std::string&, const std::string& cid) override {
    last_context = cid;
    return Context(cid);
  }
  ToolResult<void> DeleteCodeContext(const std::string&, const std::string& cid) override {
    last_context = cid;
    if (cid != "ctx_0123456789abcdef") return ToolFail("not_found", "code context not found");
    return {};
  }

  static json::object Context(std::string_view id) {
    json::object c;
    c["id"] = id;
    c["language"] = "python";
    c["cwd"] = "/workspace";
    c["pid"] = 42;
    c["state"] = "running";
    c["default"] = false;
    c["created_at"] = "2026-12-02T15:00:00.000Z";
    return c;
  }

  static json::object Process(int pid, std::string_view state) {
    json::object p;
    p["pid"] = pid;
    p["state"] = state;
    p["command"] = "sleep 100";
    if (state == "exited") {
      p["exit_code"] = 137;
    } else {
      p["exit_code"] = nullptr;
    }
    return p;
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

// ADR 0016: the per-stream flags of the server come through, each on its own.
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

// ---- processes, ports, code (ADR 0010) ----------------------------------------------

bool IsError(const json::object& r) {
  const json::value* e = r.if_contains("isError");
  return e && e->is_bool() && e->as_bool();
}

// The first word of an isError text: its code.
std::string ErrorCodeOf(const json::object& r) {
  if (!IsError(r)) return "(no error)";
  return Text(r).substr(0, Text(r).find(':'));
}

TEST(ToolDefinitions, EveryToolHasSchemasAndTheNewOnesAreListed) {
  std::vector<std::string> names;
  for (const auto& t : Tools::Definitions()) {
    const auto& o = t.as_object();
    names.emplace_back(o.at("name").as_string());
    EXPECT_EQ(o.at("inputSchema").at("type").as_string(), "object") << names.back();
    EXPECT_EQ(o.at("outputSchema").at("type").as_string(), "object") << names.back();
    EXPECT_GT(o.at("description").as_string().size(), 10u) << names.back();
  }
  for (const char* n :
       {"sandbox_process_start", "sandbox_process_list", "sandbox_process_output",
        "sandbox_process_stdin", "sandbox_process_signal", "sandbox_process_kill",
        "sandbox_port_list", "sandbox_port_request", "sandbox_run_code", "sandbox_code_run",
        "sandbox_code_context_create", "sandbox_code_context_list", "sandbox_code_context_restart",
        "sandbox_code_context_delete"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
    EXPECT_TRUE(Tools::Exists(n)) << n;
  }
}

TEST(ProcessTools, StartPassesTheRestBodyAndAnswersTheProcess) {
  auto b = std::make_shared<ScriptedBackend>();
  json::object r = Tools(b).Call(
      "sandbox_process_start",
      Args(R"({"sandbox_id":"s","command":"python3 -m http.server","tag":"web","stdin":true,)"
           R"("ring_bytes":4096,"env":{"A":"1"},"workdir":"/tmp"})"),
      {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(json::serialize(b->last_body),
            R"({"command":"python3 -m http.server","env":{"A":"1"},"workdir":"/tmp",)"
            R"("tag":"web","stdin":true,"ring_bytes":4096})");
  EXPECT_EQ(r.at("structuredContent").at("pid").as_int64(), 7);
  EXPECT_EQ(ErrorCodeOf(Tools(b).Call("sandbox_process_start", Args(R"({"command":"x"})"), {})),
            "invalid_request");
  json::object list = Tools(b).Call("sandbox_process_list", Args(R"({"sandbox_id":"s"})"), {});
  EXPECT_NE(Text(list).find("process 8 exited (exit code 137)"), std::string::npos) << Text(list);
}

TEST(WatchTools, ArgumentsAtTheirBoundariesAndTheText) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  auto call = [&](std::string_view extra) {
    return tools.Call("sandbox_watch_files",
                      Args(std::string(R"({"sandbox_id":"s")") + std::string(extra) + "}"), {});
  };
  json::object r = call("");
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(b->last_watch.path, "/workspace");
  EXPECT_FALSE(b->last_watch.recursive);
  EXPECT_EQ(b->last_watch.wait_ms, 10000);  // the default
  EXPECT_EQ(b->last_watch.max_events, 1000u);
  EXPECT_NE(Text(r).find("2 changes under /workspace"), std::string::npos) << Text(r);
  EXPECT_NE(Text(r).find("create /workspace/a.txt"), std::string::npos) << Text(r);
  EXPECT_NE(Text(r).find("overflow (7 lost)"), std::string::npos) << Text(r);
  ASSERT_FALSE(IsError(call(R"(,"path":"src","recursive":true,"wait_seconds":60,)"
                            R"("max_events":10000)")));
  EXPECT_EQ(b->last_watch.path, "src");
  EXPECT_TRUE(b->last_watch.recursive);
  EXPECT_EQ(b->last_watch.wait_ms, 60000);
  EXPECT_EQ(b->last_watch.max_events, 10000u);
  EXPECT_FALSE(IsError(call(R"(,"wait_seconds":0,"max_events":1)")));
  EXPECT_EQ(b->last_watch.wait_ms, 0);
  EXPECT_EQ(ErrorCodeOf(call(R"(,"wait_seconds":60.5)")), "invalid_request");
  EXPECT_EQ(ErrorCodeOf(call(R"(,"max_events":10001)")), "invalid_request");
  EXPECT_EQ(ErrorCodeOf(call(R"(,"max_events":0)")), "invalid_request");
  EXPECT_EQ(ErrorCodeOf(call(R"(,"recursive":"yes")")), "invalid_request");
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_watch_files", Args("{}"), {})), "invalid_request");
}

TEST(ProcessTools, OutputLimitsAtTheirBoundaries) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  auto call = [&](std::string_view extra) {
    return tools.Call("sandbox_process_output",
                      Args(std::string(R"({"sandbox_id":"s","pid":7)") + std::string(extra) + "}"),
                      {});
  };
  json::object r = call("");
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(b->last_output.tail_bytes, 65536u);  // the default
  EXPECT_EQ(b->last_output.wait_ms, 0);
  ASSERT_FALSE(IsError(call(R"(,"tail_bytes":262144,"wait_seconds":60)")));
  EXPECT_EQ(b->last_output.tail_bytes, kMaxTextBytes);
  EXPECT_EQ(b->last_output.wait_ms, 60000);
  ASSERT_FALSE(IsError(call(R"(,"tail_bytes":1,"wait_seconds":0.25)")));
  EXPECT_EQ(b->last_output.wait_ms, 250);
  for (const char* bad :
       {R"(,"tail_bytes":262145)", R"(,"tail_bytes":0)", R"(,"tail_bytes":"1")",
        R"(,"wait_seconds":60.001)", R"(,"wait_seconds":-1)", R"(,"tail_bytes":1.5)"}) {
    EXPECT_EQ(ErrorCodeOf(call(bad)), "invalid_request") << bad;
  }
  for (const char* bad :
       {R"({"sandbox_id":"s"})", R"({"sandbox_id":"s","pid":0})", R"({"sandbox_id":"s","pid":"7"})",
        R"({"sandbox_id":"s","pid":1000000000})"}) {
    EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_process_output", Args(bad), {})), "invalid_request")
        << bad;
  }
}

TEST(ProcessTools, OutputKeepsTheTailAsTextAndSaysWhenOlderOutputWasCut) {
  auto b = std::make_shared<ScriptedBackend>();
  b->proc_output = "old line\n" + std::string("\xc3\xa9") + "new line\n";  // "é" = c3 a9
  json::object r = Tools(b).Call("sandbox_process_output",
                                 Args(R"({"sandbox_id":"s","pid":7,"tail_bytes":10})"), {});
  const auto& s = r.at("structuredContent").as_object();
  // The last 10 bytes start inside "é": its continuation byte is dropped, not made U+FFFD.
  EXPECT_EQ(s.at("output").as_string(), "new line\n");
  EXPECT_TRUE(s.at("truncated").as_bool());
  EXPECT_EQ(s.at("process").at("state").as_string(), "running");
  r = Tools(b).Call("sandbox_process_output", Args(R"({"sandbox_id":"s","pid":7})"), {});
  EXPECT_FALSE(r.at("structuredContent").at("truncated").as_bool());
  EXPECT_NE(Text(r).find("old line\n\xc3\xa9new line\n"), std::string::npos) << Text(r);
}

TEST(ProcessTools, StdinAtItsLimitAndCloseAlone) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  json::object args = Args(R"({"sandbox_id":"s","pid":7})");
  args["data"] = std::string(1024 * 1024, 'x');
  ASSERT_FALSE(IsError(tools.Call("sandbox_process_stdin", args, {})));
  EXPECT_EQ(b->last_stdin.size(), 1024u * 1024u);
  EXPECT_FALSE(b->stdin_closed);
  args["data"] = std::string(1024 * 1024 + 1, 'x');
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_process_stdin", args, {})), "invalid_request");

  b->last_stdin.clear();
  json::object close =
      tools.Call("sandbox_process_stdin", Args(R"({"sandbox_id":"s","pid":7,"close":true})"), {});
  ASSERT_FALSE(IsError(close)) << Text(close);
  EXPECT_TRUE(b->stdin_closed);
  EXPECT_TRUE(b->last_stdin.empty());
  ASSERT_FALSE(IsError(
      tools.Call("sandbox_process_stdin",
                 Args(R"({"sandbox_id":"s","pid":7,"data":"aGkK","encoding":"base64"})"), {})));
  EXPECT_EQ(b->last_stdin, "hi\n");
  EXPECT_EQ(
      ErrorCodeOf(tools.Call("sandbox_process_stdin", Args(R"({"sandbox_id":"s","pid":7})"), {})),
      "invalid_request");
  EXPECT_EQ(ErrorCodeOf(tools.Call(
                "sandbox_process_stdin",
                Args(R"({"sandbox_id":"s","pid":7,"data":"*","encoding":"base64"})"), {})),
            "invalid_request");
}

TEST(ProcessTools, SignalAndKillPassTheBackendsAnswer) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  EXPECT_FALSE(IsError(tools.Call("sandbox_process_signal",
                                  Args(R"({"sandbox_id":"s","pid":7,"signal":"SIGTERM"})"), {})));
  json::object bad = tools.Call("sandbox_process_signal",
                                Args(R"({"sandbox_id":"s","pid":7,"signal":"SIGNOPE"})"), {});
  EXPECT_EQ(Text(bad), "invalid_request: unknown signal SIGNOPE");
  json::object k = tools.Call("sandbox_process_kill", Args(R"({"sandbox_id":"s","pid":7})"), {});
  EXPECT_EQ(k.at("structuredContent").at("exit_code").as_int64(), 137);
}

TEST(PortTools, ListParsesTheListeningSocketsOfProcNetTcp) {
  auto b = std::make_shared<ScriptedBackend>();
  b->stdout_text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
      "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000\n"
      "   1: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000\n"
      "   2: 0200000A:2328 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000\n"
      "   3: 0100007F:1F40 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000\n"
      "  sl  local_address                         remote_address                        st\n"
      "   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A\n"
      "   1: 00000000000000000000000001000000:0FA0 00000000000000000000000000000000:0000 0A\n"
      "   2: 0000000000000000FFFF00000100007F:1770 00000000000000000000000000000000:0000 0A\n";
  json::object r = Tools(b).Call("sandbox_port_list", Args(R"({"sandbox_id":"sb_1"})"), {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(json::serialize(b->last_body.at("argv")),
            R"(["cat","/proc/net/tcp","/proc/net/tcp6"])");
  std::string got;
  for (const auto& p : r.at("structuredContent").at("ports").as_array()) {
    got += json::serialize(p.at("port")) + " " + std::string(p.at("address").as_string()) +
           (p.at("reachable").as_bool() ? " yes " : " no ") +
           std::string(p.at("path").as_string()) + "\n";
  }
  EXPECT_EQ(got,
            "3000 :: yes /v1/sandboxes/sb_1/ports/3000/\n"
            "4000 ::1 no /v1/sandboxes/sb_1/ports/4000/\n"
            "5432 127.0.0.1 yes /v1/sandboxes/sb_1/ports/5432/\n"
            "6000 ::ffff:127.0.0.1 yes /v1/sandboxes/sb_1/ports/6000/\n"
            "8000 0.0.0.0 yes /v1/sandboxes/sb_1/ports/8000/\n"
            "9000 10.0.0.2 no /v1/sandboxes/sb_1/ports/9000/\n");
}

TEST(PortTools, RequestLimitsAtTheirBoundaries) {
  auto b = std::make_shared<ScriptedBackend>();
  b->port_answer.status = 200;
  Tools tools(b);
  auto call = [&](json::object extra) {
    json::object a = Args(R"({"sandbox_id":"s","port":8000})");
    for (auto& kv : extra) a[kv.key()] = kv.value();
    return tools.Call("sandbox_port_request", a, {});
  };
  json::object r = call({});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(b->last_port.method, "GET");
  EXPECT_EQ(b->last_port.path, "/");
  EXPECT_EQ(b->last_port.timeout_ms, 30000);
  EXPECT_EQ(b->last_port.max_body_bytes, kMaxTextBytes);

  json::object at_limit;
  at_limit["port"] = 65535;
  at_limit["path"] = "/" + std::string(8191, 'p');
  at_limit["body"] = std::string(1024 * 1024, 'b');
  at_limit["timeout"] = 300;
  json::object headers;
  for (int i = 0; i < 32; ++i) headers["X-H" + std::to_string(i)] = "v";
  at_limit["headers"] = headers;
  at_limit["method"] = "POST";
  ASSERT_FALSE(IsError(call(at_limit))) << Text(call(at_limit));
  EXPECT_EQ(b->last_port.port, 65535);
  EXPECT_EQ(b->last_port.path.size(), 8192u);
  EXPECT_EQ(b->last_port.body.size(), 1024u * 1024u);
  EXPECT_EQ(b->last_port.timeout_ms, 300000);
  EXPECT_EQ(b->last_port.headers.size(), 33u);  // and the default Content-Type
  EXPECT_EQ(b->last_port.headers.back().first, "Content-Type");

  headers["X-H32"] = "v";
  std::vector<json::object> over;
  over.push_back({{"port", 65536}});
  over.push_back({{"port", 0}});
  over.push_back({{"path", "/" + std::string(8192, 'p')}});
  over.push_back({{"path", "no-slash"}});
  over.push_back({{"path", "/a b"}});
  over.push_back({{"body", std::string(1024 * 1024 + 1, 'b')}});
  over.push_back({{"timeout", 300.5}});
  over.push_back({{"timeout", 0}});
  over.push_back({{"headers", headers}});
  over.push_back({{"headers", {{"Authorization", "Bearer x"}}}});
  over.push_back({{"headers", {{"Host", "evil"}}}});
  over.push_back({{"headers", {{"X-A", "a\r\nX-B: b"}}}});
  over.push_back({{"headers", {{"Bad Name", "v"}}}});
  over.push_back({{"method", "TRACE"}});
  for (const auto& o : over) {
    EXPECT_EQ(ErrorCodeOf(call(o)), "invalid_request") << json::serialize(o);
  }
}

TEST(PortTools, AnswersAreResultsWithTheAppsHeadersAndBody) {
  auto b = std::make_shared<ScriptedBackend>();
  b->port_answer.status = 404;
  b->port_answer.headers = {{"content-type", "text/plain"},
                            {"x-request-id", "req_1"},
                            {"content-length", "9"},
                            {"set-cookie", "a=1"},
                            {"set-cookie", "b=2"}};
  b->port_answer.body = "not here\n";
  json::object r = Tools(b).Call("sandbox_port_request",
                                 Args(R"({"sandbox_id":"sb_1","port":80,"path":"/x?y=1"})"), {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  const auto& s = r.at("structuredContent").as_object();
  EXPECT_EQ(s.at("status").as_int64(), 404);
  EXPECT_EQ(json::serialize(s.at("headers")),
            R"({"content-type":"text/plain","set-cookie":"a=1, b=2"})");
  EXPECT_EQ(s.at("body").as_string(), "not here\n");
  EXPECT_EQ(s.at("encoding").as_string(), "utf8");
  EXPECT_EQ(s.at("path").as_string(), "/v1/sandboxes/sb_1/ports/80/x?y=1");
  b->port_answer.body = std::string("\x89PNG\xff", 5);
  r = Tools(b).Call("sandbox_port_request", Args(R"({"sandbox_id":"s","port":80})"), {});
  EXPECT_EQ(r.at("structuredContent").at("encoding").as_string(), "base64");
  EXPECT_EQ(r.at("structuredContent").at("body").as_string(), "iVBOR/8=");
}

TEST(CodeTools, RunsTheInterpreterWithTheCodeOnStdin) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  b->stdout_text = "4\n";
  json::object r =
      tools.Call("sandbox_run_code",
                 Args(R"j({"sandbox_id":"s","language":"python","code":"print(2+2)","timeout":5,)j"
                      R"j("env":{"A":"1"}})j"),
                 {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(json::serialize(b->last_body),
            R"j({"argv":["python3","-"],"stdin":"print(2+2)","env":{"A":"1"},"timeout":5})j");
  EXPECT_EQ(r.at("structuredContent").at("stdout").as_string(), "4\n");
  EXPECT_EQ(r.at("structuredContent").at("language").as_string(), "python");
  using P = std::pair<const char*, const char*>;
  for (auto [lang, argv0] : {P{"JS", "node"}, P{"bash", "bash"}, P{"sh", "sh"}, P{"go", "sh"}}) {
    json::object a = Args(R"({"sandbox_id":"s","code":"x"})");
    a["language"] = lang;
    ASSERT_FALSE(IsError(tools.Call("sandbox_run_code", a, {}))) << lang;
    EXPECT_EQ(b->last_body.at("argv").at(0).as_string(), argv0) << lang;
  }
  json::object a = Args(R"({"sandbox_id":"s","language":"python"})");
  a["code"] = std::string(1024 * 1024, '#');
  EXPECT_FALSE(IsError(tools.Call("sandbox_run_code", a, {})));
  a["code"] = std::string(1024 * 1024 + 1, '#');
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_run_code", a, {})), "invalid_request");
  EXPECT_EQ(
      ErrorCodeOf(tools.Call("sandbox_run_code",
                             Args(R"({"sandbox_id":"s","language":"cobol","code":"x"})"), {})),
      "invalid_request");
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_run_code",
                                   Args(R"({"sandbox_id":"s","language":"python"})"), {})),
            "invalid_request");
}

TEST(CodeTools, AMissingInterpreterIsNotFoundNamingIt) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  b->exit_code = 127;
  b->stderr_text = "sandboxd: node: command not found\n";
  json::object r = tools.Call("sandbox_run_code",
                              Args(R"({"sandbox_id":"s","language":"javascript","code":"1"})"), {});
  EXPECT_EQ(ErrorCodeOf(r), "not_found");
  EXPECT_NE(Text(r).find("javascript needs node"), std::string::npos) << Text(r);
  b->stderr_text = "sh: 1: go: not found\n";
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_run_code",
                                   Args(R"({"sandbox_id":"s","language":"go","code":"x"})"), {})),
            "not_found");
  // The program's own exit 127 (a command it runs is missing) stays a result.
  b->stderr_text = "bash: line 1: nosuchcmd: command not found\n";
  r = tools.Call("sandbox_run_code",
                 Args(R"({"sandbox_id":"s","language":"bash","code":"nosuchcmd"})"), {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(r.at("structuredContent").at("exit_code").as_int64(), 127);
}

// An execution as POST .../code answers it: stdout, a figure (image/png + chart), a main result.
json::object CodeAnswer() {
  return Args(R"j({"context_id":"ctx_0123456789abcdef","language":"python","stdout":"hi\n",
    "stderr":"warn\n","results":[
      {"is_main_result":false,"data":{"image/png":"iVBORw0KGgo=","text/plain":"<Figure>"},
       "chart":{"type":"line","title":"t","elements":[]}},
      {"is_main_result":false,"data":{"image/png":"AAAA"}},
      {"is_main_result":true,"data":{"text/plain":"42"}}],
    "error":null,"status":"ok","execution_count":3,"duration_ms":12,"timed_out":false,
    "truncated":false})j");
}

TEST(CodeContextTools, RunAnswersTextEveryImageAsImageContentAndTheChartAsJson) {
  auto b = std::make_shared<ScriptedBackend>();
  b->code_answer = CodeAnswer();
  json::object r = Tools(b).Call(
      "sandbox_code_run",
      Args(R"j({"sandbox_id":"s","code":"plot()","context_id":"ctx_0123456789abcdef",)j"
           R"j("language":"python","timeout":5})j"),
      {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(json::serialize(b->last_body),
            R"j({"code":"plot()","context_id":"ctx_0123456789abcdef","language":"python",)j"
            R"j("timeout":5})j");
  const json::array& content = r.at("content").as_array();
  // The text, then each result's image followed by its chart.
  ASSERT_EQ(content.size(), 4u) << json::serialize(content);
  const std::string& text = Text(r);
  for (const char* want :
       {"status ok, execution 3", "--- stdout\nhi\n", "--- stderr\nwarn\n", "--- result\n42\n"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " in " << text;
  }
  EXPECT_EQ(text.find("<Figure>"), std::string::npos) << "an image's text/plain is not shown";
  EXPECT_EQ(content[1].at("type").as_string(), "image");
  EXPECT_EQ(content[1].at("mimeType").as_string(), "image/png");
  EXPECT_EQ(content[1].at("data").as_string(), "iVBORw0KGgo=");
  EXPECT_EQ(content[3].at("type").as_string(), "image");
  EXPECT_EQ(content[3].at("data").as_string(), "AAAA");
  EXPECT_EQ(content[2].at("type").as_string(), "text");
  std::string chart(content[2].at("text").as_string());
  ASSERT_NE(chart.find(": "), std::string::npos);
  EXPECT_EQ(json::parse(chart.substr(chart.find(": ") + 2)).at("type").as_string(), "line");
  const json::object& s = r.at("structuredContent").as_object();
  EXPECT_EQ(s.at("images").as_int64(), 2);
  EXPECT_EQ(s.at("context_id").as_string(), "ctx_0123456789abcdef");
  // The base64 travels once, in the image item; structuredContent names the item instead.
  EXPECT_EQ(s.at("results").at(0).at("data").at("image/png").as_string(),
            "[image/png: sent as image content item 1]");
  EXPECT_EQ(s.at("results").at(2).at("data").at("text/plain").as_string(), "42");
}

TEST(CodeContextTools, AKernelErrorIsAResultWithItsTracebackWithoutColours) {
  auto b = std::make_shared<ScriptedBackend>();
  b->code_answer = Args(R"j({"context_id":"ctx_0123456789abcdef","language":"python",
    "stdout":"","stderr":"","results":[],"status":"error","execution_count":1,"duration_ms":1,
    "timed_out":false,"truncated":true,
    "error":{"name":"ZeroDivisionError","value":"division by zero",
             "traceback":["\u001b[0;31mZeroDivisionError\u001b[0m: division by zero"]}})j");
  json::object r =
      Tools(b).Call("sandbox_code_run", Args(R"({"sandbox_id":"s","code":"1/0"})"), {});
  ASSERT_FALSE(IsError(r)) << "the code's error is its result, not the tool's";
  EXPECT_EQ(r.at("content").as_array().size(), 1u);
  EXPECT_NE(Text(r).find("--- error\nZeroDivisionError: division by zero\n"
                         "ZeroDivisionError: division by zero\n"),
            std::string::npos)
      << Text(r);
  EXPECT_NE(Text(r).find("cut by the server's output limit"), std::string::npos);
  EXPECT_TRUE(r.at("structuredContent").at("truncated").as_bool());
  EXPECT_EQ(json::serialize(b->last_body), R"({"code":"1/0"})");
  EXPECT_EQ(ErrorCodeOf(Tools(b).Call("sandbox_code_run", Args(R"({"sandbox_id":"s"})"), {})),
            "invalid_request");
  EXPECT_EQ(
      ErrorCodeOf(Tools(b).Call("sandbox_code_run", Args(R"({"sandbox_id":"s","code":""})"), {})),
      "invalid_request");
}

TEST(CodeContextTools, ContextsAreCreatedListedRestartedAndDeleted) {
  auto b = std::make_shared<ScriptedBackend>();
  Tools tools(b);
  json::object r = tools.Call("sandbox_code_context_create",
                              Args(R"({"sandbox_id":"s","language":"bash","cwd":"/tmp"})"), {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(json::serialize(b->last_body), R"({"language":"bash","cwd":"/tmp"})");
  EXPECT_EQ(r.at("structuredContent").at("id").as_string(), "ctx_0123456789abcdef");
  EXPECT_NE(Text(r).find("created ctx_0123456789abcdef"), std::string::npos);
  r = tools.Call("sandbox_code_context_list", Args(R"({"sandbox_id":"s"})"), {});
  EXPECT_EQ(r.at("structuredContent").at("contexts").as_array().size(), 1u);
  r = tools.Call("sandbox_code_context_restart",
                 Args(R"({"sandbox_id":"s","context_id":"ctx_0123456789abcdef"})"), {});
  ASSERT_FALSE(IsError(r)) << Text(r);
  EXPECT_EQ(b->last_context, "ctx_0123456789abcdef");
  r = tools.Call("sandbox_code_context_delete",
                 Args(R"({"sandbox_id":"s","context_id":"ctx_0123456789abcdef"})"), {});
  EXPECT_TRUE(r.at("structuredContent").at("deleted").as_bool());
  EXPECT_EQ(ErrorCodeOf(tools.Call("sandbox_code_context_delete",
                                   Args(R"({"sandbox_id":"s","context_id":"ctx_nope"})"), {})),
            "not_found");
  EXPECT_EQ(
      ErrorCodeOf(tools.Call("sandbox_code_context_restart", Args(R"({"sandbox_id":"s"})"), {})),
      "invalid_request");
}

TEST(OutputCollectorTest, WaitsForTheReplayThenStopsAndKeepsTheTail) {
  OutputRequest req;
  req.tail_bytes = 100;
  req.wait_ms = 0;
  OutputCollector c(req, 1000, /*now_ms=*/0);  // 1000 written: expects a 100-byte replay
  EXPECT_FALSE(c.Done(0));
  c.Add(std::string(60, 'a'));
  EXPECT_FALSE(c.Done(10));
  c.Add(std::string(240, 'b'));
  EXPECT_TRUE(c.Done(10));
  ProcessOutput out = c.Finish(json::object{});
  EXPECT_EQ(out.output, std::string(100, 'b'));
  EXPECT_EQ(out.received, 300u);

  OutputCollector short_replay(req, 1000, 0);  // the ring kept fewer bytes than expected
  short_replay.Add("xy");
  EXPECT_FALSE(short_replay.Done(kReplayGraceMs - 1));
  EXPECT_EQ(short_replay.NextWaitMs(100), kReplayGraceMs - 100);
  EXPECT_TRUE(short_replay.Done(kReplayGraceMs));

  req.wait_ms = 2000;
  OutputCollector waiting(req, 0, 0);  // nothing written yet: waits the whole wait_ms
  EXPECT_FALSE(waiting.Done(1999));
  EXPECT_EQ(waiting.NextWaitMs(500), 1500);
  EXPECT_TRUE(waiting.Done(2000));
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

TEST_F(ReplyTest, ACancelledCodeRunEndsWithNoResponseAndTheBackendSeesTheFlag) {
  backend_->block = true;
  Sink a;
  session_.HandleText(R"({"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":)"
                      R"("sandbox_code_run","arguments":{"sandbox_id":"s","code":"x"}}})",
                      a.fn());
  session_.Cancel(json::value("k"));
  ASSERT_TRUE(a.WaitFor(Outgoing::kNoResponse));
  EXPECT_TRUE(backend_->saw_cancel);
}

}  // namespace
}  // namespace asb::mcp
