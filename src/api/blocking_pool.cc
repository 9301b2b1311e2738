#include "api/blocking_pool.h"

#include <chrono>

namespace asb::api {

BlockingPool::BlockingPool(size_t max_threads, int64_t idle_retire_ms, size_t keep_threads)
    : max_threads_(max_threads == 0 ? 1 : max_threads),
      idle_retire_ms_(idle_retire_ms),
      keep_threads_(keep_threads) {}

BlockingPool::~BlockingPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void BlockingPool::ReapRetiredLocked() {
  for (std::thread::id id : retired_) {
    for (auto it = threads_.begin(); it != threads_.end(); ++it) {
      if (it->get_id() == id) {
        // The thread gave up mu_ when it retired and has nothing left to do but exit.
        it->join();
        threads_.erase(it);
        break;
      }
    }
  }
  retired_.clear();
}

void BlockingPool::Submit(std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!retired_.empty()) ReapRetiredLocked();
  queue_.push_back(std::move(task));
  if (idle_ >= queue_.size() || live_ >= max_threads_) {
    cv_.notify_one();
    return;
  }
  ++live_;
  threads_.emplace_back([this] { Worker(); });
}

void BlockingPool::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) break;
      ++idle_;
      bool woken = cv_.wait_for(lock, std::chrono::milliseconds(idle_retire_ms_),
                                [this] { return !queue_.empty() || stopping_; });
      --idle_;
      if (!woken && live_ > keep_threads_) {
        retired_.push_back(std::this_thread::get_id());
        break;
      }
      continue;
    }
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_cv_.notify_all();
  }
  --live_;
}

bool BlockingPool::WaitIdle(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           [this] { return running_ == 0 && queue_.empty(); });
}

size_t BlockingPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return live_;
}

}  // namespace asb::api
