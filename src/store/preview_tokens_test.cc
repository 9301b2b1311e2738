#include "store/preview_tokens.h"

#include <gtest/gtest.h>

#include <string>

#include "common/ids.h"
#include "store/keys.h"

namespace asb::store {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;
constexpr int64_t kHour = 3600 * 1000;

class PreviewTokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::Open(":memory:", 1000);
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
    tokens_ = std::make_unique<PreviewTokenStore>(*store_);
    AddSandbox("sb_aaaaaaaaaaaaaaaa", "alice");
    AddSandbox("sb_bbbbbbbbbbbbbbbb", "bob");
  }

  void AddSandbox(const std::string& id, const std::string& owner) {
    SandboxRecord r;
    r.id = id;
    r.owner = owner;
    r.template_name = "base";
    r.state = "running";
    r.created_at_ms = r.updated_at_ms = r.last_activity_at_ms = kNow;
    r.expires_at_ms = kNow + 10 * kHour;
    r.backend = "ns";
    ASSERT_TRUE(store_->InsertSandbox(r));
  }

  Result<CreatedPreviewToken> Make(const std::string& sandbox, int64_t port, int64_t expires_at,
                                   int64_t now = kNow, int64_t max = 100) {
    NewPreviewToken t;
    t.sandbox_id = sandbox;
    t.port = port;
    t.owner = "alice";
    t.created_by = "key_1";
    t.expires_at_ms = expires_at;
    return tokens_->Create(t, now, max);
  }

  std::unique_ptr<Store> store_;
  std::unique_ptr<PreviewTokenStore> tokens_;
};

TEST(PreviewTokenShapeTest, TokensAre256RandomBitsWithTheirOwnPrefix) {
  std::string a = GeneratePreviewToken(), b = GeneratePreviewToken();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 5u + 64u);
  EXPECT_EQ(a.substr(0, 5), "asbp_");
  EXPECT_TRUE(LooksLikePreviewToken(a));
  EXPECT_FALSE(LooksLikePreviewToken(a.substr(0, a.size() - 1)));
  EXPECT_FALSE(LooksLikePreviewToken(a + "0"));
  EXPECT_FALSE(LooksLikePreviewToken("asbp_" + std::string(64, 'G')));
  EXPECT_FALSE(LooksLikePreviewToken(GenerateApiKey()));  // an API key is never one
  EXPECT_FALSE(LooksLikePreviewToken(""));
}

TEST_F(PreviewTokenStoreTest, CreateThenResolveBindsSandboxPortAndOwner) {
  auto c = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_TRUE(IsValidId(c->record.id, "pv_"));
  auto r = tokens_->Resolve(c->raw_token, kNow + 1);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->id, c->record.id);
  EXPECT_EQ(r->sandbox_id, "sb_aaaaaaaaaaaaaaaa");
  EXPECT_EQ(r->port, 8000);
  EXPECT_EQ(r->owner, "alice");
  EXPECT_EQ(r->created_by, "key_1");
  EXPECT_EQ(r->created_at_ms, kNow);
  EXPECT_EQ(r->expires_at_ms, kNow + kHour);
}

TEST_F(PreviewTokenStoreTest, OnlyTheSha256IsStored) {
  auto c = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  ASSERT_TRUE(c);
  std::lock_guard<std::mutex> lock(store_->lock());
  auto st = store_->db().Prepare("SELECT * FROM preview_tokens");
  ASSERT_TRUE(st);
  ASSERT_TRUE(*st->Step());
  bool hash_seen = false;
  for (int col = 0; col < 8; ++col) {
    std::string v = st->ColumnText(col);
    EXPECT_EQ(v.find(c->raw_token.substr(5)), std::string::npos) << "column " << col;
    hash_seen |= v == HashApiKey(c->raw_token);
  }
  EXPECT_TRUE(hash_seen);
  EXPECT_EQ(HashApiKey(c->raw_token).size(), 64u);
}

TEST_F(PreviewTokenStoreTest, ExpiresExactlyAtExpiresAt) {
  auto c = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  ASSERT_TRUE(c);
  EXPECT_TRUE(tokens_->Resolve(c->raw_token, kNow + kHour - 1));
  auto at = tokens_->Resolve(c->raw_token, kNow + kHour);
  ASSERT_FALSE(at);
  EXPECT_EQ(at.error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(tokens_->Resolve(c->raw_token, kNow + kHour + 1));
  // Listing shows the same boundary.
  EXPECT_EQ(tokens_->List("sb_aaaaaaaaaaaaaaaa", kNow + kHour - 1)->size(), 1u);
  EXPECT_EQ(tokens_->List("sb_aaaaaaaaaaaaaaaa", kNow + kHour)->size(), 0u);
  // A token must expire after it is made.
  EXPECT_EQ(Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + 1));
}

TEST_F(PreviewTokenStoreTest, RevokeStopsItAtOnceAndOnlyForItsSandbox) {
  auto c = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  auto keep = Make("sb_aaaaaaaaaaaaaaaa", 8001, kNow + kHour);
  ASSERT_TRUE(c && keep);
  // Another sandbox's id does not reach it.
  EXPECT_EQ(tokens_->Revoke("sb_bbbbbbbbbbbbbbbb", c->record.id).error().code(),
            ErrorCode::kNotFound);
  EXPECT_TRUE(tokens_->Resolve(c->raw_token, kNow));
  ASSERT_TRUE(tokens_->Revoke("sb_aaaaaaaaaaaaaaaa", c->record.id));
  EXPECT_EQ(tokens_->Resolve(c->raw_token, kNow).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(tokens_->Revoke("sb_aaaaaaaaaaaaaaaa", c->record.id).error().code(),
            ErrorCode::kNotFound);
  EXPECT_TRUE(tokens_->Resolve(keep->raw_token, kNow));
  auto list = tokens_->List("sb_aaaaaaaaaaaaaaaa", kNow);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, keep->record.id);
}

TEST_F(PreviewTokenStoreTest, TokensDieWithTheirSandbox) {
  auto a = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  auto b = Make("sb_bbbbbbbbbbbbbbbb", 8000, kNow + kHour);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(store_->SetSandboxState("sb_aaaaaaaaaaaaaaaa", "stopping", "", kNow));
  EXPECT_TRUE(tokens_->Resolve(a->raw_token, kNow));
  ASSERT_TRUE(store_->SetSandboxState("sb_aaaaaaaaaaaaaaaa", "destroyed", "", kNow));
  EXPECT_EQ(tokens_->Resolve(a->raw_token, kNow).error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(tokens_->List("sb_aaaaaaaaaaaaaaaa", kNow)->empty());
  EXPECT_TRUE(tokens_->Resolve(b->raw_token, kNow));
  // None can be made for a destroyed or unknown sandbox.
  EXPECT_EQ(Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Make("sb_cccccccccccccccc", 8000, kNow + kHour).error().code(), ErrorCode::kNotFound);
}

TEST_F(PreviewTokenStoreTest, LiveTokensPerSandboxAreLimitedAtExactlyTheMax) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour, kNow, 3));
  auto over = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour, kNow, 3);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kLimitExceeded);
  // Other sandboxes have their own count; expired tokens count no more (and are deleted).
  EXPECT_TRUE(Make("sb_bbbbbbbbbbbbbbbb", 8000, kNow + 3 * kHour, kNow, 3));
  EXPECT_TRUE(Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + 2 * kHour, kNow + kHour, 3));
  std::lock_guard<std::mutex> lock(store_->lock());
  auto st = store_->db().Prepare("SELECT COUNT(*) FROM preview_tokens");
  ASSERT_TRUE(st && *st->Step());
  EXPECT_EQ(st->ColumnInt(0), 2);  // b's, and a's new one: a's three expired ones are gone
}

TEST_F(PreviewTokenStoreTest, ResolveRejectsWhatIsNotALiveToken) {
  auto c = Make("sb_aaaaaaaaaaaaaaaa", 8000, kNow + kHour);
  ASSERT_TRUE(c);
  std::string flipped = c->raw_token;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  for (const std::string& bad : {flipped, GenerateApiKey(), GeneratePreviewToken(),
                                 HashApiKey(c->raw_token), std::string(), c->raw_token + " "}) {
    auto r = tokens_->Resolve(bad, kNow);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  }
  EXPECT_EQ(Make("sb_aaaaaaaaaaaaaaaa", 0, kNow + kHour).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Make("sb_aaaaaaaaaaaaaaaa", 65536, kNow + kHour).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Make("sb_aaaaaaaaaaaaaaaa", 65535, kNow + kHour));
  EXPECT_TRUE(Make("sb_aaaaaaaaaaaaaaaa", 1, kNow + kHour));
}

}  // namespace
}  // namespace asb::store
