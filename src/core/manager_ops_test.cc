// Exec and file operations through the manager to a real sandboxd run on the host by the
// FakeBackend (no isolation; --no-pid1). Skipped when sandboxd has not been built.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "core/manager_test_fixture.h"

namespace asb::core {
namespace {

class ManagerOpsTest : public ManagerTest {
 protected:
  void SetUp() override {
    ManagerTest::SetUp();
    if (HasFatalFailure()) return;
    // sandboxd runs commands as uid 1000 and file operations with setfsuid: root only.
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (sandboxd switches users)";
    sb_ = MustCreate("alice");
    auto adopted = backend_->Adopt(sb_.id);
    ASSERT_TRUE(adopted);
    if ((*adopted)->connection() == nullptr) {
      auto* fake = static_cast<testing::FakeSandbox*>(adopted->get());
      GTEST_SKIP() << "sandboxd not available: " << fake->last_error();
    }
    // On the host (--no-pid1) sandboxd names paths by its host workspace directory.
    ws_ = static_cast<testing::FakeSandbox*>(adopted->get())->workspace_dir();
  }

  ExecOptions Cmd(std::string command) {
    ExecOptions o;
    o.command = std::move(command);
    return o;
  }

  SandboxInfo sb_;
  std::string ws_;  // what /workspace is called in FileStat.path here
};

TEST_F(ManagerOpsTest, ExecCollectsOutputAndExitCode) {
  auto r = manager_->exec().Exec("alice", sb_.id, Cmd("echo hi; echo err >&2; exit 3"));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "hi\n");
  EXPECT_EQ(r->stderr_data, "err\n");
  EXPECT_EQ(r->result.exit_code, 3);
  EXPECT_FALSE(r->result.timed_out);
  EXPECT_FALSE(r->result.oom_killed);

  ExecOptions argv;
  argv.argv = {"printf", "%s\\n", "a b", "$HOME"};
  r = manager_->exec().Exec("alice", sb_.id, argv);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "a b\n$HOME\n");
}

TEST_F(ManagerOpsTest, ExecCapsTimeoutsStdinAndEnv) {
  ExecOptions capped = Cmd("head -c 80 /dev/zero; head -c 80 /dev/zero >&2");
  capped.max_output_bytes = 100;  // E5, per stream (ADR 0016)
  auto r = manager_->exec().Exec("alice", sb_.id, capped);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data.size(), 80u);
  EXPECT_EQ(r->stderr_data.size(), 80u);
  EXPECT_FALSE(r->result.stdout_truncated || r->result.stderr_truncated);
  // A stdout flood keeps stderr's last line and flags only stdout.
  capped = Cmd("head -c 5000 /dev/zero; echo boom >&2");
  capped.max_output_bytes = 100;
  r = manager_->exec().Exec("alice", sb_.id, capped);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data.size(), 100u);
  EXPECT_EQ(r->stderr_data, "boom\n");
  EXPECT_TRUE(r->result.stdout_truncated);
  EXPECT_FALSE(r->result.stderr_truncated);

  ExecOptions slow = Cmd("sleep 30; echo never");
  slow.timeout_seconds = 0.5;
  r = manager_->exec().Exec("alice", sb_.id, slow);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->result.timed_out);
  EXPECT_EQ(r->stdout_data.find("never"), std::string::npos);

  ExecOptions in = Cmd("cat; echo \"$FOO\"");
  in.stdin_data = "from stdin\n";
  in.env = {{"FOO", "bar"}};
  r = manager_->exec().Exec("alice", sb_.id, in);
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->stdout_data, "from stdin\nbar\n");
}

TEST_F(ManagerOpsTest, OomKilledComesFromTheSandboxCounter) {
  auto running = std::async(
      std::launch::async, [&] { return manager_->exec().Exec("alice", sb_.id, Cmd("sleep 0.5")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  backend_->SetOomKills(sb_.id, 1);
  auto r = running.get();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(r->result.oom_killed);
  r = manager_->exec().Exec("alice", sb_.id, Cmd("true"));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->result.oom_killed);  // no new kill during this one
}

// A command that exits without reading its stdin: the stream still ends with its result
// (StartExec used to answer conflict "channel closed" when the exit beat the write).
TEST_F(ManagerOpsTest, StreamingExecWhoseCommandIgnoresStdinEndsWithItsResult) {
  ExecOptions o = Cmd("exit 3");
  o.stdin_data = std::string(4 << 20, 'x');  // more than the channel's window
  auto s = manager_->exec().StartExec("alice", sb_.id, o);
  ASSERT_TRUE(s) << s.error().ToString();
  for (;;) {
    auto ev = s->events->Next(10'000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    ASSERT_NE(ev->kind, StreamEvent::Kind::kError) << ev->error->ToString();
    if (ev->kind == StreamEvent::Kind::kDone) {
      ASSERT_TRUE(ev->exec_result);
      EXPECT_EQ(ev->exec_result->exit_code, 3);
      break;
    }
  }
}

TEST_F(ManagerOpsTest, StreamingExecEndsWithAResult) {
  auto s = manager_->exec().StartExec("alice", sb_.id, Cmd("echo a; echo b >&2"));
  ASSERT_TRUE(s) << s.error().ToString();
  std::string out, err;
  for (;;) {
    auto ev = s->events->Next(10'000);
    ASSERT_TRUE(ev) << ev.error().ToString();
    if (ev->kind == StreamEvent::Kind::kOutput) {
      (ev->stream == OutputStream::kStdout ? out : err) += ev->data;
    } else if (ev->kind == StreamEvent::Kind::kDone) {
      ASSERT_TRUE(ev->exec_result);
      EXPECT_EQ(ev->exec_result->exit_code, 0);
      break;
    } else {
      ASSERT_NE(ev->kind, StreamEvent::Kind::kError) << ev->error->ToString();
    }
  }
  EXPECT_EQ(out, "a\n");
  EXPECT_EQ(err, "b\n");
}

TEST_F(ManagerOpsTest, DestroyDoesNotWaitForARunningExecAndEndsIt) {
  auto running = std::async(
      std::launch::async, [&] { return manager_->exec().Exec("alice", sb_.id, Cmd("sleep 60")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(manager_->lifecycle().Destroy("alice", sb_.id));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ASSERT_EQ(running.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto r = running.get();
  EXPECT_FALSE(r);
}

TEST_F(ManagerOpsTest, FilesRoundTripAndFollowThePathRules) {
  std::string binary;
  for (int i = 0; i < 16 * 1024; ++i) binary.push_back(static_cast<char>((i * 7919) & 0xff));
  binary += std::string("\0\xff\xfe", 3);
  auto w = manager_->files().WriteFile("alice", sb_.id, "src/app.bin", binary, 0755);
  ASSERT_TRUE(w) << w.error().ToString();
  EXPECT_EQ(w->path, ws_ + "/src/app.bin");
  EXPECT_EQ(w->mode & 0777, 0755u);
  auto r = manager_->files().ReadFile("alice", sb_.id, "/workspace/src/app.bin");
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(*r, binary);

  ASSERT_TRUE(manager_->files().WriteFile("alice", sb_.id, "empty", ""));
  EXPECT_EQ(*manager_->files().ReadFile("alice", sb_.id, "empty"), "");

  EXPECT_EQ(manager_->files().ReadFile("alice", sb_.id, "missing").error().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(manager_->files().ReadFile("alice", sb_.id, "src").error().code(),
            ErrorCode::kInvalidArgument);

  ASSERT_TRUE(manager_->files().MakeDir("alice", sb_.id, "d/e"));
  ASSERT_TRUE(manager_->files().WriteFile("alice", sb_.id, ".dot", "x"));
  auto list = manager_->files().ListFiles("alice", sb_.id, "", false);
  ASSERT_TRUE(list) << list.error().ToString();
  std::vector<std::string> names;
  for (const auto& f : *list) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{".dot", "d", "empty", "src"}));

  auto mv = manager_->files().MoveFile("alice", sb_.id, ".dot", "d/moved", false);
  ASSERT_TRUE(mv) << mv.error().ToString();
  EXPECT_EQ(mv->path, ws_ + "/d/moved");
  auto st = manager_->files().StatFile("alice", sb_.id, "d/moved");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->size, 1u);
  ASSERT_TRUE(manager_->files().RemoveFile("alice", sb_.id, "d", true));
  EXPECT_EQ(manager_->files().StatFile("alice", sb_.id, "d").error().code(), ErrorCode::kNotFound);
}

TEST_F(ManagerOpsTest, FileSizeLimitIsExact) {  // F5
  config_.limits.max_file_bytes = 10;
  NewManager();
  ASSERT_TRUE(manager_->lifecycle().Recover());
  ASSERT_TRUE(manager_->files().WriteFile("alice", sb_.id, "ten", std::string(10, 'x')));
  EXPECT_EQ(
      manager_->files().WriteFile("alice", sb_.id, "eleven", std::string(11, 'x')).error().code(),
      ErrorCode::kTooLarge);
  // A streamed upload without a size hint is stopped by sandboxd at the same limit.
  auto ws = manager_->files().OpenFileWrite("alice", sb_.id, "streamed");
  ASSERT_TRUE(ws) << ws.error().ToString();
  (void)ws->events->Write(std::string(11, 'y'), 5000);
  (void)ws->events->CloseWrite();
  auto ev = ws->events->Next(5000);
  while (ev && !ev->terminal()) ev = ws->events->Next(5000);
  ASSERT_TRUE(ev) << ev.error().ToString();
  ASSERT_EQ(ev->kind, StreamEvent::Kind::kError);
  EXPECT_EQ(ev->error->code(), ErrorCode::kTooLarge);
  // Reading a file larger than the limit is refused before its bytes are sent.
  ASSERT_TRUE(manager_->exec().Exec("alice", sb_.id, Cmd("head -c 11 /dev/zero > big")));
  EXPECT_EQ(manager_->files().ReadFile("alice", sb_.id, "big").error().code(),
            ErrorCode::kTooLarge);
}

TEST_F(ManagerOpsTest, HundredConcurrentExecsAcrossTenSandboxes) {
  config_.limits.max_sandboxes = 10;
  NewManager();
  ASSERT_TRUE(manager_->lifecycle().Recover());
  std::vector<std::string> ids = {sb_.id};
  for (int i = 1; i < 10; ++i) ids.push_back(MustCreate("alice").id);
  for (const auto& id : ids) {
    auto sb = backend_->Adopt(id);
    ASSERT_TRUE(sb && (*sb)->connection() != nullptr);
  }
  std::vector<std::future<std::string>> results;
  for (int i = 0; i < 100; ++i) {
    results.push_back(std::async(std::launch::async, [&, i]() -> std::string {
      ExecOptions o;
      o.command = "sleep 0.2; echo " + std::to_string(i);
      auto r = manager_->exec().Exec("alice", ids[i % 10], o);
      if (!r) return "error: " + r.error().ToString();
      return r->stdout_data;
    }));
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(results[i].get(), std::to_string(i) + "\n");
  // They ran concurrently, not one after another (100 x 0.2 s = 20 s).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

}  // namespace
}  // namespace asb::core
