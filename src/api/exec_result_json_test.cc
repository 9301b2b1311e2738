// The exec result's one table against the OpenAPI document: every field of ExecResult and of the
// exec stream's "exit" line is a row of the table with the same type, and no row is missing from
// either (a field added in one place and not the other fails here).
#include "api/exec_result_json.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/openapi.h"

namespace asb::api {
namespace {

namespace json = boost::json;

const json::object& Schema(const json::value& doc, const std::string& name) {
  return doc.at("components").at("schemas").at(name).as_object();
}

std::set<std::string> Keys(const json::object& o) {
  std::set<std::string> out;
  for (const auto& kv : o) out.insert(std::string(kv.key()));
  return out;
}

std::set<std::string> TableNames() {
  std::set<std::string> out;
  for (const ExecResultField& f : ExecResultFields()) out.insert(std::string(f.name));
  return out;
}

void ExpectRowsMatch(const json::object& schema, const std::set<std::string>& own) {
  const json::object& props = schema.at("properties").as_object();
  std::set<std::string> documented = Keys(props);
  for (const std::string& k : own) documented.erase(k);
  EXPECT_EQ(documented, TableNames());
  std::set<std::string> required;
  for (const auto& r : schema.at("required").as_array())
    required.insert(std::string(r.as_string()));
  for (const ExecResultField& f : ExecResultFields()) {
    const json::value* p = props.if_contains(f.name);
    ASSERT_NE(p, nullptr) << f.name;
    EXPECT_EQ(p->at("type").as_string(), f.json_type) << f.name;
    EXPECT_TRUE(required.count(std::string(f.name))) << f.name << " is not required";
  }
}

TEST(ExecResultJsonTest, TheTableIsTheDocumentsExecResult) {
  const json::value doc = json::parse(OpenApiJson());
  ExpectRowsMatch(Schema(doc, "ExecResult"), {"stdout", "stderr", "encoding"});
}

TEST(ExecResultJsonTest, TheTableIsTheStreamsExitLine) {
  const json::value doc = json::parse(OpenApiJson());
  bool found = false;
  for (const auto& v : Schema(doc, "StreamEvent").at("oneOf").as_array()) {
    const json::object& variant = v.as_object();
    const json::value* type = variant.at("properties").as_object().if_contains("type");
    if (type == nullptr || !type->is_object() || !type->as_object().contains("const") ||
        type->at("const").as_string() != "exit") {
      continue;
    }
    found = true;
    ExpectRowsMatch(variant, {"type"});
  }
  EXPECT_TRUE(found) << "no exit line in StreamEvent";
}

TEST(ExecResultJsonTest, WritesEveryField) {
  core::ExecResult r;
  r.exit_code = 137;
  r.signal = 9;
  r.stderr_truncated = true;
  r.oom_killed = true;
  r.pids_limited = true;
  r.duration_ms = 42;
  json::object o;
  o["stdout"] = "kept";
  PutExecResult(r, &o);
  EXPECT_EQ(o.at("stdout").as_string(), "kept");
  EXPECT_EQ(o.at("exit_code").as_int64(), 137);
  EXPECT_EQ(o.at("signal").as_int64(), 9);
  EXPECT_TRUE(o.at("truncated").as_bool());
  EXPECT_FALSE(o.at("stdout_truncated").as_bool());
  EXPECT_TRUE(o.at("stderr_truncated").as_bool());
  EXPECT_TRUE(o.at("oom_killed").as_bool());
  EXPECT_TRUE(o.at("pids_limited").as_bool());
  EXPECT_FALSE(o.at("timed_out").as_bool());
  EXPECT_EQ(o.at("duration_ms").as_uint64(), 42u);
  EXPECT_EQ(o.size(), ExecResultFields().size() + 1);
}

}  // namespace
}  // namespace asb::api
