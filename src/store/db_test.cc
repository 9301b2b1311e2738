#include "store/db.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>

#include "store/migrations.h"

namespace asb::store {
namespace {

TEST(DbTest, MemoryDatabaseRunsStatementsAndBindsParameters) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db) << db.error().ToString();
  ASSERT_TRUE(db->Exec("CREATE TABLE t (a INTEGER, b TEXT, c REAL)"));
  auto ins = db->Prepare("INSERT INTO t VALUES (?, ?, ?)");
  ASSERT_TRUE(ins);
  std::string with_nul("x\0y", 3);
  ins->Bind(1, int64_t{42}).Bind(2, std::string_view(with_nul)).Bind(3, 0.5);
  ASSERT_TRUE(ins->Run());
  EXPECT_EQ(db->Changes(), 1);

  auto sel = db->Prepare("SELECT a, b, c FROM t");
  ASSERT_TRUE(sel);
  auto row = sel->Step();
  ASSERT_TRUE(row && *row);
  EXPECT_EQ(sel->ColumnInt(0), 42);
  EXPECT_EQ(sel->ColumnText(1), with_nul);  // bytes kept, NUL included
  EXPECT_DOUBLE_EQ(sel->ColumnDouble(2), 0.5);
  row = sel->Step();
  ASSERT_TRUE(row);
  EXPECT_FALSE(*row);
  EXPECT_EQ(*db->JournalMode(), "memory");

  // An empty string_view (even with a null data pointer) is the empty string, not NULL.
  auto empty = db->Prepare("SELECT ? IS NULL, length(?)");
  ASSERT_TRUE(empty);
  empty->Bind(1, std::string_view()).Bind(2, std::string_view());
  ASSERT_TRUE(*empty->Step());
  EXPECT_EQ(empty->ColumnInt(0), 0);
  EXPECT_EQ(empty->ColumnInt(1), 0);
}

TEST(DbTest, ErrorsCarryCodeAndContext) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db);
  auto bad = db->Prepare("SELEC nonsense");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kInternal);
  EXPECT_NE(bad.error().detail().find("SELEC nonsense"), std::string::npos);  // the operator's
  EXPECT_EQ(bad.error().message().find("SELEC"), std::string::npos) << bad.error().message();

  ASSERT_TRUE(db->Exec("CREATE TABLE u (k TEXT PRIMARY KEY)"));
  auto ins = db->Prepare("INSERT INTO u VALUES (?)");
  ASSERT_TRUE(ins);
  ins->Bind(1, "a");
  ASSERT_TRUE(ins->Run());
  ins->Reset();
  auto dup = ins->Run();
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code(), ErrorCode::kConflict) << dup.error().ToString();

  auto bind_past_end = db->Prepare("SELECT ?");
  ASSERT_TRUE(bind_past_end);
  bind_past_end->Bind(5, int64_t{1});
  EXPECT_FALSE(bind_past_end->Step());
}

TEST(DbTest, TransactionRollsBackUnlessCommitted) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->Exec("CREATE TABLE t (a INTEGER)"));
  {
    auto tx = Transaction::Begin(*db);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1)"));
  }  // rolled back
  {
    auto tx = Transaction::Begin(*db);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (2)"));
    ASSERT_TRUE(tx->Commit());
  }
  auto s = db->Prepare("SELECT group_concat(a) FROM t");
  ASSERT_TRUE(s && *s->Step());
  EXPECT_EQ(s->ColumnText(0), "2");
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/asb_store_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(MigrationsTest, AppliesInOrderOnceAndIsIdempotent) {
  TempDir dir;
  const std::string path = dir.path() + "/m.db";
  std::array<std::string_view, 2> two = {"CREATE TABLE a (x INTEGER)",
                                         "ALTER TABLE a ADD COLUMN y TEXT"};
  {
    auto db = Db::Open(path);
    ASSERT_TRUE(db) << db.error().ToString();
    EXPECT_EQ(*db->JournalMode(), "wal");
    EXPECT_EQ(*SchemaVersion(*db), 0);
    auto v = ApplyMigrations(*db, std::span(two).first(1), 1);
    ASSERT_TRUE(v) << v.error().ToString();
    EXPECT_EQ(*v, 1);
  }
  auto db = Db::Open(path);
  ASSERT_TRUE(db);
  auto v = ApplyMigrations(*db, two, 2);
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(*v, 2);
  v = ApplyMigrations(*db, two, 3);  // nothing left: running again is harmless
  ASSERT_TRUE(v) << v.error().ToString();
  EXPECT_EQ(*v, 2);
  ASSERT_TRUE(db->Exec("INSERT INTO a(x, y) VALUES (1, 'z')"));
  auto s = db->Prepare("SELECT COUNT(*) FROM schema_migrations");
  ASSERT_TRUE(s && *s->Step());
  EXPECT_EQ(s->ColumnInt(0), 2);

  // A program that knows fewer migrations than the database has refuses it.
  auto older = ApplyMigrations(*db, std::span(two).first(1), 4);
  ASSERT_FALSE(older);
  EXPECT_EQ(older.error().code(), ErrorCode::kConflict);
}

TEST(MigrationsTest, FailedMigrationLeavesPreviousVersion) {
  auto db = Db::Open(":memory:");
  ASSERT_TRUE(db);
  std::array<std::string_view, 2> migs = {
      "CREATE TABLE a (x INTEGER)",
      "CREATE TABLE b (x INTEGER); INSERT INTO nonexistent VALUES (1)"};
  auto v = ApplyMigrations(*db, migs, 1);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("migration 2"), std::string::npos) << v.error().message();
  EXPECT_EQ(*SchemaVersion(*db), 1);
  // Table b was created inside the failed transaction and must be gone.
  EXPECT_FALSE(db->Prepare("SELECT * FROM b"));
}

}  // namespace
}  // namespace asb::store
