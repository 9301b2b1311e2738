// Privileged tests of the ns backend's life cycle under failure: a server that died in the
// middle of Create, a sandboxd killed from outside, and concurrent creates and destroys.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "isolation/ns/ns_test_support.h"

namespace asb::isolation::ns::testing {
namespace {

TEST_F(NsBackendTest, DestroyCleansUpAfterACrashMidCreate) {
  const HostSnapshot before = Snapshot();
  auto spec = Spec();
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  const int pid = sb->host_pid();
  EXPECT_EQ(Sh(*sb, "sleep 1000 & echo ok").stdout_data, "ok\n");
  sb->connection()->Close();
  sb.reset();
  // As if the server died before writing state.json: no pid on record, only names.
  ASSERT_EQ(::unlink((state_dir_ + "/" + spec.id + "/state.json").c_str()), 0);
  backend_.reset();
  backend_ = NewBackend();
  ASSERT_TRUE(backend_);
  auto owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_EQ(*owned, std::vector<std::string>{spec.id});
  EXPECT_EQ(backend_->Adopt(spec.id).error().code(), ErrorCode::kNotFound);
  ASSERT_TRUE(backend_->Destroy(spec.id));
  // The cgroup kill took sandboxd (and with it the pid namespace) without knowing its pid.
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(Snapshot(), before) << Describe(Snapshot());
  owned = backend_->ListOwned();
  ASSERT_TRUE(owned);
  EXPECT_TRUE(owned->empty());
}

TEST_F(NsBackendTest, SandboxdKilledFromOutside) {
  const HostSnapshot before = Snapshot();
  auto spec = Spec();
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  ASSERT_EQ(::kill(sb->host_pid(), SIGKILL), 0);
  // The connection notices; the sandbox cannot be adopted; Destroy still cleans everything.
  for (int i = 0; i < 100 && sb->connection()->alive(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(sb->connection()->alive());
  ASSERT_TRUE(backend_->Destroy(spec.id));
  EXPECT_EQ(Snapshot(), before) << Describe(Snapshot());
}

TEST_F(NsBackendTest, SandboxdThatNeverAnswersLeavesNothing) {
  const HostSnapshot before = Snapshot();
  backend_.reset();
  options_.sandboxd_path = "/bin/true";  // runs (the template has its libraries) and exits
  options_.start_timeout_ms = 3000;
  backend_ = NewBackend();
  ASSERT_TRUE(backend_);
  auto sb = backend_->Create(Spec());
  ASSERT_FALSE(sb);
  EXPECT_EQ(sb.error().code(), ErrorCode::kBackend);
  EXPECT_NE(sb.error().message().find("sandboxd did not answer"), std::string::npos)
      << sb.error().message();
  EXPECT_EQ(Snapshot(), before) << Describe(Snapshot());
  EXPECT_TRUE(backend_->ListOwned()->empty());
}

TEST_F(NsBackendTest, AFailedHostCallNeverShowsAClientItsHostText) {
  // A create that fails at a host call (here its state directory vanished under the backend):
  // the error stays marked, so a client (api/errors.cc, a record's error_message) reads what
  // was attempted, never the host path (ADR 0016). It used to lose the mark here.
  const std::string moved = state_dir_ + ".away";
  ASSERT_EQ(::rename(state_dir_.c_str(), moved.c_str()), 0);
  auto sb = backend_->Create(Spec());
  ASSERT_EQ(::rename(moved.c_str(), state_dir_.c_str()), 0);
  ASSERT_FALSE(sb);
  EXPECT_EQ(sb.error().code(), ErrorCode::kBackend);
  EXPECT_TRUE(sb.error().from_host_call()) << sb.error().message();
  EXPECT_NE(sb.error().detail().find(state_dir_), std::string::npos);  // the operator's log
  EXPECT_EQ(sb.error().message().find(state_dir_), std::string::npos) << sb.error().message();
  const std::string client = sb.error().ClientSafeMessage();
  EXPECT_EQ(client.find(state_dir_), std::string::npos) << client;
  EXPECT_EQ(client.find("No such file"), std::string::npos) << client;
  EXPECT_NE(client.find("a host operation failed"), std::string::npos) << client;
}

TEST_F(NsBackendTest, DestroyWhileAHostProcessHoldsTheWorkspace) {
  const HostSnapshot before = Snapshot();
  auto spec = Spec();
  auto sb = MustCreate(spec);
  ASSERT_TRUE(sb);
  // The workspace is an idmapped mount (idmap.h): host root, outside the sandbox's id range,
  // cannot create files in it.
  const std::string ws = state_dir_ + "/" + spec.id + "/ws";
  EXPECT_LT(::open((ws + "/host-file").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600), 0);
  EXPECT_EQ(errno, EOVERFLOW);
  // A host-side fd open in the workspace makes a plain umount fail with EBUSY.
  int fd = ::open(ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(backend_->Destroy(spec.id));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_FALSE(std::filesystem::exists(state_dir_ + "/" + spec.id));
  ::close(fd);  // the lazily detached filesystem and its loop device go with the last user
  HostSnapshot after;
  for (int i = 0; i < 100; ++i) {
    if ((after = Snapshot()) == before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(after, before) << Describe(after);
}

TEST_F(NsBackendTest, ConcurrentCreatesAndDestroys) {
  const HostSnapshot before = Snapshot();
  constexpr int kSandboxes = 4;
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(kSandboxes);
  std::vector<std::string> errors(kSandboxes);
  for (int i = 0; i < kSandboxes; ++i) {
    threads.emplace_back([&, i] {
      auto spec = Spec();
      auto sb = backend_->Create(spec);
      if (!sb) {
        errors[i] = sb.error().ToString();
        return;
      }
      protocol::ExecRequest req;
      req.command = "echo $(id -u) > /workspace/me && cat /workspace/me";
      auto r = protocol::ExecCollect(*(*sb)->connection(), req);
      outputs[i] = r ? r->stdout_data : r.error().ToString();
      if (auto st = backend_->Destroy(spec.id); !st) errors[i] = st.error().ToString();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kSandboxes; ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_EQ(outputs[i], "1000\n");
  }
  EXPECT_EQ(Snapshot(), before) << Describe(Snapshot());
}

}  // namespace
}  // namespace asb::isolation::ns::testing
