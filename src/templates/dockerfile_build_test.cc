// BuildFromDockerfile end to end over the real base template (root; skips without it): every
// supported instruction, an unsupported one, and a failing RUN that keeps the old template.
#include "templates/dockerfile_build.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/template_install.h"
#include "templates/test_tar.h"

namespace asb::templates {
namespace {

namespace fs = std::filesystem;

std::string BaseDir() {
  const char* d = std::getenv("AGENT_SANDBOX_DATA_DIR");
  return std::string(d ? d : "/var/lib/agent-sandbox") + "/templates/base";
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DockerfileBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    if (!fs::exists(BaseDir() + "/rootfs/bin/sh")) GTEST_SKIP() << "no base template";
    char tmpl[] = "/var/tmp/asb-dockerfile-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    templates_ = dir_ + "/templates";
    ctx_ = dir_ + "/ctx";
    fs::create_directories(templates_);
    fs::create_directories(ctx_ + "/tree/sub");
    // The installed base, seen through a symlink (read only: FROM copies it).
    fs::create_directory_symlink(BaseDir(), templates_ + "/base");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  Result<core::TemplateManifest> Build(const std::string& dockerfile, const std::string& name) {
    std::ofstream(ctx_ + "/Dockerfile") << dockerfile;
    DockerfileBuildOptions o;
    o.dockerfile = ctx_ + "/Dockerfile";
    o.name = name;
    o.templates_dir = templates_;
    o.progress = [this](const std::string& l) { progress_ += l + "\n"; };
    o.resources = resources_;
    return BuildFromDockerfile(o);
  }

  // ctx/mini.tar: a rootfs archive of dash and its libraries from the base template, made
  // here with tar, for cheap FROM scratch builds (no copy of base).
  void MakeMiniTar() {
    const std::string cmd =
        "set -e; R=" + BaseDir() +
        "/rootfs; cd $R; "
        "libs=$(ldd usr/bin/dash | grep -o '/[^ ]*' | sed 's|^/||'); "
        "real=$(for l in $libs; do chroot $R realpath /$l | sed 's|^/||'; done); "
        "dirs=$(dirname $real | sort -u); "
        "tar --no-recursion -cf " +
        ctx_ +
        "/mini.tar usr usr/bin usr/lib usr/lib64 $dirs bin lib lib64 "
        "usr/bin/dash usr/bin/sh $real $libs";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  std::string dir_, templates_, ctx_, progress_;
  core::SandboxResources resources_ = core::DefaultResources(core::Limits::Defaults());
};

TEST_F(DockerfileBuildTest, EverySupportedInstruction) {
  std::ofstream(ctx_ + "/hello.txt") << "hello from the context\n";
  std::ofstream(ctx_ + "/tree/sub/deep.txt") << "deep\n";
  testing::WriteTar(ctx_ + "/extra.tar.gz",
                    {{"opt/", testing::TarEntry::kDir, "", 0755},
                     {"opt/tool", testing::TarEntry::kFile, "#!/bin/sh\necho tool-ran\n", 0755}},
                    testing::TarFilter::kGzip);
  auto m = Build(
      "# syntax=docker/dockerfile:1\n"
      "FROM base\n"
      "ARG GREETING=hi\n"
      "ENV APP_HOME=/srv/app \\\n"
      "    MODE=\"test mode\"\n"
      "RUN mkdir -p $APP_HOME && echo \"$GREETING $MODE\" > $APP_HOME/run.txt && id -u > /uid0\n"
      "COPY hello.txt ${APP_HOME}/\n"
      "COPY tree /srv/tree\n"
      "ADD extra.tar.gz /\n"
      "WORKDIR $APP_HOME\n"
      "RUN [\"/bin/sh\", \"-c\", \"pwd > where && /opt/tool > tool.out\"]\n"
      "USER sandbox\n"
      "RUN id -u > /tmp/uid-sandbox && cp /tmp/uid-sandbox /srv/app/uid1000 || true\n"
      "USER root\n"
      "RUN chown sandbox:sandbox /srv/app\n"
      "USER sandbox\n"
      "RUN id -un > owned-by-sandbox\n"
      "LABEL template.displayName=\"Dockerfile test\" template.tools=\"sh, tool\" "
      "template.description=\"built by a test\" other=x\n",
      "dftest");
  ASSERT_TRUE(m) << m.error().message() << "\n" << progress_;
  EXPECT_EQ(m->name, "dftest");
  EXPECT_EQ(m->source, "dockerfile");
  EXPECT_EQ(m->base, "base");
  EXPECT_EQ(m->display_name, "Dockerfile test");
  EXPECT_EQ(m->description, "built by a test");
  EXPECT_EQ(m->tools, (std::vector<std::string>{"sh", "tool"}));
  EXPECT_EQ(m->labels.at("other"), "x");
  EXPECT_EQ(m->env.at("APP_HOME"), "/srv/app");
  EXPECT_EQ(m->env.at("MODE"), "test mode");
  EXPECT_EQ(m->env.count("GREETING"), 0u);  // ARG is not kept
  EXPECT_EQ(m->workdir, "/srv/app");
  EXPECT_EQ(m->user, "sandbox");
  const std::string r = templates_ + "/dftest/rootfs";
  EXPECT_EQ(Slurp(r + "/srv/app/run.txt"), "hi test mode\n");
  EXPECT_EQ(Slurp(r + "/uid0"), "0\n");
  EXPECT_EQ(Slurp(r + "/srv/app/hello.txt"), "hello from the context\n");
  EXPECT_EQ(Slurp(r + "/srv/tree/sub/deep.txt"), "deep\n");
  EXPECT_EQ(Slurp(r + "/srv/app/where"), "/srv/app\n");
  EXPECT_EQ(Slurp(r + "/srv/app/tool.out"), "tool-ran\n");
  EXPECT_EQ(Slurp(r + "/srv/app/owned-by-sandbox"), "sandbox\n");
  struct stat st;
  ASSERT_EQ(::stat((r + "/srv/app/owned-by-sandbox").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  ASSERT_EQ(::stat((r + "/srv/app/hello.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // COPY without --chown: root
  // Finished for sandboxes: resolv.conf emptied again after the RUN steps used the host's.
  EXPECT_EQ(Slurp(r + "/etc/resolv.conf"), "");
  EXPECT_NE(progress_.find("Step 2/"), std::string::npos);
}

TEST_F(DockerfileBuildTest, UnsupportedInstructionNamesItself) {
  auto m = Build("FROM base\nRUN true\nENTRYPOINT [\"/bin/sh\"]\n", "dfbad");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().message().find("line 3: ENTRYPOINT is not supported"), std::string::npos)
      << m.error().message();
  EXPECT_FALSE(fs::exists(templates_ + "/dfbad"));
}

// FROM scratch + ADD of a rootfs archive (dash and its libraries from the base template, made
// here with tar): cheap builds, so a failing rebuild costs no copy of base.
TEST_F(DockerfileBuildTest, ScratchBuildsAndAFailedRunKeepsThePreviousTemplate) {
  MakeMiniTar();
  auto first = Build(
      "FROM scratch\nADD mini.tar /\nRUN echo v1 > /version\n"
      "LABEL template.displayName=one template.name=ignored-when-named\n",
      "dfkeep");
  ASSERT_TRUE(first) << first.error().message() << "\n" << progress_;
  EXPECT_EQ(first->base, "scratch");
  EXPECT_EQ(first->display_name, "one");
  const std::string stamp = core::InstalledStamp(core::TemplateLayout(templates_), "dfkeep");
  ASSERT_FALSE(stamp.empty());
  EXPECT_EQ(Slurp(templates_ + "/dfkeep/rootfs/version"), "v1\n");
  // FinishRootfs added the sandbox user to the image's (missing) passwd.
  EXPECT_NE(Slurp(templates_ + "/dfkeep/rootfs/etc/passwd").find("sandbox:x:1000:1000"),
            std::string::npos);

  auto second =
      Build("FROM scratch\nADD mini.tar /\nRUN echo v2 > /version\nRUN exit 7\n", "dfkeep");
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message().find("line 4: RUN exit 7: exit status 7"), std::string::npos)
      << second.error().message();
  EXPECT_EQ(Slurp(templates_ + "/dfkeep/rootfs/version"), "v1\n");
  EXPECT_EQ(core::InstalledStamp(core::TemplateLayout(templates_), "dfkeep"), stamp);
  for (const auto& e : fs::directory_iterator(templates_)) {
    EXPECT_EQ(e.path().filename().string().rfind(".build-", 0), std::string::npos) << e.path();
  }
  // Without a /bin/sh the result is refused; an unknown FROM is a clear error.
  std::ofstream(ctx_ + "/only.txt") << "x";
  auto no_shell = Build("FROM scratch\nCOPY only.txt /\n", "dfkeep");
  ASSERT_FALSE(no_shell);
  EXPECT_NE(no_shell.error().message().find("/bin/sh"), std::string::npos);
  auto unknown = Build("FROM nosuchtemplate\n", "dfkeep");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Slurp(templates_ + "/dfkeep/rootfs/version"), "v1\n");
  // The label names the template when --name is not given.
  auto named = Build("FROM scratch\nADD mini.tar /\nLABEL template.name=bylabel\n", "");
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_TRUE(fs::exists(templates_ + "/bylabel/rootfs/bin/sh"));
}

// RUN steps are contained as sandbox commands are (ADR 0017): no_new_privs and the seccomp
// filter, and the pids limit of the build's resources stops a fork bomb (dash's subshells),
// which fails its step and installs nothing.
TEST_F(DockerfileBuildTest, RunStepsAreContainedLikeSandboxCommands) {
  MakeMiniTar();
  resources_.pids_limit = 16;
  auto ok = Build(
      "FROM scratch\nADD mini.tar /\n"
      "RUN while read -r k v; do case $k in NoNewPrivs:|Seccomp:) echo \"$k $v\";; esac; "
      "done < /proc/self/status > /contain.txt\n",
      "dfcontain");
  ASSERT_TRUE(ok) << ok.error().message() << "\n" << progress_;
  EXPECT_EQ(Slurp(templates_ + "/dfcontain/rootfs/contain.txt"), "NoNewPrivs: 1\nSeccomp: 2\n");

  const auto start = std::chrono::steady_clock::now();
  auto bomb = Build(
      "FROM scratch\nADD mini.tar /\nRUN while :; do ( while :; do :; done ) & done\n", "dfbomb");
  ASSERT_FALSE(bomb);
  EXPECT_NE(bomb.error().message().find("line 3: RUN while"), std::string::npos)
      << bomb.error().message();
  EXPECT_NE(bomb.error().message().find("exit status"), std::string::npos)
      << bomb.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_FALSE(fs::exists(templates_ + "/dfbomb"));
}

}  // namespace
}  // namespace asb::templates
