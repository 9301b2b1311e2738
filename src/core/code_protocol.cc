#include "core/code_protocol.h"

#include <boost/json.hpp>

namespace asb::core {

namespace json = boost::json;

namespace {

// A string field, or nullptr when absent or not a string.
const json::string* StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v ? v->if_string() : nullptr;
}

std::string StringOr(const json::object& o, std::string_view key, std::string fallback = "") {
  const json::string* s = StringField(o, key);
  return s ? std::string(*s) : fallback;
}

std::optional<int64_t> IntField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->as_uint64());
  }
  return std::nullopt;
}

bool BoolField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_bool() && v->as_bool();
}

bool ParseResult(const json::object& o, CodeResult* r) {
  r->is_main_result = BoolField(o, "is_main_result");
  const json::value* data = o.if_contains("data");
  if (!data || !data->is_object()) return false;
  for (const auto& [mime, value] : data->as_object()) {
    if (value.is_string()) {
      r->data[std::string(mime)] = std::string(value.as_string());
    } else {
      r->json_data[std::string(mime)] = json::serialize(value);
    }
  }
  if (const json::value* chart = o.if_contains("chart"); chart && chart->is_object()) {
    r->chart_json = json::serialize(*chart);
  }
  return true;
}

void ParseError(const json::object& o, CodeError* e) {
  e->name = StringOr(o, "name", "Error");
  e->value = StringOr(o, "value");
  if (const json::value* tb = o.if_contains("traceback"); tb && tb->is_array()) {
    for (const json::value& line : tb->as_array()) {
      if (line.is_string()) e->traceback.emplace_back(line.as_string());
    }
  }
}

bool ParseEnd(const json::object& o, CodeEnd* end) {
  std::string status = StringOr(o, "status", "ok");
  if (status != "ok" && status != "error" && status != "timeout" && status != "dead") {
    return false;
  }
  end->status = status;
  end->execution_count = IntField(o, "execution_count");
  end->duration_ms = IntField(o, "duration_ms").value_or(0);
  end->timed_out = BoolField(o, "timed_out");
  end->truncated = BoolField(o, "truncated");
  // What the driver cut itself (it cuts before the server sees it); only the known names.
  if (auto it = o.find("truncated_outputs"); it != o.end() && it->value().is_array()) {
    for (const json::value& v : it->value().as_array()) {
      if (!v.is_string()) continue;
      const std::string_view name = v.as_string();
      if (name == "stdout" || name == "stderr" || name == "results") {
        end->truncated_outputs.emplace_back(name);
      }
    }
  }
  if (auto n = IntField(o, "dropped_results"); n && *n > 0 && *n <= (1 << 30)) {
    end->dropped_results = *n;
  }
  if (auto code = IntField(o, "exit_code"); code && *code >= -1 && *code <= 255) {
    end->exit_code = static_cast<int>(*code);
  }
  return true;
}

}  // namespace

DriverLine ParseDriverLine(std::string_view line) {
  DriverLine out;
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) return out;
  const json::object& o = v.as_object();
  const std::string type = StringOr(o, "type");
  if (type == "ready") {
    out.kind = DriverLine::Kind::kReady;
    return out;
  }
  if (type == "fatal") {
    out.kind = DriverLine::Kind::kFatal;
    out.message = StringOr(o, "message", "the code context could not start");
    return out;
  }
  const json::string* id = StringField(o, "id");
  if (!id) return out;
  out.id = std::string(*id);
  CodeEvent& ev = out.event;
  if (type == "stdout" || type == "stderr") {
    const json::string* data = StringField(o, "data");
    if (!data) return out;
    ev.kind = type == "stdout" ? CodeEvent::Kind::kStdout : CodeEvent::Kind::kStderr;
    ev.text = std::string(*data);
  } else if (type == "result") {
    ev.kind = CodeEvent::Kind::kResult;
    if (!ParseResult(o, &ev.result)) return out;
  } else if (type == "error") {
    ev.kind = CodeEvent::Kind::kError;
    ParseError(o, &ev.error);
  } else if (type == "end") {
    ev.kind = CodeEvent::Kind::kEnd;
    if (!ParseEnd(o, &ev.end)) return out;
  } else {
    return out;
  }
  out.kind = DriverLine::Kind::kEvent;
  return out;
}

std::string EncodeExecuteRequest(std::string_view exec_id, std::string_view code,
                                 int64_t timeout_ms, uint64_t max_output_bytes,
                                 const std::map<std::string, std::string>& env) {
  json::object o;
  o["op"] = "execute";
  o["id"] = exec_id;
  o["code"] = code;
  o["timeout_ms"] = timeout_ms;
  o["max_output_bytes"] = max_output_bytes;
  if (!env.empty()) {
    json::object e;
    for (const auto& [k, v] : env) e[k] = v;
    o["env"] = std::move(e);
  }
  return json::serialize(o) + "\n";
}

std::string EncodeDriverSource(std::string_view source) {
  return json::serialize(json::value(json::string(source))) + "\n";
}

}  // namespace asb::core
