#include "api/json_log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

#include "common/log.h"

namespace asb::api {

namespace {

constexpr std::string_view kFields[] = {"request_id", "key_id", "sandbox_id", "method",
                                        "route",      "status", "ms"};

void Escape(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[96];
    std::snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms % 1000));
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = JsonLogLine(ts, std::string_view(level.data(), level.size()),
                                   std::string_view(msg.payload.data(), msg.payload.size()));
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

std::string JsonLogLine(std::string_view ts, std::string_view level, std::string_view raw) {
  // Controls and invalid UTF-8 escaped and the length bounded first (common/log.h), so the
  // line is valid JSON (UTF-8) and a hostile message stays one short line.
  const std::string safe = LogSafeMessage(raw);
  const std::string_view msg = safe;
  std::string out = "{\"ts\":\"";
  Escape(out, ts);
  out += "\",\"level\":\"";
  Escape(out, level);
  out += "\",\"msg\":\"";
  Escape(out, msg);
  out += '"';
  // Lift key=value words (the first of each name).
  std::string seen;
  size_t pos = 0;
  while (pos < msg.size()) {
    size_t end = msg.find(' ', pos);
    if (end == std::string_view::npos) end = msg.size();
    std::string_view word = msg.substr(pos, end - pos);
    size_t eq = word.find('=');
    if (eq != std::string_view::npos) {
      std::string_view k = word.substr(0, eq);
      std::string_view v = word.substr(eq + 1);
      for (std::string_view f : kFields) {
        if (k == f && seen.find("|" + std::string(k) + "|") == std::string::npos && v != "-") {
          seen += "|" + std::string(k) + "|";
          out += ",\"";
          out += k;
          out += "\":\"";
          Escape(out, v);
          out += '"';
        }
      }
    }
    pos = end + 1;
  }
  out += '}';
  return out;
}

void UseJsonLogFormat() {
  spdlog::default_logger()->set_formatter(std::make_unique<JsonFormatter>());
}

}  // namespace asb::api
