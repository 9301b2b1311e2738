#include "mcp/process_output.h"

#include <algorithm>

namespace asb::mcp {

OutputCollector::OutputCollector(const OutputRequest& req, uint64_t written, int64_t now_ms)
    : tail_(std::max<uint64_t>(req.tail_bytes, 1)),
      expected_(std::min(tail_, written)),
      wait_until_(now_ms + std::max<int64_t>(req.wait_ms, 0)) {}

void OutputCollector::Add(std::string_view bytes) {
  received_ += bytes.size();
  kept_.append(bytes);
  // Cut from the front once twice the tail is held, so that keeping the tail stays linear.
  if (kept_.size() >= 2 * tail_) kept_.erase(0, kept_.size() - tail_);
}

bool OutputCollector::Done(int64_t now_ms) const {
  if (now_ms < wait_until_) return false;
  return received_ >= expected_ || now_ms >= wait_until_ + kReplayGraceMs;
}

int64_t OutputCollector::NextWaitMs(int64_t now_ms) const {
  int64_t until =
      now_ms < wait_until_ || received_ >= expected_ ? wait_until_ : wait_until_ + kReplayGraceMs;
  return std::max<int64_t>(until - now_ms, 1);
}

ProcessOutput OutputCollector::Finish(boost::json::object process) {
  ProcessOutput out;
  if (kept_.size() > tail_) kept_.erase(0, kept_.size() - tail_);
  out.process = std::move(process);
  out.output = std::move(kept_);
  out.received = received_;
  out.skipped = skipped_;
  return out;
}

}  // namespace asb::mcp
