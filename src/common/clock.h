// Clock: the time seam. Production code asks a Clock for the time so that tests of the TTL
// reaper and rate limits can use FakeClock instead of sleeping.
#pragma once

#include <atomic>
#include <cstdint>

namespace asb {

class Clock {
 public:
  virtual ~Clock() = default;
  /// Wall-clock time in milliseconds since the Unix epoch (CLOCK_REALTIME). Used for
  /// timestamps that are stored and shown (created_at, expires_at).
  virtual int64_t NowUnixMs() const = 0;
  /// Monotonic time in milliseconds (CLOCK_MONOTONIC), for durations and deadlines in-process.
  virtual int64_t MonotonicMs() const = 0;
};

/// The real clocks.
class SystemClock final : public Clock {
 public:
  int64_t NowUnixMs() const override;
  int64_t MonotonicMs() const override;
  /// A process-wide instance.
  static SystemClock& Instance();
};

/// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t unix_ms = 1'700'000'000'000) : unix_ms_(unix_ms), mono_ms_(0) {}
  int64_t NowUnixMs() const override { return unix_ms_.load(); }
  int64_t MonotonicMs() const override { return mono_ms_.load(); }
  /// Moves both clocks forward by `ms` milliseconds.
  void AdvanceMs(int64_t ms) {
    unix_ms_ += ms;
    mono_ms_ += ms;
  }

 private:
  std::atomic<int64_t> unix_ms_;
  std::atomic<int64_t> mono_ms_;
};

}  // namespace asb
