// Golden JSON strings and round trips of the proc.* messages. A failing golden string means the
// wire format changed: see docs/design/sandbox-protocol.md, "Versioning", before editing it.
#include "protocol/proc_messages.h"

#include <gtest/gtest.h>

namespace asb::protocol {
namespace {

TEST(ProcMessagesTest, StartRequestGoldenAndRoundTrip) {
  ProcStartRequest m;
  m.command = "python3 -m http.server 8000";
  m.env = {{"A", "1"}};
  m.tag = "web";
  m.stdin_pipe = true;
  EXPECT_EQ(EncodeProcStartRequest(m),
            R"({"op":"proc.start","argv":[],"command":"python3 -m http.server 8000",)"
            R"("env":{"A":"1"},"cwd":"/workspace","user":"sandbox","tag":"web",)"
            R"("stdin_pipe":true,"ring_bytes":0})");
  m.pty = ExecRequest::Pty{120, 40};
  m.command.reset();
  m.argv = {"python3", "-i"};
  std::string enc = EncodeProcStartRequest(m);
  EXPECT_NE(enc.find(R"("pty":{"cols":120,"rows":40})"), std::string::npos) << enc;
  auto d = DecodeProcStartRequest(enc);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(d->argv, m.argv);
  EXPECT_FALSE(d->command);
  EXPECT_EQ(d->tag, "web");
  ASSERT_TRUE(d->pty);
  EXPECT_EQ(d->pty->cols, 120);
  EXPECT_EQ(d->pty->rows, 40);
  // Defaults for absent members; unknown members ignored; wrong types and ops refused.
  auto dflt = DecodeProcStartRequest(R"({"op":"proc.start","argv":["true"],"future":1})");
  ASSERT_TRUE(dflt);
  EXPECT_EQ(dflt->cwd, "/workspace");
  EXPECT_EQ(dflt->ring_bytes, 0u);
  EXPECT_FALSE(dflt->pty);
  EXPECT_FALSE(DecodeProcStartRequest(R"({"op":"proc.start","tag":5})"));
  EXPECT_FALSE(DecodeProcStartRequest(R"({"op":"exec","argv":["true"]})"));
  EXPECT_FALSE(DecodeProcStartRequest(R"({"op":"proc.start","pty":{"cols":70000}})"));
}

TEST(ProcMessagesTest, ProcInfoGoldenAndList) {
  ProcInfo p;
  p.pid = 42;
  p.tag = "web";
  p.command = "sleep 9";
  p.started_at_ms = 1764410000000;
  p.state = "running";
  p.stdin_open = true;
  p.output_bytes = 7;
  constexpr char kJson[] =
      R"({"pid":42,"tag":"web","argv":[],"command":"sleep 9","started_at_ms":1764410000000,)"
      R"("ended_at_ms":0,"state":"running","exit_code":-1,"signal":0,"pty":false,)"
      R"("stdin_open":true,"output_bytes":7})";
  EXPECT_EQ(EncodeProcInfo(p), kJson);
  auto d = DecodeProcInfo(kJson);
  ASSERT_TRUE(d) << d.error().ToString();
  EXPECT_EQ(EncodeProcInfo(*d), kJson);
  EXPECT_EQ(EncodeProcInfoList({p}), std::string(R"({"processes":[)") + kJson + "]}");
  auto l = DecodeProcInfoList(EncodeProcInfoList({p, p}));
  ASSERT_TRUE(l);
  EXPECT_EQ(l->size(), 2u);
  EXPECT_FALSE(DecodeProcInfoList(R"({"processes":{}})"));
  EXPECT_FALSE(DecodeProcInfo(R"({"pid":"42"})"));
}

TEST(ProcMessagesTest, SmallRequestsGolden) {
  EXPECT_EQ(EncodeProcAttachRequest({42, 1024, true}),
            R"({"op":"proc.attach","pid":42,"replay_bytes":1024,"stdin":true})");
  auto a = DecodeProcAttachRequest(R"({"op":"proc.attach","pid":42})");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pid, 42);
  EXPECT_EQ(a->replay_bytes, 0u);
  EXPECT_FALSE(a->stdin);
  EXPECT_EQ(EncodeProcPidRequest("proc.kill", {7}), R"({"op":"proc.kill","pid":7})");
  EXPECT_EQ(EncodeProcPidRequest("proc.stdin", {7}), R"({"op":"proc.stdin","pid":7})");
  EXPECT_EQ(DecodeProcPidRequest(R"({"op":"proc.close_stdin","pid":7})")->pid, 7);
  EXPECT_EQ(EncodeProcSignalRequest({7, 15}), R"({"op":"proc.signal","pid":7,"signal":15})");
  EXPECT_EQ(DecodeProcSignalRequest(R"({"op":"proc.signal","pid":7,"signal":2})")->signal, 2);
  EXPECT_EQ(EncodeProcResizeRequest({7, 100, 30}),
            R"({"op":"proc.resize","pid":7,"cols":100,"rows":30})");
  auto r = DecodeProcResizeRequest(R"({"op":"proc.resize","pid":7,"cols":100,"rows":30})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cols, 100);
  EXPECT_FALSE(DecodeProcResizeRequest(R"({"op":"proc.resize","pid":7,"cols":-1})"));
}

}  // namespace
}  // namespace asb::protocol
