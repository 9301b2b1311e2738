// E2bWatchers: the directory watchers of envd's CreateWatcher / GetWatcherEvents /
// RemoveWatcher (filesystem.proto), the polling form of WatchDir that E2B's Python SDK uses.
// Each is a core::FileWatch kept between calls under a random id, bound to the tenant and
// sandbox that made it: any other caller is told it does not exist. A watcher nobody polls
// holds bounded memory (sandboxd queues at most 4096 events and 1 MiB for it, then counts an
// overflow). Watchers are dropped when unpolled for kIdleMs, once their watch ended and its
// last events were taken, and when their sandbox is no longer running (checked whenever a
// watcher is added: a tenant who makes and destroys sandboxes cannot fill the table). Each
// tenant may keep kMaxWatchersPerOwner. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/result.h"
#include "core/file_watch.h"

namespace asb::api {

class E2bWatchers {
 public:
  /// Watchers kept at once, by all tenants and by one; more is kLimitExceeded. sandboxd allows
  /// 8 watches per sandbox on top of this.
  static constexpr size_t kMaxWatchers = 1024;
  static constexpr size_t kMaxWatchersPerOwner = 128;

  /// `running(sandbox_id)` says whether a sandbox still runs (the lifecycle's answer).
  explicit E2bWatchers(std::function<bool(const std::string&)> running)
      : running_(std::move(running)) {}
  /// A watcher not polled for this long is dropped (its watch cancelled), milliseconds.
  static constexpr int64_t kIdleMs = 10 * 60 * 1000;

  /// Keeps `watch` and returns its id ("w_" + 32 hex digits).
  Result<std::string> Add(const std::string& owner, const std::string& sandbox_id,
                          std::shared_ptr<core::FileWatch> watch);
  /// The events since the last call (at most `max_events`), and the watch itself for its path.
  /// Errors: kNotFound (no such watcher for this tenant and sandbox, or it was dropped).
  struct Taken {
    core::FileWatch::Batch batch;
    std::string path;
  };
  Result<Taken> Take(const std::string& owner, const std::string& sandbox_id,
                     const std::string& watcher_id, size_t max_events);
  /// Stops and forgets a watcher. Errors: kNotFound as Take.
  Status Remove(const std::string& owner, const std::string& sandbox_id,
                const std::string& watcher_id);

 private:
  struct Entry {
    std::string owner;
    std::string sandbox_id;
    std::shared_ptr<core::FileWatch> watch;
    int64_t last_used_ms = 0;
  };
  /// Drops the watchers idle for kIdleMs (and, with `check_sandboxes`, those whose sandbox no
  /// longer runs). Called with mu_ held.
  void PruneLocked(int64_t now_ms, bool check_sandboxes);
  /// The entry of `watcher_id` if it belongs to owner and sandbox. Called with mu_ held.
  Entry* FindLocked(const std::string& owner, const std::string& sandbox_id,
                    const std::string& watcher_id);

  std::function<bool(const std::string&)> running_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
};

}  // namespace asb::api
