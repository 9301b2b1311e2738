#include "store/idempotency.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace asb::store {
namespace {

using Kind = IdempotencyClaim::Kind;
constexpr int64_t kDay = 24 * 3600 * 1000;

std::unique_ptr<Store> Mem() {
  auto s = Store::Open(":memory:", 1000);
  EXPECT_TRUE(s) << s.error().ToString();
  return std::move(*s);
}

TEST(IdempotencyKeyTest, LengthIsBoundedAtExactly255PrintableAscii) {
  EXPECT_TRUE(ValidateIdempotencyKey(std::string(255, 'k')));
  EXPECT_EQ(ValidateIdempotencyKey(std::string(256, 'k')).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ValidateIdempotencyKey("a"));
  EXPECT_FALSE(ValidateIdempotencyKey(""));
  EXPECT_FALSE(ValidateIdempotencyKey("tab\there"));
  EXPECT_FALSE(ValidateIdempotencyKey("caf\xc3\xa9"));
}

TEST(IdempotencyStoreTest, ClaimThenReplayMismatchAndInProgress) {
  auto s = Mem();
  IdempotencyStore idem(*s);
  auto c = idem.Begin("alice", "k1", "fp", 5000, kDay);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->kind, Kind::kNew);
  // Until Complete, a second request with the key is told the first one is still running.
  c = idem.Begin("alice", "k1", "fp", 5001, kDay);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Kind::kInProgress);
  ASSERT_TRUE(idem.Complete("alice", "k1", 201, R"({"id":"sb_1"})", "sb_1"));
  c = idem.Begin("alice", "k1", "fp", 5002, kDay);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Kind::kReplay);
  EXPECT_EQ(c->status, 201);
  EXPECT_EQ(c->body, R"({"id":"sb_1"})");
  c = idem.Begin("alice", "k1", "other", 5003, kDay);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Kind::kMismatch);
}

TEST(IdempotencyStoreTest, KeysAreScopedPerTenant) {
  auto s = Mem();
  IdempotencyStore idem(*s);
  ASSERT_EQ(idem.Begin("alice", "k", "fp", 1, kDay)->kind, Kind::kNew);
  ASSERT_TRUE(idem.Complete("alice", "k", 201, "alice's", "sb_a"));
  auto c = idem.Begin("bob", "k", "fp", 2, kDay);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Kind::kNew) << "bob must not see alice's answer";
}

TEST(IdempotencyStoreTest, AbandonedAndExpiredKeysRunAgain) {
  auto s = Mem();
  IdempotencyStore idem(*s);
  ASSERT_EQ(idem.Begin("a", "k", "fp", 1, kDay)->kind, Kind::kNew);
  ASSERT_TRUE(idem.Abandon("a", "k"));
  ASSERT_EQ(idem.Begin("a", "k", "fp", 2, kDay)->kind, Kind::kNew);
  ASSERT_TRUE(idem.Complete("a", "k", 201, "b", "sb"));
  EXPECT_EQ(idem.Begin("a", "k", "fp", 2 + kDay - 1, kDay)->kind, Kind::kReplay);
  EXPECT_EQ(idem.Begin("a", "k", "other", 3 + kDay, kDay)->kind, Kind::kNew) << "expired";
}

TEST(IdempotencyStoreTest, PruneDropsOldRowsAndLeftoverClaims) {
  auto s = Mem();
  IdempotencyStore idem(*s);
  ASSERT_EQ(idem.Begin("a", "old", "fp", 1, kDay)->kind, Kind::kNew);
  ASSERT_TRUE(idem.Complete("a", "old", 201, "b", "sb"));
  ASSERT_EQ(idem.Begin("a", "claimed", "fp", kDay, kDay)->kind, Kind::kNew);
  ASSERT_EQ(idem.Begin("a", "done", "fp", kDay, kDay)->kind, Kind::kNew);
  ASSERT_TRUE(idem.Complete("a", "done", 201, "b", "sb"));
  auto n = idem.Prune(kDay + 10, kDay, /*in_progress_too=*/true);
  ASSERT_TRUE(n) << n.error().ToString();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(idem.Begin("a", "done", "fp", kDay + 11, kDay)->kind, Kind::kReplay);
}

// The table is durable: a reopened database file still has the key.
TEST(IdempotencyStoreTest, SurvivesReopeningTheDatabase) {
  std::string path = ::testing::TempDir() + "/idem_" + std::to_string(::getpid()) + ".db";
  std::remove(path.c_str());
  {
    auto st = Store::Open(path, 1);
    ASSERT_TRUE(st) << st.error().ToString();
    IdempotencyStore idem(**st);
    ASSERT_EQ(idem.Begin("a", "k", "fp", 1, kDay)->kind, Kind::kNew);
    ASSERT_TRUE(idem.Complete("a", "k", 201, "body", "sb"));
  }
  auto st = Store::Open(path, 2);
  ASSERT_TRUE(st) << st.error().ToString();
  auto c = IdempotencyStore(**st).Begin("a", "k", "fp", 2, kDay);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, Kind::kReplay);
  EXPECT_EQ(c->body, "body");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace asb::store
