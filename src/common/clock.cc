#include "common/clock.h"

#include <time.h>

namespace asb {

namespace {
int64_t ReadMs(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}
}  // namespace

int64_t SystemClock::NowUnixMs() const { return ReadMs(CLOCK_REALTIME); }
int64_t SystemClock::MonotonicMs() const { return ReadMs(CLOCK_MONOTONIC); }

SystemClock& SystemClock::Instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace asb
