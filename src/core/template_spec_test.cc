// template.toml parsing (core/template_spec.h): every rule has a failing case, and the
// bundled templates in the repository parse.
#include "core/template_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/template_install.h"

namespace asb::core {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGood = R"(
name = "py"
display_name = "Python"
description = "d"
version = "3"
tools = ["python3", "pip"]
packages = ["python3-pip", "python3", "python3"]
setup = ["true"]
smoke_test = "python3 -c 'print(1)'"
[env]
PYTHONUNBUFFERED = "1"
[resources]
cpus = 1.5
memory_mb = 1024
disk_mb = 16
)";

TEST(TemplateSpecTest, ParsesEveryField) {
  auto s = ParseTemplateSpec(kGood, "t.toml");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->name, "py");
  EXPECT_EQ(s->display_name, "Python");
  EXPECT_EQ(s->version, "3");
  EXPECT_EQ(s->tools, (std::vector<std::string>{"python3", "pip"}));
  EXPECT_EQ(s->packages, (std::vector<std::string>{"python3", "python3-pip"}));  // sorted, unique
  EXPECT_EQ(s->setup, std::vector<std::string>{"true"});
  EXPECT_EQ(s->env.at("PYTHONUNBUFFERED"), "1");
  EXPECT_EQ(s->resources.cpus, 1.5);
  EXPECT_EQ(s->resources.memory_mb, 1024);
  EXPECT_EQ(s->resources.workspace_mb, 16);
}

TEST(TemplateSpecTest, MinimalSpecGetsDefaults) {
  auto s = ParseTemplateSpec("name = \"x1\"\nsmoke_test = \"true\"\n", "t.toml");
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->display_name, "x1");
  EXPECT_EQ(s->resources.cpus, 0);
  EXPECT_TRUE(s->packages.empty());
}

TEST(TemplateSpecTest, BadSpecsGiveClearErrors) {
  const std::string ok = "name = \"x\"\nsmoke_test = \"true\"\n";
  struct Case {
    std::string text;
    std::string want;  // substring of the message
  } cases[] = {
      {"name = \"x\"\nsmoke_test = \"true\"\nname = \"y\"\n", "t.toml"},  // toml11: duplicate
      {"name = \n", "t.toml"},                                            // syntax error, located
      {"smoke_test = \"true\"\n", "name: is required"},
      {"name = \"X\"\nsmoke_test = \"true\"\n", "invalid template name"},
      {"name = \"x\"\n", "smoke_test: is required"},
      {"name = \"x\"\nsmoke_test = \"\"\n", "smoke_test: is required"},
      {ok + "name2 = 1\n", "unknown key 'name2'"},
      {ok + "version = 2\n", "version must be a string"},
      {ok + "tools = \"bash\"\n", "tools must be an array of strings"},
      {ok + "tools = [1]\n", "tools must be an array of strings"},
      {ok + "tools = [\"\"]\n", "tools: empty string"},
      {ok + "packages = [\"Python3\"]\n", "'Python3' is not a Debian package name"},
      {ok + "packages = [\"a;rm -rf /\"]\n", "is not a Debian package name"},
      {ok + "packages = [\"--force\"]\n", "is not a Debian package name"},
      {ok + "extends = \"x\"\n", "cannot extend itself"},
      {ok + "extends = \"../b\"\n", "not a template name"},
      {ok + "env = \"A=1\"\n", "env must be a table"},
      {ok + "[env]\n\"1A\" = \"x\"\n", "env.1A: not a variable name"},
      {ok + "[env]\nA = 1\n", "env.A must be a string"},
      {ok + "[resources]\ncpus = 0\n", "resources.cpus: must be in (0, 1024]"},
      {ok + "[resources]\ncpus = 1025\n", "resources.cpus: must be in (0, 1024]"},
      {ok + "[resources]\ncpus = \"1\"\n", "resources.cpus must be a number"},
      {ok + "[resources]\nmemory_mb = 15\n", "resources.memory_mb: must be in [16, 1048576]"},
      {ok + "[resources]\nmemory_mb = 1048577\n", "resources.memory_mb"},
      {ok + "[resources]\nmemory_mb = 1.5\n", "resources.memory_mb must be an integer"},
      {ok + "[resources]\ndisk_mb = 15\n", "resources.disk_mb: must be in [16, 16777216]"},
      {ok + "[resources]\ndisk = 100\n", "unknown key resources.disk"},
  };
  for (const auto& c : cases) {
    auto s = ParseTemplateSpec(c.text, "t.toml");
    ASSERT_FALSE(s) << c.text;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find(c.want), std::string::npos)
        << c.text << "\n-> " << s.error().message();
  }
  // Exactly at the limits passes.
  for (const char* at : {"cpus = 1024", "cpus = 0.01", "memory_mb = 16", "memory_mb = 1048576",
                         "disk_mb = 16", "disk_mb = 16777216"}) {
    auto s = ParseTemplateSpec(ok + "[resources]\n" + at + "\n", "t.toml");
    EXPECT_TRUE(s) << at << ": " << s.error().message();
  }
}

class TemplateSpecDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char buf[] = "/tmp/asb-spec-test.XXXXXX";
    ASSERT_NE(mkdtemp(buf), nullptr);
    dir_ = buf;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    fs::create_directories(dir_ + "/" + name);
    std::ofstream(dir_ + "/" + name + "/template.toml") << text;
  }
  std::string dir_;
};

TEST_F(TemplateSpecDirTest, ExtendsMergesParentFirst) {
  Write("base", R"(name = "base"
tools = ["bash"]
packages = ["bash", "coreutils"]
setup = ["echo base"]
smoke_test = "true"
[env]
A = "base"
B = "base"
)");
  Write("py", R"(name = "py"
extends = "base"
tools = ["python3", "bash"]
packages = ["python3"]
setup = ["echo py"]
smoke_test = "python3 -V"
[env]
B = "py"
)");
  auto s = LoadTemplateSpec("py", dir_);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->tools, (std::vector<std::string>{"bash", "python3"}));
  EXPECT_EQ(s->packages, (std::vector<std::string>{"bash", "coreutils", "python3"}));
  EXPECT_EQ(s->setup, (std::vector<std::string>{"echo base", "echo py"}));
  EXPECT_EQ(s->env.at("A"), "base");
  EXPECT_EQ(s->env.at("B"), "py");
  EXPECT_EQ(s->smoke_test, "python3 -V");
  // By path, too.
  auto by_path = LoadTemplateSpec(dir_ + "/py", "/nonexistent");
  ASSERT_TRUE(by_path) << by_path.error().message();
  EXPECT_EQ(TemplateRecipeHash(*by_path, "b1"), TemplateRecipeHash(*s, "b1"));
  EXPECT_NE(TemplateRecipeHash(*s, "b1"), TemplateRecipeHash(*s, "b2"));
  EXPECT_EQ(ListTemplateSpecs(dir_), (std::vector<std::string>{"base", "py"}));

  // The parent's change changes the child's hash.
  std::string before = TemplateRecipeHash(*s, "b1");
  Write("base", "name = \"base\"\npackages = [\"bash\"]\nsmoke_test = \"true\"\n");
  auto s2 = LoadTemplateSpec("py", dir_);
  ASSERT_TRUE(s2);
  EXPECT_NE(TemplateRecipeHash(*s2, "b1"), before);
}

TEST_F(TemplateSpecDirTest, LoadErrors) {
  Write("a", "name = \"a\"\nextends = \"b\"\nsmoke_test = \"true\"\n");
  Write("b", "name = \"b\"\nextends = \"a\"\nsmoke_test = \"true\"\n");
  Write("c", "name = \"c\"\nextends = \"zz\"\nsmoke_test = \"true\"\n");
  Write("d", "name = \"other\"\nsmoke_test = \"true\"\n");
  struct Case {
    std::string arg;
    ErrorCode code;
    std::string want;
  } cases[] = {
      {"a", ErrorCode::kInvalidArgument, "cycle"},
      {"c", ErrorCode::kInvalidArgument, "no template 'zz'"},
      {"d", ErrorCode::kInvalidArgument, "must equal its directory's name 'd'"},
      {"nope", ErrorCode::kNotFound, "available: a, b, c, d"},
      {"Bad!", ErrorCode::kInvalidArgument, "neither a template name nor a path"},
      {dir_ + "/nope", ErrorCode::kNotFound, "no " + dir_ + "/nope"},
  };
  for (const auto& c : cases) {
    auto s = LoadTemplateSpec(c.arg, dir_);
    ASSERT_FALSE(s) << c.arg;
    EXPECT_EQ(s.error().code(), c.code) << c.arg << ": " << s.error().message();
    EXPECT_NE(s.error().message().find(c.want), std::string::npos)
        << c.arg << " -> " << s.error().message();
  }
}

// The templates shipped in the repository are valid, and each names its tools and smoke tests.
TEST(BundledTemplatesTest, AllParseWithSmokeTests) {
  const std::string dir = std::string(ASB_SOURCE_DIR) + "/templates";
  auto names = ListTemplateSpecs(dir);
  EXPECT_EQ(names, (std::vector<std::string>{"base", "go", "node", "python"}));
  for (const auto& n : names) {
    auto s = LoadTemplateSpec(n, dir);
    ASSERT_TRUE(s) << n << ": " << s.error().message();
    EXPECT_FALSE(s->smoke_test.empty()) << n;
    EXPECT_FALSE(s->tools.empty()) << n;
    auto m = ManifestFromSpec(*s, TemplateRecipeHash(*s, "test"));
    EXPECT_EQ(m.source, "toml");
    EXPECT_EQ(m.base, n == "base" ? "debian:bookworm" : "base");
  }
}

}  // namespace
}  // namespace asb::core
