// Secrets at rest (ADR 0014, round 3): the box, the spec's sealed env, and the database file
// as a reader of the disk sees it.
#include "store/secret_box.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/sealed_spec.h"
#include "store/snapshot_store.h"
#include "store/store.h"

namespace asb::store {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/asb_secret_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 07777;
  return st.st_mode & 07777;
}

TEST(SecretBoxTest, SealsAndOpensAndRefusesAnotherKeyOrATamperedValue) {
  SecretBox box = SecretBox::FromKey(std::string(32, 'k'));
  const std::string sealed = box.Seal("OPENAI_API_KEY=sk-secret");
  EXPECT_EQ(sealed.rfind(SecretBox::kSealedPrefix, 0), 0u);
  EXPECT_EQ(sealed.find("sk-secret"), std::string::npos);
  EXPECT_NE(sealed, box.Seal("OPENAI_API_KEY=sk-secret"));  // a fresh nonce each time
  EXPECT_EQ(*box.Open(sealed), "OPENAI_API_KEY=sk-secret");
  EXPECT_EQ(*box.Open(box.Seal("")), "");

  SecretBox other = SecretBox::FromKey(std::string(32, 'o'));
  EXPECT_EQ(other.Open(sealed).error().code(), ErrorCode::kInvalidArgument);
  std::string tampered = sealed;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(box.Open(tampered));
  for (const char* junk : {"", "asbx1:", "asbx1:!!!!", "asbx1:AAAA", "plain text"}) {
    EXPECT_FALSE(box.Open(junk)) << junk;
  }
}

TEST(SecretBoxTest, TheKeyFileIsMade0600OnceAndABadOneIsAnError) {
  TempDir dir;
  const std::string path = dir.path() + "/secrets.key";
  auto a = SecretBox::LoadOrCreate(path);
  ASSERT_TRUE(a) << a.error().ToString();
  EXPECT_EQ(ModeOf(path), 0600u);
  auto b = SecretBox::LoadOrCreate(path);  // the same key on the next start
  ASSERT_TRUE(b);
  EXPECT_EQ(*b->Open(a->Seal("x")), "x");

  std::ofstream(path, std::ios::trunc) << "not a key\n";
  auto bad = SecretBox::LoadOrCreate(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("64 hex digits"), std::string::npos);
  // Never through a symlink.
  const std::string link = dir.path() + "/link.key";
  std::filesystem::create_symlink(dir.path() + "/elsewhere", link);
  EXPECT_FALSE(SecretBox::LoadOrCreate(link));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/elsewhere"));
}

TEST(SealedSpecTest, OnlyTheEnvIsSealedAndItComesBackWhole) {
  SecretBox box = SecretBox::FromKey(std::string(32, 'k'));
  const std::string spec = R"({"cpus":1,"env":{"TOKEN":"t0p","A":"1"},"memory_mb":256})";
  EXPECT_TRUE(HasPlainEnv(spec));
  const std::string sealed = SealSpecEnv(box, spec);
  EXPECT_EQ(sealed.find("t0p"), std::string::npos);
  EXPECT_EQ(sealed.find("\"env\""), std::string::npos);
  EXPECT_NE(sealed.find("\"memory_mb\":256"), std::string::npos);
  EXPECT_FALSE(HasPlainEnv(sealed));
  const std::string opened = OpenSpecEnv(box, sealed);
  EXPECT_NE(opened.find(R"("env":{"TOKEN":"t0p","A":"1"})"), std::string::npos) << opened;
  // Nothing to seal, and text that is not a spec, pass as they are.
  for (const char* same : {R"({"cpus":1,"env":{}})", R"({"cpus":1})", "not json", "[1]"}) {
    EXPECT_EQ(SealSpecEnv(box, same), same);
    EXPECT_EQ(OpenSpecEnv(box, same), same);
  }
  // Under another key the env is gone, the rest stays.
  SecretBox other = SecretBox::FromKey(std::string(32, 'o'));
  const std::string lost = OpenSpecEnv(other, sealed);
  EXPECT_EQ(lost.find("env"), std::string::npos) << lost;
  EXPECT_NE(lost.find("\"memory_mb\":256"), std::string::npos);
}

TEST(SealedSpecTest, TheDatabaseFilesAre0600AndHoldNoEnvValue) {
  TempDir dir;
  const std::string db = dir.path() + "/agent-sandbox.db";
  const std::string secret = "sk-live-4f1d9c0e7b";
  {
    auto st = Store::Open(db, 1);
    ASSERT_TRUE(st) << st.error().ToString();
    Store& s = **st;
    // A record written before sealing existed, in plain text.
    SandboxRecord old;
    old.id = "sb_00000000000000aa";
    old.owner = "o";
    old.template_name = "base";
    old.spec_json = R"({"cpus":1,"env":{"OLD":")" + secret + R"("}})";
    old.state = "running";
    old.backend = "ns";
    ASSERT_TRUE(s.InsertSandbox(old));

    s.SetSecretBox(std::make_shared<SecretBox>(SecretBox::FromKey(std::string(32, 'k'))));
    auto n = s.SealPlainSecrets();
    ASSERT_TRUE(n) << n.error().ToString();
    EXPECT_EQ(*n, 1);
    EXPECT_EQ(*s.SealPlainSecrets(), 0);

    SandboxRecord r = old;
    r.id = "sb_00000000000000bb";
    r.spec_json = R"({"cpus":1,"env":{"OPENAI_API_KEY":")" + secret + R"("}})";
    ASSERT_TRUE(s.InsertSandbox(r));
    SnapshotRecord snap;
    snap.id = "snap_0000000000000001";
    snap.owner = "o";
    snap.sandbox_id = r.id;
    snap.template_name = "base";
    snap.spec_json = r.spec_json;
    snap.state = "ready";
    ASSERT_TRUE(InsertSnapshot(s, snap));

    // Read back whole, through every path.
    EXPECT_NE(s.GetSandbox(r.id)->spec_json.find(secret), std::string::npos);
    EXPECT_NE(s.GetSandbox(old.id)->spec_json.find(secret), std::string::npos);
    auto listed = s.ListSandboxes({});
    ASSERT_TRUE(listed);
    for (const SandboxRecord& x : *listed) EXPECT_NE(x.spec_json.find(secret), std::string::npos);
    EXPECT_NE(GetSnapshot(s, snap.id)->spec_json.find(secret), std::string::npos);

    ASSERT_TRUE(s.db().Exec("PRAGMA wal_checkpoint(TRUNCATE)"));
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const std::string f = db + suffix;
      if (std::filesystem::exists(f)) {
        EXPECT_EQ(ModeOf(f), 0600u) << f;
      }
    }
  }
  for (const char* suffix : {"", "-wal"}) {
    const std::string f = db + suffix;
    if (std::filesystem::exists(f)) {
      EXPECT_EQ(Slurp(f).find(secret), std::string::npos) << f << " holds the env value";
    }
  }
}

}  // namespace
}  // namespace asb::store
