// Shared fixture of core/'s manager tests: a temp data dir with two templates, a real SQLite
// file, a FakeBackend (or a set of backends), a FakeClock, and a manager that can be "restarted"
// (destroyed and built again over the same store file and backend) for recovery tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "core/sandbox_manager.h"
#include "core/templates.h"
#include "core/testing/fake_backend.h"
#include "isolation/backend_set.h"
#include "store/store.h"

#ifndef ASB_TEST_SANDBOXD_PATH
#define ASB_TEST_SANDBOXD_PATH ""
#endif

namespace asb::core {

class ManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/asb_core_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/templates/base/rootfs");
    std::filesystem::create_directories(dir_ + "/templates/python/rootfs");
    config_.data_dir = dir_;
    config_.limits.max_sandboxes = 3;
    config_.limits.max_cpus = 2;
    catalog_ = std::make_unique<DirTemplateCatalog>(config_.TemplatesDir());
    backend_ = std::make_unique<testing::FakeBackend>(SandboxdPath());
    OpenStore();
    NewManager();
  }

  void TearDown() override {
    manager_.reset();
    store_.reset();
    backends_.reset();
    backend_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static std::string SandboxdPath() {
    const char* env = ::getenv("ASB_SANDBOXD");
    return env != nullptr ? env : ASB_TEST_SANDBOXD_PATH;
  }

  void OpenStore() {
    auto st = store::Store::Open(config_.DatabasePath(), clock_.NowUnixMs());
    ASSERT_TRUE(st) << st.error().ToString();
    store_ = std::move(*st);
  }

  /// Builds a manager (not started) over the current store, backend and clock.
  void NewManager() {
    manager_.reset();
    ASSERT_TRUE(config_.Validate()) << config_.Validate().error().ToString();
    manager_ =
        backends_
            ? std::make_unique<SandboxManager>(config_, *store_, *backends_, clock_, *catalog_)
            : std::make_unique<SandboxManager>(config_, *store_, *backend_, clock_, *catalog_);
  }

  /// Simulates a restart of the server (SIGKILL: nothing is shut down first): drops the
  /// manager and the store connection, reopens the store file and recovers.
  void Restart() {
    manager_.reset();
    store_.reset();
    OpenStore();
    NewManager();
    auto st = manager_->lifecycle().Recover();
    ASSERT_TRUE(st) << st.error().ToString();
  }

  SandboxInfo MustCreate(const std::string& owner = "alice", CreateRequest req = {}) {
    auto r = manager_->lifecycle().Create(owner, req);
    EXPECT_TRUE(r) << r.error().ToString();
    return r ? *r : SandboxInfo{};
  }

  std::string StoredState(const std::string& id) {
    auto r = store_->GetSandbox(id);
    return r ? r->state : "(missing: " + r.error().message() + ")";
  }

  std::string dir_;
  ManagerConfig config_;
  FakeClock clock_;
  std::unique_ptr<DirTemplateCatalog> catalog_;
  std::unique_ptr<testing::FakeBackend> backend_;
  /// When set, managers run over these backends instead of backend_ alone.
  std::unique_ptr<isolation::BackendSet> backends_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<SandboxManager> manager_;
};

}  // namespace asb::core
