#include "api/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace asb::api {
namespace {

using std::chrono::milliseconds;

// Polls `pred` for up to `ms` milliseconds.
template <typename Pred>
bool Eventually(Pred pred, int ms) {
  auto deadline = std::chrono::steady_clock::now() + milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

TEST(BlockingPoolTest, GrowsToRunBlockedTasksAtOnce) {
  BlockingPool pool(64);
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  for (int i = 0; i < 20; ++i) {
    pool.Submit([&] {
      ++started;
      while (!release) std::this_thread::sleep_for(milliseconds(1));
    });
  }
  // Twenty tasks that block each other out only finish if they all run at once.
  EXPECT_TRUE(Eventually([&] { return started == 20; }, 5000));
  EXPECT_EQ(pool.threads(), 20u);
  release = true;
  EXPECT_TRUE(pool.WaitIdle(5000));
}

TEST(BlockingPoolTest, StopsGrowingAtMaxThreadsAndQueuesTheRest) {
  BlockingPool pool(3);
  std::atomic<int> done{0};
  for (int i = 0; i < 10; ++i) {
    pool.Submit([&] {
      std::this_thread::sleep_for(milliseconds(10));
      ++done;
    });
  }
  EXPECT_LE(pool.threads(), 3u);
  EXPECT_TRUE(pool.WaitIdle(5000));
  EXPECT_EQ(done, 10);
}

TEST(BlockingPoolTest, IdleThreadsBeyondTheKeptOnesRetire) {
  BlockingPool pool(64, /*idle_retire_ms=*/100, /*keep_threads=*/2);
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  for (int i = 0; i < 12; ++i) {
    pool.Submit([&] {
      ++started;
      while (!release) std::this_thread::sleep_for(milliseconds(1));
    });
  }
  ASSERT_TRUE(Eventually([&] { return started == 12; }, 5000));
  EXPECT_EQ(pool.threads(), 12u);
  release = true;
  ASSERT_TRUE(pool.WaitIdle(5000));
  // After the burst the pool shrinks to exactly the kept threads, never below.
  EXPECT_TRUE(Eventually([&] { return pool.threads() == 2; }, 5000)) << pool.threads();
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(pool.threads(), 2u);
  // And it still runs work, growing again as needed (retired threads are joined on the way).
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) pool.Submit([&] { ++done; });
  EXPECT_TRUE(pool.WaitIdle(5000));
  EXPECT_EQ(done, 8);
}

TEST(BlockingPoolTest, DestructorWaitsForRunningTasks) {
  std::atomic<int> done{0};
  {
    BlockingPool pool(4, /*idle_retire_ms=*/10, /*keep_threads=*/0);
    for (int i = 0; i < 4; ++i) {
      pool.Submit([&] {
        std::this_thread::sleep_for(milliseconds(50));
        ++done;
      });
    }
  }
  EXPECT_EQ(done, 4);
}

}  // namespace
}  // namespace asb::api
