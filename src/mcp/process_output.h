// When sandbox_process_output stops reading, the same for both back ends (mcp/backend.h): it
// attaches with a replay of the last tail_bytes and reads until
//  - the process exits (its final state is known), or
//  - wait_ms have passed and the replay has arrived: as many bytes as the process had written
//    at attach time, up to tail_bytes (the ring may keep fewer: then it waits kReplayGraceMs
//    more at most).
// Output beyond tail_bytes is cut from the front (the most recent bytes are kept).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mcp/backend.h"

namespace asb::mcp {

/// The most sandbox_process_output waits past wait_ms for a replay that falls short.
inline constexpr int64_t kReplayGraceMs = 500;

class OutputCollector {
 public:
  /// `written`: the process's output_bytes when it was attached; `now_ms` a monotonic clock.
  OutputCollector(const OutputRequest& req, uint64_t written, int64_t now_ms);

  /// Output bytes as they arrive.
  void Add(std::string_view bytes);
  /// An attacher's "skipped N" (bytes the ring overwrote first).
  void Skip(uint64_t n) { skipped_ += n; }
  /// True once reading may stop (see above); the exit is the caller's to notice.
  bool Done(int64_t now_ms) const;
  /// How long to wait for the next event before Done() is worth asking again, >= 1 ms.
  int64_t NextWaitMs(int64_t now_ms) const;
  /// The result, with `process` (the Process object) as its state.
  ProcessOutput Finish(boost::json::object process);

 private:
  uint64_t tail_;
  uint64_t expected_;
  int64_t wait_until_;
  std::string kept_;
  uint64_t received_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace asb::mcp
