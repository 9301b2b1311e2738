// Lifecycle tests of SandboxManager (create, limits, destroy from every state) over a FakeBackend,
// a FakeClock and a real SQLite file.
#include "core/sandbox_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <future>
#include <regex>
#include <thread>

#include "common/ids.h"
#include "core/manager_test_fixture.h"
#include "core/sandbox_record.h"

namespace asb::core {
namespace {

TEST_F(ManagerTest, CreateWithDefaultsIsRunningWithDefaultTtl) {  // L1
  const int64_t now = clock_.NowUnixMs();
  SandboxInfo info = MustCreate("alice");
  EXPECT_TRUE(std::regex_match(info.id, std::regex("^sb_[0-9a-f]{16}$"))) << info.id;
  EXPECT_EQ(info.state, SandboxState::kRunning);
  EXPECT_EQ(SandboxStateName(info.state), "running");
  EXPECT_FALSE(info.network);
  EXPECT_TRUE(info.read_only_rootfs);
  EXPECT_EQ(info.expires_at_ms, now + 900'000);
  EXPECT_EQ(info.created_at_ms, now);
  EXPECT_EQ(info.template_name, "base");
  EXPECT_EQ(info.cpus, 1.0);
  EXPECT_EQ(info.memory_mb, 512);
  EXPECT_EQ(info.pids_limit, 256);
  EXPECT_EQ(info.workspace_mb, 1024);
  EXPECT_EQ(info.tmp_size_mb, 64);
  EXPECT_EQ(info.backend, "fake");
  EXPECT_EQ(info.owner, "alice");

  // The record was written before and after the backend's create, and the backend got the
  // spec in its own units.
  EXPECT_EQ(StoredState(info.id), "running");
  auto spec = backend_->SpecOf(info.id);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->memory_bytes, 512ull << 20);
  EXPECT_EQ(spec->workspace_bytes, 1024ull << 20);
  EXPECT_EQ(spec->tmp_bytes, 64ull << 20);
  EXPECT_EQ(spec->pids_limit, 256u);
  EXPECT_EQ(spec->rootfs, dir_ + "/templates/base/rootfs");
  EXPECT_FALSE(spec->network);
}

TEST_F(ManagerTest, ValuesAreEchoedListedAndTimeoutExtended) {  // L2
  CreateRequest req;
  req.cpus = 0.5;
  req.memory_mb = 256;
  req.timeout_seconds = 60;
  req.env = {{"A", "1"}, {"EMPTY", ""}};
  req.template_name = "python";
  SandboxInfo info = MustCreate("alice", req);
  backend_->SetCreateHook(nullptr);

  auto got = manager_->lifecycle().Get("alice", info.id);
  ASSERT_TRUE(got) << got.error().ToString();
  EXPECT_EQ(got->cpus, 0.5);
  EXPECT_EQ(got->memory_mb, 256);
  EXPECT_EQ(got->timeout_seconds, 60);
  EXPECT_EQ(got->template_name, "python");
  EXPECT_EQ(got->env, req.env);
  EXPECT_EQ(backend_->SpecOf(info.id)->env, req.env);

  auto list = manager_->lifecycle().List("alice");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, info.id);

  clock_.AdvanceMs(10'000);
  auto extended = manager_->lifecycle().SetTimeout("alice", info.id, 600);
  ASSERT_TRUE(extended) << extended.error().ToString();
  EXPECT_EQ(extended->expires_at_ms, clock_.NowUnixMs() + 600'000);
  EXPECT_EQ(store_->GetSandbox(info.id)->expires_at_ms, extended->expires_at_ms);

  // Above the max it is clamped; below the min it is an error.
  auto clamped = manager_->lifecycle().SetTimeout("alice", info.id, 10'000'000);
  ASSERT_TRUE(clamped);
  EXPECT_EQ(clamped->expires_at_ms, clock_.NowUnixMs() + 86'400'000);
  EXPECT_EQ(manager_->lifecycle().SetTimeout("alice", info.id, 0).error().code(),
            ErrorCode::kInvalidArgument);

  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", info.id));
  auto gone = manager_->lifecycle().Get("alice", info.id);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(manager_->lifecycle().List("alice")->empty());
  EXPECT_EQ(StoredState(info.id), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(info.id));
  EXPECT_EQ(manager_->lifecycle().SetTimeout("alice", info.id, 60).error().code(),
            ErrorCode::kNotFound);
}

TEST_F(ManagerTest, MetadataIsKeptStoredAndBoundedExactlyAtItsLimits) {
  CreateRequest req;
  req.metadata = {{"suite", "e2b"}, {"empty", ""}};
  SandboxInfo info = MustCreate("alice", req);
  EXPECT_EQ(manager_->lifecycle().Get("alice", info.id)->metadata, req.metadata);
  // In the record (spec JSON), so it survives a restart.
  SandboxInfo back;
  DecodeSpecJson(store_->GetSandbox(info.id)->spec_json, &back);
  EXPECT_EQ(back.metadata, req.metadata);

  CreateRequest at;
  for (size_t i = 0; i < kMaxMetadataEntries; ++i) at.metadata["k" + std::to_string(i)] = "v";
  at.metadata["k0"] = std::string(kMaxMetadataValueBytes, 'v');
  at.metadata[std::string(kMaxMetadataKeyBytes, 'k')] = "v";
  at.metadata.erase("k1");  // still exactly kMaxMetadataEntries entries
  ASSERT_EQ(at.metadata.size(), kMaxMetadataEntries);
  ASSERT_TRUE(ValidateMetadata(at.metadata));
  auto fits = manager_->lifecycle().Create("alice", at);
  ASSERT_TRUE(fits) << fits.error().ToString();
  for (auto over : {std::pair<std::string, std::string>{"k1", "v"},
                    {"k0", std::string(kMaxMetadataValueBytes + 1, 'v')},
                    {std::string(kMaxMetadataKeyBytes + 1, 'k'), "v"},
                    {"", "v"},
                    {"nul", std::string("a\0b", 3)}}) {
    CreateRequest bad = at;
    if (over.first == "k1") {
      bad.metadata[over.first] = over.second;  // one entry too many
    } else {
      bad.metadata.erase("k2");
      bad.metadata[over.first] = over.second;
    }
    auto r = manager_->lifecycle().Create("alice", bad);
    ASSERT_FALSE(r) << over.first.substr(0, 8);
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  }
}

TEST_F(ManagerTest, UsageIsReadWithoutCountingAsActivityAndOnlyForTheOwner) {
  CreateRequest req;
  req.memory_mb = 256;
  req.idle_timeout_seconds = 60;
  SandboxInfo info = MustCreate("alice", req);
  const int64_t active_before = manager_->lifecycle().Get("alice", info.id)->last_activity_at_ms;
  clock_.AdvanceMs(5'000);
  auto u = manager_->lifecycle().Usage("alice", info.id);
  ASSERT_TRUE(u) << u.error().ToString();
  EXPECT_EQ(u->memory_limit_bytes, 256ull << 20);
  EXPECT_EQ(u->workspace_limit_bytes, static_cast<uint64_t>(info.workspace_mb) << 20);
  EXPECT_EQ(u->sampled_at_ms, clock_.NowUnixMs());
  EXPECT_EQ(manager_->lifecycle().Get("alice", info.id)->last_activity_at_ms, active_before);
  EXPECT_EQ(manager_->lifecycle().Usage("bob", info.id).error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", info.id));
  EXPECT_EQ(manager_->lifecycle().Usage("alice", info.id).error().code(), ErrorCode::kNotFound);
}

TEST_F(ManagerTest, EveryLimitPassesAtItsBoundaryAndFailsOneBeyond) {  // L3
  config_.limits.max_sandboxes = 100;
  NewManager();
  struct Case {
    const char* field;
    std::function<void(CreateRequest&, int)> set;  // int: 0 = at min, 1 = at max, -1/+1 beyond
  };
  auto expect_ok = [&](const CreateRequest& r, const std::string& what) {
    auto got = manager_->lifecycle().Create("alice", r);
    ASSERT_TRUE(got) << what << ": " << got.error().ToString();
    ASSERT_TRUE(manager_->lifecycle().Destroy("alice", got->id));
  };
  auto expect_bad = [&](const CreateRequest& r, const std::string& field) {
    auto got = manager_->lifecycle().Create("alice", r);
    ASSERT_FALSE(got) << field << " accepted";
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(got.error().message().find(field), std::string::npos) << got.error().message();
  };
  const Limits& l = config_.limits;
  struct IntField {
    const char* name;
    std::optional<int64_t> CreateRequest::*member;
    int64_t min, max;
  };
  const IntField ints[] = {
      {"memory_mb", &CreateRequest::memory_mb, l.min_memory_mb, l.max_memory_mb},
      {"pids_limit", &CreateRequest::pids_limit, l.min_pids_limit, l.max_pids_limit},
      {"workspace_mb", &CreateRequest::workspace_mb, l.min_workspace_mb, l.max_workspace_mb},
      {"timeout_seconds", &CreateRequest::timeout_seconds, l.min_timeout_seconds,
       l.max_timeout_seconds},
      {"idle_timeout_seconds", &CreateRequest::idle_timeout_seconds, 0, l.max_timeout_seconds},
  };
  for (const auto& f : ints) {
    CreateRequest r;
    r.*f.member = f.min;
    expect_ok(r, std::string(f.name) + " at min");
    r.*f.member = f.max;
    expect_ok(r, std::string(f.name) + " at max");
    r.*f.member = f.min - 1;
    expect_bad(r, f.name);
    r.*f.member = f.max + 1;
    expect_bad(r, f.name);
  }
  // The brief's named values (L3): memory 8, pids 2, timeout 0, cpus -1 / above max.
  CreateRequest r;
  r.memory_mb = 8;
  expect_bad(r, "memory_mb");
  r = {};
  r.pids_limit = 2;
  expect_bad(r, "pids_limit");
  r = {};
  r.timeout_seconds = 0;
  expect_bad(r, "timeout_seconds");
  for (double c : {-1.0, 0.0, 2.001, 1e300, std::nan("")}) {
    r = {};
    r.cpus = c;
    expect_bad(r, "cpus");
  }
  r = {};
  r.cpus = 2.0;  // exactly max
  expect_ok(r, "cpus at max");
  r.cpus = 0.01;
  expect_ok(r, "small cpus");

  // Env keys: empty, '=', NUL; values: NUL. The message never echoes a value.
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"", "x"},
                                                        {"A=B", "x"},
                                                        {std::string("A\0B", 3), "x"},
                                                        {"OK", std::string("sec\0ret", 7)}}) {
    r = {};
    r.env = {{k, v}};
    auto got = manager_->lifecycle().Create("alice", r);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(got.error().message().find("sec"), std::string::npos);
  }
  // Networking (ADR 0013): the policy is validated before anything is reserved, and needs
  // network: true.
  r = {};
  r.network = true;
  r.network_policy = isolation::net::NetworkPolicy{{"10.0.0.0/33"}, {}, 0, 0};
  auto net = manager_->lifecycle().Create("alice", r);
  ASSERT_FALSE(net);
  EXPECT_EQ(net.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(net.error().message().find("allow_out[0]"), std::string::npos) << net.error().message();
  r.network = false;
  r.network_policy = isolation::net::NetworkPolicy{};
  auto no_net = manager_->lifecycle().Create("alice", r);
  ASSERT_FALSE(no_net);
  EXPECT_EQ(no_net.error().message(), "network_policy needs network: true");

  r = {};
  r.template_name = "nope";
  auto tmpl = manager_->lifecycle().Create("alice", r);
  ASSERT_FALSE(tmpl);
  EXPECT_EQ(tmpl.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(tmpl.error().message().find("available: base, python"), std::string::npos)
      << tmpl.error().message();
  for (const char* evil : {"../base", ".", "..", "base/rootfs", "/etc"}) {
    r.template_name = evil;
    EXPECT_FALSE(manager_->lifecycle().Create("alice", r)) << evil;
  }

  // Nothing was created by any rejected request.
  EXPECT_TRUE(manager_->lifecycle().List(kAnyOwner)->empty());
  auto recs = store_->ListSandboxes(
      {.owner = std::nullopt, .states = {"creating", "running", "error"}, .live_only = false});
  ASSERT_TRUE(recs);
  EXPECT_TRUE(recs->empty());
}

TEST_F(ManagerTest, QuotaRejectsTheFourthAndFailedCreatesLeakNoSlot) {  // L4
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(MustCreate("alice").id);
  auto fourth = manager_->lifecycle().Create("bob", {});
  ASSERT_FALSE(fourth);
  EXPECT_EQ(fourth.error().code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(backend_->CountCalls("list"), 0);

  // Free one slot; five failed creates in a row must not eat it.
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", ids.back()));
  ids.pop_back();
  for (int i = 0; i < 5; ++i) {
    backend_->FailNextCreate(Error::Backend("boom " + std::to_string(i)), /*leave=*/i % 2 == 0);
    auto r = manager_->lifecycle().Create("alice", {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), ErrorCode::kBackend);
  }
  // Invalid requests do not take slots either.
  CreateRequest bad;
  bad.memory_mb = 1;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(manager_->lifecycle().Create("alice", bad));
  SandboxInfo third = MustCreate("alice");
  EXPECT_EQ(manager_->lifecycle().Create("alice", {}).error().code(), ErrorCode::kLimitExceeded);

  // The failed ones are visible in state error (so they can be deleted) and cleaned up.
  auto list = manager_->lifecycle().List("alice");
  ASSERT_TRUE(list);
  int errors = 0;
  for (const auto& i : *list) {
    if (i.state == SandboxState::kError) {
      ++errors;
      EXPECT_NE(i.error_message.find("boom"), std::string::npos);
      EXPECT_FALSE(backend_->IsOwned(i.id)) << "half-made sandbox left behind";
    }
  }
  EXPECT_EQ(errors, 5);
  EXPECT_EQ(manager_->lifecycle().CountByState()[SandboxState::kRunning], 3);
  EXPECT_EQ(manager_->lifecycle().CountByState()[SandboxState::kError], 5);
}

TEST_F(ManagerTest, ConcurrentCreatesNeverExceedTheQuota) {
  config_.limits.max_sandboxes = 5;
  NewManager();
  std::atomic<int> ok{0}, limited{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&] {
      auto r = manager_->lifecycle().Create("alice", {});
      if (r)
        ++ok;
      else if (r.error().code() == ErrorCode::kLimitExceeded)
        ++limited;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 5);
  EXPECT_EQ(limited.load(), 11);
}

TEST_F(ManagerTest, DeleteWorksFromEveryStateAndTwiceIsNotFound) {  // L7
  // running
  SandboxInfo running = MustCreate("alice");
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", running.id));
  EXPECT_EQ(manager_->lifecycle().Destroy("alice", running.id).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(backend_->CountCalls("destroy " + running.id), 1);

  // error (create failed halfway, leaving resources)
  backend_->FailNextCreate(Error::Backend("mount failed"), /*leave_resources=*/true);
  ASSERT_FALSE(manager_->lifecycle().Create("alice", {}));
  auto list = manager_->lifecycle().List("alice");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  const std::string failed = (*list)[0].id;
  EXPECT_EQ((*list)[0].state, SandboxState::kError);
  EXPECT_EQ((*list)[0].error_message, "mount failed");
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", failed));
  EXPECT_EQ(StoredState(failed), "destroyed");
  EXPECT_EQ(manager_->lifecycle().Destroy("alice", failed).error().code(), ErrorCode::kNotFound);

  // stopping (a destroy whose backend call failed stays "stopping"; a retry finishes it)
  SandboxInfo stuck = MustCreate("alice");
  backend_->FailDestroy(Error::Backend("device busy"));
  auto first = manager_->lifecycle().Destroy("alice", stuck.id);
  ASSERT_FALSE(first);
  EXPECT_EQ(first.error().code(), ErrorCode::kBackend);
  EXPECT_EQ(StoredState(stuck.id), "stopping");
  EXPECT_EQ(manager_->lifecycle().Get("alice", stuck.id)->state, SandboxState::kStopping);
  backend_->FailDestroy(std::nullopt);
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", stuck.id));
  EXPECT_EQ(StoredState(stuck.id), "destroyed");
  EXPECT_EQ(manager_->lifecycle().Destroy("alice", stuck.id).error().code(), ErrorCode::kNotFound);

  // creating: a DELETE that arrives while the backend is still creating waits for the create
  // and then destroys the result.
  std::promise<void> in_create, release;
  auto released = release.get_future().share();
  backend_->SetCreateHook([&](const isolation::SandboxSpec&) {
    in_create.set_value();
    released.wait();
  });
  auto creating =
      std::async(std::launch::async, [&] { return manager_->lifecycle().Create("alice", {}); });
  in_create.get_future().wait();
  backend_->SetCreateHook(nullptr);
  auto during = manager_->lifecycle().List("alice");
  ASSERT_TRUE(during);
  ASSERT_EQ(during->size(), 1u);  // List does not wait for the create
  EXPECT_EQ((*during)[0].state, SandboxState::kCreating);
  const std::string cid = (*during)[0].id;
  EXPECT_EQ(StoredState(cid), "creating");
  auto deleting =
      std::async(std::launch::async, [&] { return manager_->lifecycle().Destroy("alice", cid); });
  EXPECT_EQ(deleting.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  release.set_value();
  ASSERT_TRUE(creating.get());
  ASSERT_TRUE(deleting.get());
  EXPECT_EQ(StoredState(cid), "destroyed");
  EXPECT_FALSE(backend_->IsOwned(cid));
  EXPECT_TRUE(manager_->lifecycle().List("alice")->empty());
}

TEST_F(ManagerTest, AnotherOwnersSandboxIsNotFoundEverywhere) {
  SandboxInfo a = MustCreate("alice");
  auto b = manager_->lifecycle().Get("bob", a.id);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code(), ErrorCode::kNotFound);
  auto unknown = manager_->lifecycle().Get("bob", "sb_0123456789abcdef");
  EXPECT_EQ(unknown.error().message(), "sandbox sb_0123456789abcdef not found");
  EXPECT_EQ(b.error().message(), "sandbox " + a.id + " not found");  // indistinguishable
  EXPECT_EQ(manager_->lifecycle().Destroy("bob", a.id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->lifecycle().SetTimeout("bob", a.id, 60).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(manager_->exec().Exec("bob", a.id, {.command = "true"}).error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(manager_->files().ReadFile("bob", a.id, "x").error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(manager_->lifecycle().List("bob")->empty());
  EXPECT_EQ(manager_->lifecycle().List(kAnyOwner)->size(), 1u);
  EXPECT_TRUE(manager_->lifecycle().Get(kAnyOwner, a.id));
  EXPECT_TRUE(backend_->IsRunning(a.id));
  // A malformed id is never echoed back.
  auto evil = manager_->lifecycle().Get("alice", "../../etc");
  EXPECT_EQ(evil.error().message().find(".."), std::string::npos);
}

TEST_F(ManagerTest, OperationsOnDifferentSandboxesDoNotWaitForEachOther) {
  config_.limits.max_sandboxes = 10;
  NewManager();
  SandboxInfo a = MustCreate("alice");
  // Block a create of another sandbox inside the backend...
  std::promise<void> in_create, release;
  auto released = release.get_future().share();
  backend_->SetCreateHook([&](const isolation::SandboxSpec&) {
    in_create.set_value();
    released.wait();
  });
  auto creating =
      std::async(std::launch::async, [&] { return manager_->lifecycle().Create("alice", {}); });
  in_create.get_future().wait();
  backend_->SetCreateHook(nullptr);
  // ...while everything on `a` proceeds.
  EXPECT_TRUE(manager_->lifecycle().Get("alice", a.id));
  EXPECT_TRUE(manager_->lifecycle().SetTimeout("alice", a.id, 100));
  EXPECT_EQ(manager_->lifecycle().List("alice")->size(), 2u);
  EXPECT_TRUE(manager_->lifecycle().Destroy("alice", a.id));
  release.set_value();
  EXPECT_TRUE(creating.get());
}

TEST_F(ManagerTest, ExecAndFilesAreRejectedBeforeReachingSandboxd) {
  SandboxInfo a = MustCreate("alice");
  // Validation happens before the connection is needed, so these run without sandboxd.
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, {}).error().code(), ErrorCode::kInvalidArgument);
  ExecOptions both;
  both.argv = {"ls"};
  both.command = "ls";
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, both).error().code(), ErrorCode::kInvalidArgument);
  ExecOptions t;
  t.command = "true";
  t.timeout_seconds = 0;
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, t).error().code(), ErrorCode::kInvalidArgument);
  t.timeout_seconds = std::nullopt;
  t.user = "nobody";
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, t).error().code(), ErrorCode::kInvalidArgument);
  t.user = "";
  t.env = {{"A=B", "x"}};
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, t).error().code(), ErrorCode::kInvalidArgument);
  t.env = {};
  t.max_output_bytes = 0;
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, t).error().code(), ErrorCode::kInvalidArgument);

  // Relative paths may not leave /workspace, nothing climbs above "/". (Absolute paths outside
  // /workspace are tested on real sandboxes, tests/e2e/test_files.py: this backend has none.)
  for (const char* p : {"../etc/passwd", "a/../../x", "/.."}) {
    auto w = manager_->files().WriteFile("alice", a.id, p, "x");
    ASSERT_FALSE(w) << p;
    EXPECT_EQ(w.error().code(), ErrorCode::kInvalidArgument) << p;
    EXPECT_EQ(manager_->files().ReadFile("alice", a.id, p).error().code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(manager_->files().MakeDir("alice", a.id, p).error().code(),
              ErrorCode::kInvalidArgument);
    EXPECT_EQ(manager_->files().MoveFile("alice", a.id, "a", p, false).error().code(),
              ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(manager_->files().WriteFile("alice", a.id, "a", "x", 01000).error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(manager_->files().RemoveFile("alice", a.id, "/workspace", true).error().code(),
            ErrorCode::kInvalidArgument);

  config_.limits.max_file_bytes = 10;  // F5
  NewManager();
  ASSERT_TRUE(manager_->lifecycle().Recover());
  auto big = manager_->files().WriteFile("alice", a.id, "f", std::string(11, 'x'));
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::kTooLarge);
  EXPECT_EQ(manager_->files().OpenFileWrite("alice", a.id, "f", std::nullopt, 11).error().code(),
            ErrorCode::kTooLarge);
}

TEST_F(ManagerTest, ASandboxThatDiedIsMarkedErrorAndFreesItsSlot) {
  SandboxInfo a = MustCreate("alice");
  MustCreate("alice");
  MustCreate("alice");
  EXPECT_EQ(manager_->lifecycle().Create("alice", {}).error().code(), ErrorCode::kLimitExceeded);
  backend_->Crash(a.id);  // its processes are gone; the backend still owns its resources
  ExecOptions o;
  o.command = "true";
  auto r = manager_->exec().Exec("alice", a.id, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kBackend);
  auto got = manager_->lifecycle().Get("alice", a.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->state, SandboxState::kError);
  EXPECT_NE(got->error_message.find("stopped unexpectedly"), std::string::npos);
  EXPECT_EQ(StoredState(a.id), "error");
  EXPECT_EQ(manager_->exec().Exec("alice", a.id, o).error().code(), ErrorCode::kConflict);
  MustCreate("alice");  // its slot was freed
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", a.id));
  EXPECT_FALSE(backend_->IsOwned(a.id));
}

}  // namespace
}  // namespace asb::core
