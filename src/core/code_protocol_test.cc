// The driver line protocol (code_protocol.h): what the server accepts from a driver in the
// sandbox, and what it ignores (a line hostile code wrote to the driver's stdout).
#include "core/code_protocol.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace asb::core {
namespace {

TEST(CodeProtocolTest, ReadyAndFatal) {
  EXPECT_EQ(ParseDriverLine(R"({"type":"ready","language":"python","pid":7})").kind,
            DriverLine::Kind::kReady);
  DriverLine f = ParseDriverLine(R"({"type":"fatal","message":"no kernel"})");
  EXPECT_EQ(f.kind, DriverLine::Kind::kFatal);
  EXPECT_EQ(f.message, "no kernel");
}

TEST(CodeProtocolTest, OutputResultErrorEnd) {
  DriverLine o = ParseDriverLine(R"({"type":"stderr","id":"e1","data":"warn\n"})");
  ASSERT_EQ(o.kind, DriverLine::Kind::kEvent);
  EXPECT_EQ(o.id, "e1");
  EXPECT_EQ(o.event.kind, CodeEvent::Kind::kStderr);
  EXPECT_EQ(o.event.text, "warn\n");

  DriverLine r = ParseDriverLine(
      R"({"type":"result","id":"e1","is_main_result":true,"data":{"text/plain":"1",)"
      R"("application/json":{"a":[1]}},"chart":{"type":"line","elements":[]}})");
  ASSERT_EQ(r.kind, DriverLine::Kind::kEvent);
  EXPECT_TRUE(r.event.result.is_main_result);
  EXPECT_EQ(r.event.result.data.at("text/plain"), "1");
  EXPECT_EQ(r.event.result.json_data.at("application/json"), R"({"a":[1]})");
  EXPECT_EQ(r.event.result.chart_json, R"({"type":"line","elements":[]})");

  DriverLine e = ParseDriverLine(
      R"({"type":"error","id":"e1","name":"ValueError","value":"v","traceback":["a",2,"b"]})");
  ASSERT_EQ(e.kind, DriverLine::Kind::kEvent);
  EXPECT_EQ(e.event.error.name, "ValueError");
  EXPECT_EQ(e.event.error.traceback, (std::vector<std::string>{"a", "b"}));  // 2 dropped

  DriverLine end = ParseDriverLine(
      R"({"type":"end","id":"e1","status":"timeout","execution_count":3,"duration_ms":2001,)"
      R"("timed_out":true,"truncated":false,"exit_code":130})");
  ASSERT_EQ(end.kind, DriverLine::Kind::kEvent);
  EXPECT_EQ(end.event.end.status, "timeout");
  EXPECT_EQ(end.event.end.execution_count, 3);
  EXPECT_EQ(end.event.end.duration_ms, 2001);
  EXPECT_TRUE(end.event.end.timed_out);
  EXPECT_EQ(end.event.end.exit_code, 130);
  EXPECT_TRUE(end.event.end.truncated_outputs.empty());
  EXPECT_EQ(end.event.end.dropped_results, 0);
  // The bytes a result counts against the output budget: every value and the chart.
  EXPECT_EQ(r.event.result.OutputBytes(), 1 + 9 + 29);
}

TEST(CodeProtocolTest, TheDriversCutsAreReadButOnlyKnownNames) {
  // ADR 0014, round 3: the end says which outputs lost something. What a driver (in the
  // sandbox, untrusted) says is only taken when it names a known output and a sane count.
  DriverLine end = ParseDriverLine(
      R"({"type":"end","id":"e","status":"ok","truncated":true,)"
      R"("truncated_outputs":["results","stdout",7,"/etc/passwd"],"dropped_results":3})");
  ASSERT_EQ(end.kind, DriverLine::Kind::kEvent);
  EXPECT_EQ(end.event.end.truncated_outputs, (std::vector<std::string>{"results", "stdout"}));
  EXPECT_EQ(end.event.end.dropped_results, 3);
  DriverLine wild =
      ParseDriverLine(R"({"type":"end","id":"e","status":"ok","truncated_outputs":"stdout",)"
                      R"("dropped_results":-5})");
  ASSERT_EQ(wild.kind, DriverLine::Kind::kEvent);
  EXPECT_TRUE(wild.event.end.truncated_outputs.empty());
  EXPECT_EQ(wild.event.end.dropped_results, 0);
}

TEST(CodeProtocolTest, MalformedLinesAreIgnored) {
  for (const char* line : {
           "", "not json", "[1,2]", R"({"type":"stdout","data":"no id"})",
           R"({"type":"stdout","id":5,"data":"x"})", R"({"type":"stdout","id":"e","data":7})",
           R"({"type":"result","id":"e","data":"not an object"})",
           R"({"type":"end","id":"e","status":"exploded"})", R"({"type":"nope","id":"e"})",
           R"({"type":"stdout","id":"e","data":"x")",  // cut short
       }) {
    EXPECT_EQ(ParseDriverLine(line).kind, DriverLine::Kind::kIgnored) << line;
  }
  // An exit code out of range is dropped, not trusted.
  DriverLine end = ParseDriverLine(R"({"type":"end","id":"e","status":"ok","exit_code":99999})");
  ASSERT_EQ(end.kind, DriverLine::Kind::kEvent);
  EXPECT_FALSE(end.event.end.exit_code.has_value());
}

TEST(CodeProtocolTest, RequestsRoundTrip) {
  std::string line = EncodeExecuteRequest("e9", "print(\"hi\")\n\x01", 2000, 1024);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line, whatever the code holds
  boost::json::object o = boost::json::parse(line).as_object();
  EXPECT_EQ(o.at("op").as_string(), "execute");
  EXPECT_EQ(o.at("code").as_string(), "print(\"hi\")\n\x01");
  EXPECT_EQ(o.at("timeout_ms").as_int64(), 2000);
  EXPECT_EQ(o.if_contains("env"), nullptr);  // none: not sent
  boost::json::object with_env =
      boost::json::parse(EncodeExecuteRequest("e1", "", 0, 1, {{"A", "x\ny"}})).as_object();
  EXPECT_EQ(with_env.at("env").as_object().at("A").as_string(), "x\ny");
  std::string src = EncodeDriverSource("a\nb");
  EXPECT_EQ(src, "\"a\\nb\"\n");
}

TEST(CodeProtocolTest, DriversAreEmbedded) {
  EXPECT_NE(PythonDriverSource().find("def main():"), std::string_view::npos);
  EXPECT_NE(JavaScriptDriverSource().find("vm.createContext"), std::string_view::npos);
}

}  // namespace
}  // namespace asb::core
