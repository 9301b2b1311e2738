// A server with more than one isolation backend (isolation/backend_set.h): a create names one or
// gets the default, every later operation goes to the backend the sandbox's record names, a
// restart adopts each sandbox from its own backend, and a record of a backend the server no
// longer runs stays visible as an error instead of being lost. Over two FakeBackends.
#include <gtest/gtest.h>

#include "core/manager_test_fixture.h"

namespace asb::core {
namespace {

class BackendsTest : public ManagerTest {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    vm_ = std::make_unique<testing::FakeBackend>(SandboxdPath(),
                                                 testing::FakeBackendOptions{.name = "fakevm"});
    UseBackends(/*with_vm=*/true);
  }
  void TearDown() override {
    ManagerTest::TearDown();
    vm_.reset();
  }

  /// The next manager runs over backend_ ("fake", the default) and, with `with_vm`, vm_;
  /// without it "fakevm" is listed as unavailable.
  void UseBackends(bool with_vm) {
    manager_.reset();
    backends_ = std::make_unique<isolation::BackendSet>();
    backends_->AddUnowned(*backend_);
    if (with_vm) {
      backends_->AddUnowned(*vm_);
    } else {
      backends_->AddUnavailable("fakevm", Error::Unavailable("no guest kernel"));
    }
    NewManager();
  }

  SandboxInfo CreateOn(const std::string& backend) {
    CreateRequest req;
    req.backend = backend;
    return MustCreate("alice", req);
  }

  std::unique_ptr<testing::FakeBackend> vm_;
};

TEST(BackendSetTest, FindsByNameAndSaysWhyNot) {
  testing::FakeBackend a("", {.name = "a"}), b("", {.name = "b"}), again("", {.name = "a"});
  isolation::BackendSet set;
  EXPECT_EQ(set.default_backend(), nullptr);
  EXPECT_EQ(set.Find("").error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(set.AddUnowned(a));
  EXPECT_TRUE(set.AddUnowned(b));
  EXPECT_FALSE(set.AddUnowned(again));  // the first of a name stays
  set.AddUnavailable("vm", Error::Unavailable("no guest kernel"));

  EXPECT_EQ(*set.Find(""), &a);
  EXPECT_EQ(*set.Find("a"), &a);
  EXPECT_EQ(*set.Find("b"), &b);
  auto unknown = set.Find("zz");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(unknown.error().message(),
            "backend: unknown backend \"zz\"; this server knows a, b, vm");
  auto vm = set.Find("vm");
  ASSERT_FALSE(vm);
  EXPECT_EQ(vm.error().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(vm.error().message(),
            "the vm backend is not available on this server: no guest kernel");
  EXPECT_EQ(set.SetDefault("vm").error().code(), ErrorCode::kUnavailable);

  ASSERT_TRUE(set.SetDefault("b"));
  EXPECT_EQ(*set.Find(""), &b);
  auto all = set.All();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "b");
  EXPECT_TRUE(all[0].is_default);
  EXPECT_EQ(all[1].name, "a");
  EXPECT_FALSE(all[1].is_default);
  EXPECT_EQ(all[2].name, "vm");
  EXPECT_EQ(all[2].backend, nullptr);
  EXPECT_EQ(set.Running(), (std::vector<isolation::Backend*>{&b, &a}));
  EXPECT_EQ(set.ImageBackend(), nullptr);
}

TEST(BackendSetTest, ImageBackendIsTheFirstThatKeepsImages) {
  testing::FakeBackend plain("", {.name = "plain"});
  testing::FakeBackend images("", {.workspace_images = true, .name = "images"});
  isolation::BackendSet set;
  set.AddUnowned(plain);
  set.AddUnowned(images);
  EXPECT_EQ(set.ImageBackend(), &images);
}

TEST_F(BackendsTest, ACreateRunsOnTheBackendItNames) {
  SandboxInfo on_vm = CreateOn("fakevm");
  EXPECT_EQ(on_vm.backend, "fakevm");
  EXPECT_TRUE(vm_->IsRunning(on_vm.id));
  EXPECT_FALSE(backend_->IsOwned(on_vm.id));
  SandboxInfo plain = CreateOn("");
  EXPECT_EQ(plain.backend, "fake");
  EXPECT_TRUE(backend_->IsRunning(plain.id));
  EXPECT_EQ(StoredState(on_vm.id), "running");
  EXPECT_EQ(store_->GetSandbox(on_vm.id)->backend, "fakevm");

  ASSERT_TRUE(manager_->lifecycle().Pause("alice", on_vm.id));
  EXPECT_TRUE(vm_->IsPaused(on_vm.id));
  ASSERT_TRUE(manager_->lifecycle().Resume("alice", on_vm.id, std::nullopt));
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", on_vm.id));
  EXPECT_EQ(vm_->CountCalls("destroy " + on_vm.id), 1);
  EXPECT_EQ(backend_->CountCalls("destroy " + on_vm.id), 0);
  EXPECT_EQ(backend_->CountCalls("pause " + on_vm.id), 0);
}

TEST_F(BackendsTest, AnUnknownOrUnavailableBackendIsRefusedBeforeAnythingIsMade) {
  CreateRequest req;
  req.backend = "firecracker";
  auto unknown = manager_->lifecycle().Create("alice", req);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("fake, fakevm"), std::string::npos);

  UseBackends(/*with_vm=*/false);
  req.backend = "fakevm";
  auto unavailable = manager_->lifecycle().Create("alice", req);
  ASSERT_FALSE(unavailable);
  EXPECT_EQ(unavailable.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(unavailable.error().message().find("no guest kernel"), std::string::npos);
  EXPECT_TRUE(manager_->lifecycle().List("alice")->empty());
  EXPECT_TRUE(vm_->calls().empty());
  // No quota slot was kept: the limit (3) still admits three.
  for (int i = 0; i < 3; ++i) CreateOn("fake");
}

TEST_F(BackendsTest, BackendsListsEveryOneWithTheDefaultFirst) {
  UseBackends(/*with_vm=*/false);
  auto listed = manager_->lifecycle().Backends();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].name, "fake");
  EXPECT_TRUE(listed[0].is_default);
  EXPECT_TRUE(listed[0].available);
  EXPECT_EQ(listed[1].name, "fakevm");
  EXPECT_FALSE(listed[1].is_default);
  EXPECT_FALSE(listed[1].available);
  EXPECT_EQ(listed[1].reason, "no guest kernel");
  EXPECT_EQ(manager_->lifecycle().BackendName(), "fake");
}

TEST_F(BackendsTest, ARestartAdoptsEachSandboxFromItsOwnBackend) {
  SandboxInfo on_vm = CreateOn("fakevm");
  SandboxInfo plain = CreateOn("fake");
  vm_->AddLeftover("sb_00000000000000aa");  // a VM no record names
  Restart();
  EXPECT_EQ(vm_->CountCalls("adopt " + on_vm.id), 1);
  EXPECT_EQ(backend_->CountCalls("adopt " + on_vm.id), 0);
  EXPECT_EQ(backend_->CountCalls("adopt " + plain.id), 1);
  EXPECT_EQ(StoredState(on_vm.id), "running");
  EXPECT_EQ(StoredState(plain.id), "running");
  EXPECT_FALSE(vm_->IsOwned("sb_00000000000000aa"));
  EXPECT_EQ(backend_->CountCalls("destroy sb_00000000000000aa"), 0);
  EXPECT_FALSE(backend_->IsOwned(on_vm.id));
}

TEST_F(BackendsTest, ASandboxOfABackendNoLongerRunIsKeptAsAnError) {
  SandboxInfo on_vm = CreateOn("fakevm");
  UseBackends(/*with_vm=*/false);
  ASSERT_TRUE(manager_->lifecycle().Recover());
  auto got = manager_->lifecycle().Get("alice", on_vm.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, SandboxState::kError);
  EXPECT_NE(got->error_message.find("fakevm backend"), std::string::npos) << got->error_message;
  EXPECT_EQ(vm_->CountCalls("adopt " + on_vm.id), 0);
  EXPECT_TRUE(vm_->IsRunning(on_vm.id));  // nothing of it was touched
  // It can still be deleted; what its backend left is that backend's next start's to remove.
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", on_vm.id));
  EXPECT_EQ(StoredState(on_vm.id), "destroyed");
}

}  // namespace
}  // namespace asb::core
