// KeyStore and EventStore on an in-memory database: keys stored hashed and found by the raw
// key only, revoke/rotate/expiry states, events filtered, paged and purged.
#include "store/keys.h"

#include <gtest/gtest.h>

#include "store/events.h"

namespace asb::store {
namespace {

std::unique_ptr<Store> OpenMem() {
  auto s = Store::Open(":memory:", 1000);
  EXPECT_TRUE(s) << s.error().ToString();
  return std::move(*s);
}

TEST(KeysTest, CreatedKeyIsHashedAndFoundOnlyByItsRawKey) {
  auto store = OpenMem();
  KeyStore keys(*store);
  NewKey nk;
  nk.name = "agent-1";
  nk.scopes = {"metrics", "exec", "exec"};
  nk.rate_limit_per_minute = 5;
  auto c = keys.Create(nk, 2000);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->raw_key.size(), 4u + 48u);
  EXPECT_EQ(c->raw_key.rfind("asb_", 0), 0u);
  EXPECT_EQ(c->record.key_prefix, c->raw_key.substr(0, 12));
  EXPECT_EQ(c->record.key_hash, HashApiKey(c->raw_key));
  EXPECT_NE(c->record.key_hash.find(c->raw_key.substr(4)), 0u);
  EXPECT_EQ(c->record.scopes, (std::vector<std::string>{"exec", "metrics"}));
  EXPECT_EQ(c->record.lineage, c->record.id);
  // Nothing in the table holds the raw key.
  auto st = store->db().Prepare(
      "SELECT count(*) FROM api_keys WHERE id || name || key_prefix || "
      "key_hash || scopes LIKE ?");
  ASSERT_TRUE(st);
  st->Bind(1, "%" + c->raw_key.substr(12) + "%");
  ASSERT_TRUE(*st->Step());
  EXPECT_EQ(st->ColumnInt(0), 0);

  auto found = keys.FindByRawKey(c->raw_key);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, c->record.id);
  EXPECT_EQ(found->rate_limit_per_minute, 5);
  EXPECT_FALSE(keys.FindByRawKey(c->raw_key + "0"));
  EXPECT_FALSE(keys.FindByRawKey(""));
  EXPECT_TRUE(found->Usable(3000));
}

TEST(KeysTest, AnE2bShapedKeyIsFoundAndKeepsItsShapeWhenRotated) {
  auto store = OpenMem();
  KeyStore keys(*store);
  NewKey nk;
  nk.name = "e2b";
  nk.e2b_shape = true;
  auto c = keys.Create(nk, 2000);
  ASSERT_TRUE(c) << c.error().ToString();
  // The shape older e2b SDKs check: "e2b_" + 40 lowercase hex digits.
  ASSERT_EQ(c->raw_key.size(), 4u + 40u);
  EXPECT_EQ(c->raw_key.rfind("e2b_", 0), 0u);
  EXPECT_EQ(c->raw_key.find_first_not_of("0123456789abcdef", 4), std::string::npos);
  EXPECT_EQ(keys.FindByRawKey(c->raw_key)->id, c->record.id);
  auto r = keys.Rotate(c->record.id, 3000);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->raw_key.rfind("e2b_", 0), 0u);
  EXPECT_EQ(r->raw_key.size(), 44u);
  EXPECT_NE(r->raw_key, c->raw_key);
  EXPECT_FALSE(keys.FindByRawKey(c->raw_key)->Usable(4000));
}

TEST(KeysTest, BadInputIsRejected) {
  auto store = OpenMem();
  KeyStore keys(*store);
  NewKey nk;
  EXPECT_EQ(keys.Create(nk, 1).error().code(), ErrorCode::kInvalidArgument);  // no name
  nk.name = "x";
  nk.scopes = {"root"};
  EXPECT_EQ(keys.Create(nk, 1).error().code(), ErrorCode::kInvalidArgument);
  nk.scopes = {"exec"};
  nk.rate_limit_per_minute = -1;
  EXPECT_EQ(keys.Create(nk, 1).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ParseScopes(""));
  EXPECT_EQ(*ParseScopes("admin, exec"), (std::vector<std::string>{"admin", "exec"}));
}

TEST(KeysTest, RevokeRotateExpireDelete) {
  auto store = OpenMem();
  KeyStore keys(*store);
  NewKey nk;
  nk.name = "k";
  nk.expires_at_ms = 10'000;
  auto c = *keys.Create(nk, 1000);
  EXPECT_EQ(c.record.Status(9'999), "active");
  EXPECT_EQ(c.record.Status(10'000), "expired");
  EXPECT_FALSE(c.record.Usable(10'000));

  auto r = keys.Rotate(c.record.id, 2000);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->record.lineage, c.record.id);
  EXPECT_NE(r->raw_key, c.raw_key);
  auto old = *keys.Get(c.record.id);
  EXPECT_EQ(old.Status(3000), "rotated");
  EXPECT_EQ(old.replaced_by, r->record.id);
  EXPECT_EQ(keys.Rotate(c.record.id, 3000).error().code(), ErrorCode::kConflict);
  EXPECT_TRUE(keys.FindByRawKey(r->raw_key)->Usable(3000));
  EXPECT_EQ(*keys.CountUsable(3000), 1);

  ASSERT_TRUE(keys.SetEnabled(r->record.id, false, 4000));
  EXPECT_EQ(keys.Get(r->record.id)->Status(4000), "revoked");
  EXPECT_EQ(*keys.CountUsable(4000), 0);
  EXPECT_EQ(keys.Rotate(r->record.id, 5000).error().code(), ErrorCode::kConflict);
  ASSERT_TRUE(keys.SetEnabled(r->record.id, true, 5000));
  EXPECT_EQ(keys.Get(r->record.id)->Status(5000), "active");
  ASSERT_TRUE(keys.Delete(r->record.id));
  EXPECT_EQ(keys.Delete(r->record.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(keys.SetEnabled("key_0000000000000000", false, 1).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(keys.List()->size(), 1u);
}

TEST(EventsTest, FilterPageAndPurge) {
  auto store = OpenMem();
  EventStore events(*store);
  for (int i = 0; i < 10; ++i) {
    EventRecord e;
    e.time_ms = 1000 * (i + 1);
    e.key_id = i % 2 ? "key_a" : "key_b";
    e.owner = e.key_id;
    e.sandbox_id = i < 5 ? "sb_1" : "sb_2";
    e.action = "exec";
    e.target = "echo " + std::to_string(i);
    e.status = 200;
    e.result = "ok";
    if (i == 3) e.exit_code = 7;
    ASSERT_TRUE(events.Append(e));
  }
  EventFilter f;
  f.sandbox_id = "sb_1";
  f.limit = 2;
  auto page1 = *events.List(f);
  ASSERT_EQ(page1.size(), 2u);
  f.after_seq = page1.back().seq;
  auto page2 = *events.List(f);
  ASSERT_EQ(page2.size(), 2u);
  EXPECT_GT(page2[0].seq, page1[1].seq);
  EXPECT_EQ(page2[1].exit_code, 7);
  EXPECT_FALSE(page2[0].exit_code);
  // Newest first, paged with before_seq: the same events, the other way round.
  EventFilter d;
  d.sandbox_id = "sb_1";
  d.newest_first = true;
  d.limit = 3;
  auto newest = *events.List(d);
  ASSERT_EQ(newest.size(), 3u);
  EXPECT_EQ(newest[0].target, "echo 4");
  EXPECT_EQ(newest[2].target, "echo 2");
  d.before_seq = newest.back().seq;
  auto older = *events.List(d);
  ASSERT_EQ(older.size(), 2u);
  EXPECT_EQ(older[0].target, "echo 1");
  EXPECT_EQ(older[1].target, "echo 0");
  EventFilter g;
  g.key_id = "key_a";
  g.since_ms = 5000;
  auto ka = *events.List(g);
  ASSERT_EQ(ka.size(), 3u);  // i = 5, 7, 9
  EXPECT_EQ(ka[0].target, "echo 5");
  EXPECT_EQ(*events.PurgeBefore(5000), 4);
  EXPECT_EQ(events.List(EventFilter{})->size(), 6u);
}

}  // namespace
}  // namespace asb::store
