// core/template_manifest.h and core/template_install.h on a real temporary directory.
#include "core/template_install.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/template_manifest.h"

namespace asb::core {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Spit(const std::string& path, const std::string& data) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << data;
}

class TemplateInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char buf[] = "/tmp/asb-tmpl-test.XXXXXX";
    ASSERT_NE(mkdtemp(buf), nullptr);
    root_ = buf;
    layout_ = std::make_unique<TemplateLayout>(root_ + "/templates");
  }
  void TearDown() override { (void)RemoveTree(root_); }

  // A minimal "rootfs" with an executable /bin/sh and the files FinishRootfs edits.
  void FakeRootfs(const std::string& r, const std::string& marker) {
    Spit(r + "/bin/sh", "#!fake\n");
    fs::permissions(r + "/bin/sh", fs::perms::owner_all);
    Spit(r + "/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");
    Spit(r + "/etc/group", "root:x:0:\n");
    Spit(r + "/marker", marker);
    Spit(r + "/usr/share/doc/pkg/copyright", "c");
    Spit(r + "/usr/share/doc/pkg/README", "r");
    Spit(r + "/usr/share/doc/pkg/examples/deep/x.conf", "x");
    Spit(r + "/var/lib/apt/lists/deb.debian.org_dists", "l");
  }

  // Builds and installs `name` with rootfs/marker = `marker`.
  Status Build(const std::string& name, const std::string& marker, const std::string& hash) {
    ASB_ASSIGN_OR_RETURN(auto lock, LockTemplate(*layout_, name));
    CleanupTemplateLeftovers(*layout_, name);
    ASB_ASSIGN_OR_RETURN(StagingDir stage, MakeStagingDir(*layout_, name));
    FakeRootfs(stage.rootfs(), marker);
    ASB_TRY(FinishRootfs(stage.rootfs()));
    TemplateManifest m;
    m.display_name = "Name " + marker;
    m.recipe_hash = hash;
    return InstallTemplate(*layout_, name, stage, m);
  }

  int CountEntries() {
    int n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(layout_->dir())) ++n;
    return n;
  }

  std::string root_;
  std::unique_ptr<TemplateLayout> layout_;
};

TEST(TemplateManifestTest, RoundTripsEveryField) {
  TemplateManifest m;
  m.name = "python";
  m.display_name = "Python 3.11";
  m.description = "d \"quoted\"";
  m.version = "2";
  m.base = "debian:bookworm";
  m.source = "toml";
  m.tools = {"python3", "pip"};
  m.packages = {"python3", "python3-pip"};
  m.env = {{"PYTHONUNBUFFERED", "1"}};
  m.labels = {{"template.tools", "python3,pip"}};
  m.resources = {1.5, 1024, 2048};
  m.smoke_test = "python3 -c 'import numpy'";
  m.workdir = "/workspace/src";
  m.user = "sandbox";
  m.created_at = "2026-11-29T12:00:00Z";
  m.size_bytes = 123456789012;
  m.recipe_hash = "abc";
  auto back = ParseManifest(ManifestToJson(m));
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(ManifestToJson(*back), ManifestToJson(m));
  EXPECT_EQ(back->resources.cpus, 1.5);
  EXPECT_EQ(back->resources.memory_mb, 1024);
  EXPECT_EQ(back->resources.workspace_mb, 2048);
  EXPECT_EQ(back->env.at("PYTHONUNBUFFERED"), "1");
  EXPECT_EQ(back->size_bytes, 123456789012);
}

TEST(TemplateManifestTest, ReadsTheOldScriptManifest) {
  auto m = ParseManifest(
      R"({"name":"base","display_name":"Debian 12 base","tools":["bash"],"packages":["bash"],
          "built_at":"2026-11-29T11:52:28Z","size_bytes":292212326,"recipe_hash":"817a"})");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->created_at, "2026-11-29T11:52:28Z");
  EXPECT_EQ(m->display_name, "Debian 12 base");
  EXPECT_EQ(m->tools, std::vector<std::string>{"bash"});
}

TEST(TemplateManifestTest, RejectsBadTypesNamingTheKey) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {"[1]", "not a JSON object"},
      {"{", "not JSON"},
      {R"({"display_name":"x"})", "'name' is required"},
      {R"({"name":"a","tools":"bash"})", "'tools'"},
      {R"({"name":"a","tools":[1]})", "'tools'"},
      {R"({"name":"a","env":{"A":1}})", "'env'"},
      {R"({"name":"a","resources":[]})", "'resources'"},
      {R"({"name":"a","resources":{"memory_mb":1.5}})", "'memory_mb'"},
      {R"({"name":"a","resources":{"cpus":"2"}})", "'cpus'"},
      {R"({"name":"a","size_bytes":-1.0})", "'size_bytes'"},
  };
  for (const auto& c : cases) {
    auto m = ParseManifest(c.json);
    ASSERT_FALSE(m) << c.json;
    EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument) << c.json;
    EXPECT_NE(m.error().message().find(c.want), std::string::npos)
        << c.json << " -> " << m.error().message();
  }
}

TEST_F(TemplateInstallTest, NamesAtTheBoundary) {
  EXPECT_TRUE(ValidateTemplateName(std::string(63, 'a')));
  EXPECT_FALSE(ValidateTemplateName(std::string(64, 'a')));
  EXPECT_TRUE(ValidateTemplateName("py-3_11"));
  EXPECT_TRUE(ValidateTemplateName("0x"));
  for (const char* bad : {"", "-a", "_a", ".a", "A", "a/b", "..", "a b", "a.b"}) {
    EXPECT_FALSE(ValidateTemplateName(bad)) << bad;
  }
  EXPECT_FALSE(LockTemplate(*layout_, "../x"));
}

TEST_F(TemplateInstallTest, InstallsThenReplacesAtomically) {
  EXPECT_EQ(InstalledStamp(*layout_, "t"), "");
  ASSERT_TRUE(Build("t", "one", "h1"));
  EXPECT_EQ(Slurp(layout_->Rootfs("t") + "/marker"), "one");
  EXPECT_EQ(InstalledStamp(*layout_, "t"), "h1");
  auto m = ReadManifest(layout_->Manifest("t"));
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->name, "t");
  EXPECT_EQ(m->display_name, "Name one");
  EXPECT_GT(m->size_bytes, 0);
  EXPECT_EQ(m->created_at.size(), 20u) << m->created_at;

  ASSERT_TRUE(Build("t", "two", "h2"));
  EXPECT_EQ(Slurp(layout_->Rootfs("t") + "/marker"), "two");
  EXPECT_EQ(InstalledStamp(*layout_, "t"), "h2");
  // Only the template and its lock file remain: the old version and the staging dir are gone.
  EXPECT_EQ(CountEntries(), 2);
}

TEST_F(TemplateInstallTest, FinishRootfsAddsTheSandboxUserAndMountPoints) {
  ASSERT_TRUE(Build("t", "one", "h1"));
  const std::string r = layout_->Rootfs("t");
  EXPECT_NE(Slurp(r + "/etc/passwd").find("sandbox:x:1000:1000:sandbox:/workspace:/bin/bash"),
            std::string::npos);
  EXPECT_NE(Slurp(r + "/etc/group").find("sandbox:x:1000:"), std::string::npos);
  EXPECT_EQ(Slurp(r + "/etc/hostname"), "sandbox\n");
  EXPECT_EQ(Slurp(r + "/etc/resolv.conf"), "");
  for (const char* d : {"/workspace", "/tmp", "/proc", "/sys", "/dev", "/run"}) {
    EXPECT_TRUE(fs::is_directory(r + d)) << d;
  }
  EXPECT_EQ(fs::status(r + "/tmp").permissions() & fs::perms::sticky_bit, fs::perms::sticky_bit);
  // E2B's home is the workspace under its own name.
  EXPECT_TRUE(fs::is_symlink(r + "/home/user"));
  EXPECT_EQ(fs::read_symlink(r + "/home/user"), "/workspace");
  // Documentation goes but for copyright files; emptied directories go too; apt lists go.
  EXPECT_TRUE(fs::exists(r + "/usr/share/doc/pkg/copyright"));
  EXPECT_FALSE(fs::exists(r + "/usr/share/doc/pkg/README"));
  EXPECT_FALSE(fs::exists(r + "/usr/share/doc/pkg/examples"));
  EXPECT_FALSE(fs::exists(r + "/var/lib/apt/lists/deb.debian.org_dists"));
  // Idempotent: a second pass does not add the user twice.
  ASSERT_TRUE(FinishRootfs(r));
  std::string passwd = Slurp(r + "/etc/passwd");
  EXPECT_EQ(passwd.find("\nsandbox:"), passwd.rfind("\nsandbox:"));
}

TEST_F(TemplateInstallTest, FinishRootfsRefusesUid1000OfAnotherName) {
  ASSERT_TRUE(LockTemplate(*layout_, "t"));
  auto stage = MakeStagingDir(*layout_, "t");
  ASSERT_TRUE(stage);
  FakeRootfs(stage->rootfs(), "x");
  Spit(stage->rootfs() + "/etc/passwd", "node:x:1000:1000::/home/node:/bin/sh\n");
  auto st = FinishRootfs(stage->rootfs());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kConflict);
  EXPECT_NE(st.error().message().find("'node'"), std::string::npos) << st.error().message();
}

TEST_F(TemplateInstallTest, AFailedBuildKeepsThePreviousTemplate) {
  ASSERT_TRUE(Build("t", "one", "h1"));
  {
    auto lock = LockTemplate(*layout_, "t");
    ASSERT_TRUE(lock);
    auto stage = MakeStagingDir(*layout_, "t");
    ASSERT_TRUE(stage);
    Spit(stage->rootfs() + "/marker", "half");  // no /bin/sh: the builder failed halfway
    TemplateManifest m;
    m.recipe_hash = "h2";
    auto st = InstallTemplate(*layout_, "t", *stage, m);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code(), ErrorCode::kInvalidArgument);
  }  // the staging dir is removed here
  EXPECT_EQ(Slurp(layout_->Rootfs("t") + "/marker"), "one");
  EXPECT_EQ(InstalledStamp(*layout_, "t"), "h1");
  EXPECT_EQ(CountEntries(), 2);
}

TEST_F(TemplateInstallTest, CleanupRemovesLeftoversOfKilledBuilds) {
  ASSERT_TRUE(Build("t", "one", "h1"));
  fs::create_directories(layout_->dir() + "/.build-t.abc123/rootfs/x");
  fs::create_directories(layout_->dir() + "/.retired-t-1/rootfs");
  fs::create_directories(layout_->dir() + "/.build-other.abc123");
  CleanupTemplateLeftovers(*layout_, "t");
  EXPECT_FALSE(fs::exists(layout_->dir() + "/.build-t.abc123"));
  EXPECT_FALSE(fs::exists(layout_->dir() + "/.retired-t-1"));
  EXPECT_TRUE(fs::exists(layout_->dir() + "/.build-other.abc123"));
}

TEST_F(TemplateInstallTest, RemoveTemplate) {
  auto st = RemoveTemplate(*layout_, "nope");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(Build("t", "one", "h1"));
  st = RemoveTemplate(*layout_, "t");
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_FALSE(fs::exists(layout_->Dir("t")));
  EXPECT_EQ(CountEntries(), 2);  // the lock files of t and nope
}

// A bind mount of the rootfs stands in for a running sandbox (needs root).
TEST_F(TemplateInstallTest, InUseTemplateIsRetiredOnReplaceAndNotRemoved) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a bind mount";
  ASSERT_TRUE(Build("t", "one", "h1"));
  const std::string mnt = root_ + "/mnt";
  fs::create_directories(mnt);
  if (mount(layout_->Rootfs("t").c_str(), mnt.c_str(), nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "bind mount failed: " << strerror(errno);
  }
  struct Unmount {
    std::string p;
    ~Unmount() { umount2(p.c_str(), MNT_DETACH); }
  } unmount{mnt};
  EXPECT_TRUE(TreeInUse(layout_->Dir("t")));
  auto st = RemoveTemplate(*layout_, "t");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kConflict);

  ASSERT_TRUE(Build("t", "two", "h2"));
  EXPECT_EQ(Slurp(layout_->Rootfs("t") + "/marker"), "two");
  EXPECT_EQ(Slurp(mnt + "/marker"), "one");  // the "sandbox" still sees its version
  EXPECT_FALSE(TreeInUse(layout_->Dir("t")));
  int retired = 0;
  for (auto& e : fs::directory_iterator(layout_->dir())) {
    if (e.path().filename().string().rfind(".retired-t-", 0) == 0) ++retired;
  }
  EXPECT_EQ(retired, 1);
  umount2(mnt.c_str(), MNT_DETACH);
  CleanupTemplateLeftovers(*layout_, "t");
  EXPECT_EQ(CountEntries(), 2);
}

}  // namespace
}  // namespace asb::core
