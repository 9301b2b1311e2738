// One memory account for buffers that requests hold while they relay bytes (the ports proxy's
// chunk buffers, ADR 0014): each request leases the bytes it will hold for its whole life, so
// the sum over all requests never passes the server's budget, however many run at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace asb::api {

class BufferBudget : public std::enable_shared_from_this<BufferBudget> {
 public:
  /// A lease of `bytes()`; gives them back when destroyed.
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    uint64_t bytes() const { return bytes_; }

   private:
    friend class BufferBudget;
    Lease(std::shared_ptr<BufferBudget> budget, uint64_t bytes)
        : budget_(std::move(budget)), bytes_(bytes) {}
    std::shared_ptr<BufferBudget> budget_;
    uint64_t bytes_;
  };

  /// Made shared (leases keep the budget alive). `capacity` in bytes; 0 = no limit.
  static std::shared_ptr<BufferBudget> Create(uint64_t capacity);

  /// Leases `bytes`, waiting up to `wait_ms` for others to give theirs back; nullptr when they
  /// did not (the caller answers 503 with Retry-After). May block: call it off the I/O threads.
  std::unique_ptr<Lease> Acquire(uint64_t bytes, int64_t wait_ms);

  uint64_t capacity() const { return capacity_; }
  /// Bytes leased now.
  uint64_t in_use() const;

 private:
  explicit BufferBudget(uint64_t capacity) : capacity_(capacity) {}
  void Release(uint64_t bytes);

  const uint64_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  uint64_t in_use_ = 0;
};

}  // namespace asb::api
