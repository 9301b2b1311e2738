// JSON codec of the stats operation's RESULT (stats_messages.h), driven by a field table
// (field_table.h) as every other message.
#include "protocol/stats_messages.h"

#include <tuple>

#include "protocol/field_table.h"

namespace asb::protocol {

namespace internal {

template <>
struct MessageSchema<SandboxStats> {
  static constexpr std::string_view kWhat = "stats result";
  static constexpr auto kFields = std::tuple(
      Field("memory_bytes", &SandboxStats::memory_bytes),
      Field("memory_peak_bytes", &SandboxStats::memory_peak_bytes),
      Field("memory_total_bytes", &SandboxStats::memory_total_bytes),
      Field("pids", &SandboxStats::pids), Field("cpu_usage_ns", &SandboxStats::cpu_usage_ns),
      Field("oom_kills", &SandboxStats::oom_kills),
      Field("pids_limit_hits", &SandboxStats::pids_limit_hits));
};

}  // namespace internal

std::string EncodeSandboxStats(const SandboxStats& m) { return internal::Encode(m); }
Result<SandboxStats> DecodeSandboxStats(std::string_view json) {
  return internal::Decode<SandboxStats>(json);
}

}  // namespace asb::protocol
