// The code interpreter's JSON shapes; see code_json.h.
#include "api/code_json.h"

#include "api/json_body.h"
#include "api/text.h"

namespace asb::api {

namespace json = boost::json;

json::object CodeContextJson(const core::CodeContextInfo& c) {
  json::object o;
  o["id"] = c.id;
  o["language"] = c.language;
  o["cwd"] = c.cwd;
  o["pid"] = c.pid;
  o["state"] = c.state;
  o["default"] = c.is_default;
  o["created_at"] = FormatRfc3339(c.created_at_ms);
  return o;
}

json::object CodeResultJson(const core::CodeResult& r) {
  json::object o;
  o["is_main_result"] = r.is_main_result;
  json::object data;
  for (const auto& [mime, value] : r.data) data[mime] = SanitizeUtf8(value);
  for (const auto& [mime, text] : r.json_data) {
    boost::system::error_code ec;
    json::value v = json::parse(text, ec);
    if (!ec) data[mime] = std::move(v);
  }
  o["data"] = std::move(data);
  if (!r.chart_json.empty()) {
    boost::system::error_code ec;
    json::value chart = json::parse(r.chart_json, ec);
    if (!ec) o["chart"] = std::move(chart);
  }
  return o;
}

json::object CodeErrorJson(const core::CodeError& e) {
  json::object o;
  o["name"] = SanitizeUtf8(e.name);
  o["value"] = SanitizeUtf8(e.value);
  json::array tb;
  for (const std::string& line : e.traceback) tb.emplace_back(SanitizeUtf8(line));
  o["traceback"] = std::move(tb);
  return o;
}

void PutCodeEnd(const core::CodeEnd& e, json::object& o) {
  o["status"] = e.status;
  if (e.execution_count) {
    o["execution_count"] = *e.execution_count;
  } else {
    o["execution_count"] = nullptr;
  }
  o["duration_ms"] = e.duration_ms;
  o["timed_out"] = e.timed_out;
  o["truncated"] = e.truncated;
  json::array cut;
  for (const std::string& name : e.truncated_outputs) cut.emplace_back(name);
  o["truncated_outputs"] = std::move(cut);
  o["dropped_results"] = e.dropped_results;
  if (e.exit_code) o["exit_code"] = *e.exit_code;
}

Result<core::CodeRequest> ParseCodeRequest(std::string_view text) {
  ASB_ASSIGN_OR_RETURN(JsonBody body, JsonBody::Parse(text));
  core::CodeRequest r;
  ASB_ASSIGN_OR_RETURN(auto code, body.String("code"));
  if (!code) return Fail(Error::InvalidArgument("code: required"));
  r.code = std::move(*code);
  ASB_ASSIGN_OR_RETURN(r.context_id, body.String("context_id"));
  ASB_ASSIGN_OR_RETURN(r.language, body.String("language"));
  ASB_ASSIGN_OR_RETURN(auto timeout, body.Number("timeout"));
  ASB_ASSIGN_OR_RETURN(auto alias, body.Number("timeout_seconds"));
  if (timeout && alias) {
    return Fail(Error::InvalidArgument("timeout and timeout_seconds: give one, not both"));
  }
  r.timeout_seconds = timeout ? timeout : alias;
  if (r.timeout_seconds && !(*r.timeout_seconds > 0)) {
    return Fail(Error::InvalidArgument("timeout: must be a number of seconds > 0"));
  }
  ASB_ASSIGN_OR_RETURN(auto cap, body.Integer("max_output_bytes", 1,
                                              static_cast<int64_t>(core::kDefaultCodeOutputBytes)));
  if (cap) r.max_output_bytes = static_cast<uint64_t>(*cap);
  ASB_ASSIGN_OR_RETURN(auto env, body.StringMap("env"));
  if (env) r.env = std::move(*env);
  ASB_TRY(body.Finish());
  return r;
}

Result<json::object> CollectCodeExecution(
    core::CodeExecution& ex, const std::function<bool()>& stop,
    const std::function<void(std::string_view stream, std::string_view text)>& on_output) {
  std::string out, err;
  json::array results;
  json::value error = nullptr;
  bool interrupted = false;
  for (;;) {
    if (!interrupted && stop && stop()) {
      ex.Interrupt();  // once: the end follows (the guard kills code that ignores it)
      interrupted = true;
    }
    Result<core::CodeEvent> ev = ex.Next(1000);
    if (!ev) {
      if (ev.error().code() == ErrorCode::kTimeout) continue;
      return Fail(ev.error());
    }
    switch (ev->kind) {
      case core::CodeEvent::Kind::kStdout:
      case core::CodeEvent::Kind::kStderr: {
        bool is_out = ev->kind == core::CodeEvent::Kind::kStdout;
        (is_out ? out : err) += ev->text;
        if (on_output) on_output(is_out ? "stdout" : "stderr", SanitizeUtf8(ev->text));
        break;
      }
      case core::CodeEvent::Kind::kResult:
        results.push_back(CodeResultJson(ev->result));
        break;
      case core::CodeEvent::Kind::kError:
        error = CodeErrorJson(ev->error);
        break;
      case core::CodeEvent::Kind::kEnd: {
        json::object o;
        o["context_id"] = ex.context().id;
        o["language"] = ex.context().language;
        o["stdout"] = SanitizeUtf8(out);
        o["stderr"] = SanitizeUtf8(err);
        o["results"] = std::move(results);
        o["error"] = std::move(error);
        PutCodeEnd(ev->end, o);
        return o;
      }
    }
  }
}

}  // namespace asb::api
