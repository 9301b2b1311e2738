// A pool of threads for handler work that may block (manager calls: exec, file transfer,
// create), so that a slow sandbox never blocks the server's I/O threads or other requests.
// The pool grows on demand up to `max_threads` (a sync exec holds its thread for the command's
// whole run, so a fixed small pool would serialize unrelated requests). A thread idle for
// `idle_retire_ms` exits while more than `keep_threads` are alive, so a burst (200 concurrent
// sync execs) does not leave 200 threads, their stacks and their allocator caches behind.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace asb::api {

class BlockingPool {
 public:
  /// `max_threads`: the most threads at once (0 counts as 1). `idle_retire_ms`: how long, in
  /// milliseconds, a thread waits for work before it exits; `keep_threads` are never retired.
  explicit BlockingPool(size_t max_threads = 512, int64_t idle_retire_ms = 30'000,
                        size_t keep_threads = 4);
  /// Joins every thread (waits for running tasks).
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  /// Queues `task`; it runs on an idle thread, a new one, or (at max_threads) the next free
  /// one. Tasks must not throw.
  void Submit(std::function<void()> task);

  /// Waits until no task runs or is queued, up to `timeout_ms`. True when idle.
  bool WaitIdle(int64_t timeout_ms);

  /// Threads alive now (running, idle, or retiring).
  size_t threads() const;

 private:
  void Worker();
  /// Joins the threads that retired (mu_ held; they no longer need it).
  void ReapRetiredLocked();

  const size_t max_threads_;
  const int64_t idle_retire_ms_;
  const size_t keep_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::vector<std::thread::id> retired_;  // exited Worker(), not joined yet
  size_t idle_ = 0;
  size_t running_ = 0;
  size_t live_ = 0;
  bool stopping_ = false;
};

}  // namespace asb::api
