#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "common/redact.h"

namespace asb {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendEscaped(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// nothing above U+10FFFF), or 0.
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xc0) == 0x80; };
  unsigned char c = b(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

// Appends the marker of a cut: "...(N bytes)".
void AppendCut(std::string& out, size_t original) {
  out += "...(";
  out += std::to_string(original);
  out += " bytes)";
}

class SafeMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string s = LogSafeMessage(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SafeMessageFlag>();
  }
};

}  // namespace

std::string LogField(std::string_view value, size_t max) {
  if (value.empty()) return "-";
  std::string out;
  out.reserve(std::min(value.size(), max) + 24);
  for (char ch : value) {
    auto c = static_cast<unsigned char>(ch);
    bool plain = c > 0x20 && c < 0x7f && c != '"' && c != '\\';
    if (out.size() + (plain ? 1 : 4) > max) {
      AppendCut(out, value.size());
      return out;
    }
    if (plain) {
      out += ch;
    } else {
      AppendEscaped(out, c);
    }
  }
  return out;
}

std::string LogSafeMessage(std::string_view raw, size_t max) {
  const std::string redacted = RedactSecrets(raw);
  const std::string_view msg = redacted;
  std::string out;
  out.reserve(std::min(msg.size(), max) + 24);
  for (size_t i = 0; i < msg.size();) {
    auto c = static_cast<unsigned char>(msg[i]);
    size_t len = 1;
    bool plain = c >= 0x20 && c < 0x7f;
    if (c >= 0x80) {
      len = Utf8SequenceAt(msg, i);
      // C1 controls (U+0080..U+009F, encoded c2 80..c2 9f) act as escapes in some terminals.
      bool c1 = len == 2 && c == 0xc2 && static_cast<unsigned char>(msg[i + 1]) < 0xa0;
      plain = len > 0 && !c1;
      if (!plain) len = 1;
    }
    size_t need = plain ? len : 4;
    if (out.size() + need > max) {
      AppendCut(out, msg.size());
      return out;
    }
    if (plain) {
      out.append(msg.substr(i, len));
    } else {
      AppendEscaped(out, c);
    }
    i += len;
  }
  return out;
}

std::unique_ptr<spdlog::formatter> MakeTextLogFormatter() {
  auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
  f->add_flag<SafeMessageFlag>('*').set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %*");
  return f;
}

bool InitLogging(std::string_view level, LogFormat format) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") return false;
  // Idempotent: a second call (tests, or serve after a subcommand set a level) replaces the
  // logger instead of throwing spdlog_ex for the duplicate name.
  spdlog::drop("agent-sandbox");
  auto logger = spdlog::stderr_logger_mt("agent-sandbox");
  logger->set_level(lvl);
  if (format == LogFormat::kJson) {
    // `serve --log-format json` switches to api::UseJsonLogFormat (JSON-escaped, fields
    // lifted); this fallback only wraps the safe message, whose quotes are not escaped.
    auto f = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    f->add_flag<SafeMessageFlag>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":"%*"})");
    logger->set_formatter(std::move(f));
  } else {
    logger->set_formatter(MakeTextLogFormatter());
  }
  spdlog::set_default_logger(logger);
  return true;
}

}  // namespace asb
