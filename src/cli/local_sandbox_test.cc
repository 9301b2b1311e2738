// The resources of `agent-sandbox run` are checked exactly as the API's create requests
// (ADR 0017): for each limited field, the value at the limit passes and one past it fails,
// with the same code and message as SandboxLifecycle::Create gives the API for the same request.
#include "cli/local_sandbox.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>

#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/templates.h"
#include "core/testing/fake_backend.h"
#include "store/store.h"

namespace asb::cli {
namespace {

class LocalResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_local_resources_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/templates/base/rootfs");
    config_.data_dir = dir_;  // the server's limits: core::Limits::Defaults()
    catalog_ = std::make_unique<core::DirTemplateCatalog>(config_.TemplatesDir());
    auto st = store::Store::Open(config_.DatabasePath(), clock_.NowUnixMs());
    ASSERT_TRUE(st) << st.error().ToString();
    store_ = std::move(*st);
    manager_ =
        std::make_unique<core::SandboxManager>(config_, *store_, backend_, clock_, *catalog_);
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // The same values through the API's path (the manager) and through run's; both must agree.
  void ExpectSameVerdict(const ResourceFlags& flags, bool ok) {
    core::CreateRequest req;
    req.cpus = flags.cpus;
    req.memory_mb = flags.memory_mb;
    req.pids_limit = flags.pids_limit;
    req.workspace_mb = flags.workspace_mb;
    auto api = manager_->lifecycle().Create("alice", req);
    auto run = LocalResources({}, flags);
    ASSERT_EQ(static_cast<bool>(api), ok) << (api ? "" : api.error().message());
    ASSERT_EQ(static_cast<bool>(run), ok) << (run ? "" : run.error().message());
    if (ok) {
      EXPECT_EQ(run->cpus, api->cpus);
      EXPECT_EQ(run->memory_mb, api->memory_mb);
      EXPECT_EQ(run->pids_limit, api->pids_limit);
      EXPECT_EQ(run->workspace_mb, api->workspace_mb);
      EXPECT_EQ(run->tmp_size_mb, api->tmp_size_mb);
      ASSERT_TRUE(manager_->lifecycle().Destroy("alice", api->id));
      return;
    }
    EXPECT_EQ(run.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(run.error().code(), api.error().code());
    // The manager adds the operation ("create sandbox: ...") around the same message.
    EXPECT_NE(api.error().message().find(run.error().message()), std::string::npos)
        << api.error().message() << " vs " << run.error().message();
  }

  std::string dir_;
  core::ManagerConfig config_;
  FakeClock clock_;
  core::testing::FakeBackend backend_;
  std::unique_ptr<core::DirTemplateCatalog> catalog_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<core::SandboxManager> manager_;
};

TEST_F(LocalResourcesTest, NoFlagsGiveTheServersDefaults) {
  ExpectSameVerdict({}, true);
  auto r = LocalResources({}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->memory_mb, config_.limits.default_memory_mb);
  EXPECT_EQ(r->pids_limit, config_.limits.default_pids_limit);
  EXPECT_EQ(r->workspace_mb, config_.limits.default_workspace_mb);
  EXPECT_EQ(r->cpus, config_.limits.default_cpus);
}

TEST_F(LocalResourcesTest, MemoryAtTheLimitPassesOneOverFails) {
  const core::Limits& l = config_.limits;
  ExpectSameVerdict({.memory_mb = l.max_memory_mb}, true);
  ExpectSameVerdict({.memory_mb = l.max_memory_mb + 1}, false);
  ExpectSameVerdict({.memory_mb = l.min_memory_mb}, true);
  ExpectSameVerdict({.memory_mb = l.min_memory_mb - 1}, false);
  auto over = LocalResources({}, {.memory_mb = l.max_memory_mb + 1});
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().message(), "memory_mb must be between " + std::to_string(l.min_memory_mb) +
                                        " and " + std::to_string(l.max_memory_mb) + ", got " +
                                        std::to_string(l.max_memory_mb + 1));
}

TEST_F(LocalResourcesTest, PidsAtTheLimitPassesOneOverFails) {
  const core::Limits& l = config_.limits;
  ExpectSameVerdict({.pids_limit = l.max_pids_limit}, true);
  ExpectSameVerdict({.pids_limit = l.max_pids_limit + 1}, false);
  ExpectSameVerdict({.pids_limit = l.min_pids_limit - 1}, false);
}

TEST_F(LocalResourcesTest, WorkspaceAtTheLimitPassesOneOverFails) {
  const core::Limits& l = config_.limits;
  ExpectSameVerdict({.workspace_mb = l.max_workspace_mb}, true);
  ExpectSameVerdict({.workspace_mb = l.max_workspace_mb + 1}, false);
}

TEST_F(LocalResourcesTest, CpusAtTheLimitPassOverAndZeroFail) {
  const core::Limits& l = config_.limits;
  ExpectSameVerdict({.cpus = l.max_cpus}, true);
  ExpectSameVerdict({.cpus = l.max_cpus + 0.5}, false);
  ExpectSameVerdict({.cpus = 0}, false);
}

// A template's default resources stand in for the server's and are brought within the limits,
// as for the API's sandboxes of that template.
TEST_F(LocalResourcesTest, TemplateDefaultsAreClampedToTheLimits) {
  core::TemplateResources t;
  t.memory_mb = config_.limits.max_memory_mb * 2;
  t.workspace_mb = 100;
  auto r = LocalResources(t, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->memory_mb, config_.limits.max_memory_mb);
  EXPECT_EQ(r->workspace_mb, 100);
  auto flagged = LocalResources(t, {.memory_mb = 256});
  ASSERT_TRUE(flagged);
  EXPECT_EQ(flagged->memory_mb, 256);
}

}  // namespace
}  // namespace asb::cli
