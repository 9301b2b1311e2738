#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>

namespace asb {

bool InitLogging(std::string_view level, LogFormat format) {
  auto lvl = spdlog::level::from_str(std::string(level));
  if (lvl == spdlog::level::off && level != "off") return false;
  // Idempotent: a second call (tests, or serve after a subcommand set a level) replaces the
  // logger instead of throwing spdlog_ex for the duplicate name.
  spdlog::drop("agent-sandbox");
  auto logger = spdlog::stderr_logger_mt("agent-sandbox");
  logger->set_level(lvl);
  if (format == LogFormat::kJson) {
    // Messages are written as key=value text by callers; JSON mode wraps them in an object.
    logger->set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":"%v"})", spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  }
  spdlog::set_default_logger(logger);
  return true;
}

}  // namespace asb
