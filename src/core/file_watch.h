// FileWatch: a running watch of a sandbox directory (FileService::WatchDirectory), as the
// layers above consume it. sandboxd's file.watch (inotify; docs/design/sandbox-protocol.md)
// sends the changes; this decodes them into FileEvents. Flow control is the channel's: while
// nobody takes events, sandboxd queues a bounded number and then reports an overflow, so an
// idle watch costs bounded memory on both sides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "core/sandbox_types.h"

namespace asb::core {

/// Events a watch holds for a reader that falls behind: default and largest `max_queue` of
/// FileService::WatchDirectory (sandboxd's own limits, protocol::kWatchQueue*).
inline constexpr uint32_t kWatchQueueDefault = 4096;
inline constexpr uint32_t kMaxWatchQueue = 65536;

class FileWatch {
 public:
  /// What Take() found.
  struct Batch {
    std::vector<FileEvent> events;
    bool ended = false;          // nothing more will come (after `events`)
    std::string end_reason;      // ended by itself: "removed" (the directory went away) or
                                 // "unmounted"; empty when it ended with `error`
    std::optional<Error> error;  // ended with an error: kCancelled after Cancel(), kBackend
                                 // when the sandbox went away
  };

  virtual ~FileWatch() = default;  // cancels the watch unless it ended

  /// The watched directory (absolute in the sandbox) and how many directories the watch
  /// follows (1 unless recursive).
  virtual const std::string& path() const = 0;
  virtual uint32_t watches() const = 0;

  /// Takes up to `max_events` events, waiting up to `wait_ms` milliseconds for the first one
  /// (0 = not at all). Thread-safe; concurrent callers each get different events.
  virtual Batch Take(size_t max_events, int64_t wait_ms) = 0;
  /// Registers a callback run (on the connection's reader thread; must not block) whenever
  /// events may be ready; nullptr clears it.
  virtual void SetNotify(std::function<void()> notify) = 0;
  /// Stops the watch in the sandbox; Take() then reports the end (kCancelled).
  virtual void Cancel() = 0;
};

}  // namespace asb::core
