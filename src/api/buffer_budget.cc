#include "api/buffer_budget.h"

#include <chrono>

namespace asb::api {

BufferBudget::Lease::~Lease() { budget_->Release(bytes_); }

std::shared_ptr<BufferBudget> BufferBudget::Create(uint64_t capacity) {
  return std::shared_ptr<BufferBudget>(new BufferBudget(capacity));
}

std::unique_ptr<BufferBudget::Lease> BufferBudget::Acquire(uint64_t bytes, int64_t wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto fits = [&] { return capacity_ == 0 || in_use_ + bytes <= capacity_; };
  if (capacity_ != 0 && bytes > capacity_) return nullptr;
  if (!freed_.wait_for(lock, std::chrono::milliseconds(wait_ms), fits)) return nullptr;
  in_use_ += bytes;
  return std::unique_ptr<Lease>(new Lease(shared_from_this(), bytes));
}

uint64_t BufferBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

void BufferBudget::Release(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ -= bytes;
  }
  freed_.notify_all();
}

}  // namespace asb::api
