// A template's WORKDIR and USER as its sandboxes' command defaults (core/template_defaults.h):
// the mapping rules, the manager recording them at create (and keeping them across a restart
// and a fork), and exec/process requests built from them. The exec tests run a real sandboxd
// on the host (FakeBackend, --no-pid1): root only, skipped when sandboxd has not been built.
#include "core/template_defaults.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/exec_request.h"
#include "core/manager_test_fixture.h"
#include "core/sandbox_manager.h"
#include "core/sandbox_record.h"

namespace asb::core {
namespace {

TEST(TemplateDefaultsTest, UsersMapOntoTheTwoUsersSandboxesHave) {
  for (const char* u : {"", "sandbox", "1000", "sandbox:sandbox", "1000:1000"}) {
    auto r = ResolveTemplateUser(u);
    ASSERT_TRUE(r) << u << ": " << r.error().ToString();
    EXPECT_EQ(*r, "sandbox") << u;
  }
  for (const char* u : {"root", "0", "root:root", "0:0"}) {
    auto r = ResolveTemplateUser(u);
    ASSERT_TRUE(r) << u << ": " << r.error().ToString();
    EXPECT_EQ(*r, "root") << u;
  }
  for (const char* u : {"app", "nobody", "1001", "999", "sandbox:root", "0:1000", "root:0:0",
                        " root", "ROOT", "1000:", ":1000", "00"}) {
    auto r = ResolveTemplateUser(u);
    ASSERT_FALSE(r) << u;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find("user '" + std::string(u) + "' is not supported"),
              std::string::npos)
        << r.error().message();
  }
}

TEST(TemplateDefaultsTest, WorkdirsMustBeAbsoluteAndAreCleaned) {
  EXPECT_EQ(*ResolveTemplateWorkdir(""), "/workspace");
  EXPECT_EQ(*ResolveTemplateWorkdir("/"), "/");
  EXPECT_EQ(*ResolveTemplateWorkdir("/srv//app/./"), "/srv/app");
  EXPECT_EQ(*ResolveTemplateWorkdir("/srv/x/../app"), "/srv/app");
  EXPECT_EQ(ResolveTemplateWorkdir("app").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ResolveTemplateWorkdir("/..").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ResolveTemplateWorkdir(std::string("/a\0b", 4)).error().code(),
            ErrorCode::kInvalidArgument);
  // The path length limit (NormalizeWorkdir's 4096 bytes) at the boundary.
  const std::string at_limit = "/" + std::string(4095, 'a');
  EXPECT_TRUE(ResolveTemplateWorkdir(at_limit));
  EXPECT_EQ(ResolveTemplateWorkdir(at_limit + "a").error().code(), ErrorCode::kInvalidArgument);
}

TEST(TemplateDefaultsTest, ManifestErrorsNameTheTemplate) {
  TemplateManifest m;
  m.name = "web";
  m.user = "www-data";
  auto r = ResolveTemplateDefaults(m);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("template 'web': user 'www-data'"), std::string::npos)
      << r.error().message();
  m.user = "0";
  m.workdir = "srv";
  r = ResolveTemplateDefaults(m);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("template 'web': workdir 'srv' must be absolute"),
            std::string::npos)
      << r.error().message();
  m.workdir = "/srv/";
  r = ResolveTemplateDefaults(m);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->workdir, "/srv");
  EXPECT_EQ(r->user, "root");
}

TEST(TemplateDefaultsTest, ExecRequestsTakeTheDefaultsUnlessTheyNameTheirOwn) {
  const Limits lim;
  const CommandDefaults d{"/srv/app", "root"};
  ExecOptions o;
  o.command = "pwd";
  auto r = BuildExecRequest(lim, o, d);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->cwd, "/srv/app");
  EXPECT_EQ(r->user, "root");
  o.workdir = "/tmp";
  o.user = "sandbox";
  r = BuildExecRequest(lim, o, d);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->cwd, "/tmp");
  EXPECT_EQ(r->user, "sandbox");
  // A relative workdir keeps its meaning: under /workspace, whatever the default.
  o.workdir = "src";
  r = BuildExecRequest(lim, o, d);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->cwd, "/workspace/src");
  o.user = "nobody";
  EXPECT_EQ(BuildExecRequest(lim, o, d).error().code(), ErrorCode::kInvalidArgument);
  // Without a template default: /workspace and sandbox, as before.
  o = {};
  o.command = "pwd";
  r = BuildExecRequest(lim, o, CommandDefaults{});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->cwd, "/workspace");
  EXPECT_EQ(r->user, "sandbox");
}

// ADR 0016: the cap applies to each stream, so a stdout flood cannot crowd out stderr.
TEST(TemplateDefaultsTest, ExecOutputCapAppliesToEachStreamSeparately) {
  Limits lim;
  lim.max_exec_output_bytes = 1000;
  ExecOptions o;
  o.command = "true";
  auto r = BuildExecRequest(lim, o, CommandDefaults{});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->max_stdout_bytes, 1000u);
  EXPECT_EQ(r->max_stderr_bytes, 1000u);
  EXPECT_EQ(r->max_output_bytes, 0u) << "no shared cap across the two streams";
  o.max_output_bytes = 100;
  r = BuildExecRequest(lim, o, CommandDefaults{});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->max_stdout_bytes, 100u);
  EXPECT_EQ(r->max_stderr_bytes, 100u);
  EXPECT_EQ(r->max_output_bytes, 0u);
  o.max_output_bytes = 5000;  // above the limit: clamped
  r = BuildExecRequest(lim, o, CommandDefaults{});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->max_stdout_bytes, 1000u);
}

// ADR 0016: a streamed exec is flow controlled, so it carries everything by default; a
// cap on a stream is opt-in and honoured as given, even above the collected form's maximum.
TEST(TemplateDefaultsTest, StreamedExecIsUncappedUnlessAsked) {
  Limits lim;
  lim.max_exec_output_bytes = 1000;
  ExecOptions o;
  o.command = "true";
  auto r = BuildExecRequest(lim, o, CommandDefaults{}, ExecDelivery::kStreamed);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->max_stdout_bytes, 0u) << "0 = no cap";
  EXPECT_EQ(r->max_stderr_bytes, 0u);
  EXPECT_EQ(r->max_output_bytes, 0u);
  o.max_output_bytes = 5000;
  r = BuildExecRequest(lim, o, CommandDefaults{}, ExecDelivery::kStreamed);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->max_stdout_bytes, 5000u);
  EXPECT_EQ(r->max_stderr_bytes, 5000u);
  o.max_output_bytes = 0;
  EXPECT_EQ(BuildExecRequest(lim, o, CommandDefaults{}, ExecDelivery::kStreamed).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST(TemplateDefaultsTest, RecordsWithoutDefaultsKeepTheOldOnes) {
  SandboxInfo info;
  DecodeSpecJson(R"({"cpus":1,"env":{}})", &info);
  EXPECT_EQ(info.default_workdir, "/workspace");
  EXPECT_EQ(info.default_user, "sandbox");
  info.default_workdir = "/srv/app";
  info.default_user = "root";
  SandboxInfo back;
  DecodeSpecJson(EncodeSpecJson(info), &back);
  EXPECT_EQ(back.default_workdir, "/srv/app");
  EXPECT_EQ(back.default_user, "root");
}

class TemplateDefaultsManagerTest : public ManagerTest {
 protected:
  void WriteTemplate(const std::string& name, const std::string& workdir, const std::string& user) {
    const std::string d = dir_ + "/templates/" + name;
    std::filesystem::create_directories(d + "/rootfs");
    TemplateManifest m;
    m.name = name;
    m.workdir = workdir;
    m.user = user;
    std::ofstream(d + "/manifest.json") << ManifestToJson(m);
  }

  SandboxInfo CreateFrom(const std::string& tmpl) {
    CreateRequest req;
    req.template_name = tmpl;
    return MustCreate("alice", req);
  }

  /// Runs `command` to completion with `workdir`/`user` ("" = the sandbox's defaults).
  std::string Run(const std::string& id, const std::string& workdir, const std::string& user) {
    ExecOptions o;
    o.command = "pwd; id -u";
    o.workdir = workdir;
    o.user = user;
    auto r = manager_->exec().Exec("alice", id, o);
    if (!r) return "(error: " + r.error().message() + ")";
    return r->stdout_data + r->stderr_data;
  }

  /// Starts `pwd; id -u` as a background process (on a PTY when `pty`) with the sandbox's
  /// defaults and returns its output once it exited.
  std::string RunProcess(const std::string& id, bool pty) {
    ProcessOptions o;
    o.command = "pwd; id -u";
    o.pty = pty;
    auto p = manager_->processes().StartProcess("alice", id, o);
    if (!p) return "(error: " + p.error().message() + ")";
    auto a = manager_->processes().AttachProcess("alice", id, p->pid, 4096, false);
    if (!a) return "(error: " + a.error().message() + ")";
    std::string out;
    for (;;) {
      auto ev = a->events->Next(20'000);
      if (!ev) return "(error: " + ev.error().message() + ")";
      if (ev->kind == StreamEvent::Kind::kOutput) out += ev->data;
      if (ev->terminal()) break;
    }
    std::erase(out, '\r');  // a PTY's line discipline writes \r\n
    return out;
  }

  bool SkipWithoutSandboxd(const SandboxInfo& sb) {
    if (::geteuid() != 0) return true;
    auto adopted = backend_->Adopt(sb.id);
    return !adopted || (*adopted)->connection() == nullptr;
  }
};

TEST_F(TemplateDefaultsManagerTest, CreateRecordsTheTemplatesDefaultsAndARestartKeepsThem) {
  WriteTemplate("app", "/srv//app/", "0");
  const SandboxInfo sb = CreateFrom("app");
  EXPECT_EQ(sb.default_workdir, "/srv/app");
  EXPECT_EQ(sb.default_user, "root");
  // Without a manifest (the fixture's base) nothing changes.
  const SandboxInfo plain = MustCreate("alice");
  EXPECT_EQ(plain.default_workdir, "/workspace");
  EXPECT_EQ(plain.default_user, "sandbox");

  // The store keeps them: a rebuilt template does not change a running sandbox's defaults.
  WriteTemplate("app", "/other", "sandbox");
  Restart();
  auto got = manager_->lifecycle().Get("alice", sb.id);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->default_workdir, "/srv/app");
  EXPECT_EQ(got->default_user, "root");
  got = manager_->lifecycle().Get("alice", plain.id);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->default_workdir, "/workspace");
  EXPECT_EQ(got->default_user, "sandbox");
}

TEST_F(TemplateDefaultsManagerTest, ATemplateUserSandboxesCannotHaveFailsTheCreate) {
  WriteTemplate("web", "/var/www", "www-data");
  CreateRequest req;
  req.template_name = "web";
  auto r = manager_->lifecycle().Create("alice", req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("template 'web': user 'www-data' is not supported"),
            std::string::npos)
      << r.error().message();
  // Refused before anything was reserved or recorded.
  EXPECT_TRUE(backend_->calls().empty());
  auto all = manager_->lifecycle().List(kAnyOwner);
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->empty());
}

TEST_F(TemplateDefaultsManagerTest, ExecProcessesAndPtysFollowTheDefaultsUnlessTheyNameTheirOwn) {
  WriteTemplate("app", "/tmp", "root");
  const SandboxInfo sb = CreateFrom("app");
  if (SkipWithoutSandboxd(sb)) GTEST_SKIP() << "needs root and a built sandboxd";
  EXPECT_EQ(Run(sb.id, "", ""), "/tmp\n0\n");
  EXPECT_EQ(Run(sb.id, "/", "sandbox"), "/\n1000\n");
  EXPECT_EQ(Run(sb.id, "", "sandbox"), "/tmp\n1000\n");
  EXPECT_EQ(RunProcess(sb.id, false), "/tmp\n0\n");
  EXPECT_EQ(RunProcess(sb.id, true), "/tmp\n0\n");

  // A sandbox of a template without defaults runs as before (its workspace, uid 1000).
  const SandboxInfo plain = MustCreate("alice");
  ASSERT_FALSE(SkipWithoutSandboxd(plain));
  const std::string out = Run(plain.id, "", "");
  EXPECT_EQ(out.substr(out.find('\n') + 1), "1000\n") << out;
}

TEST_F(TemplateDefaultsManagerTest, AForkKeepsItsSourcesDefaults) {
  WriteTemplate("app", "/tmp", "root");
  const SandboxInfo sb = CreateFrom("app");
  if (SkipWithoutSandboxd(sb)) GTEST_SKIP() << "needs root and a built sandboxd";
  ASSERT_TRUE(manager_->snapshots().RecoverSnapshots());
  auto snap = manager_->snapshots().CreateSnapshot("alice", sb.id, "s");
  ASSERT_TRUE(snap) << snap.error().ToString();
  WriteTemplate("app", "", "sandbox");  // rebuilt meanwhile: the fork still has its source's
  auto fork = manager_->snapshots().Fork("alice", snap->id, {});
  ASSERT_TRUE(fork) << fork.error().ToString();
  EXPECT_EQ(fork->default_workdir, "/tmp");
  EXPECT_EQ(fork->default_user, "root");
  ASSERT_FALSE(SkipWithoutSandboxd(*fork));
  EXPECT_EQ(Run(fork->id, "", ""), "/tmp\n0\n");
}

}  // namespace
}  // namespace asb::core
