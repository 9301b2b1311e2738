// file.watch of the real sandboxd binary (file_watch_op.h), driven by the real host client. The
// changes are made on the host side of the test workspace, which is the directory sandboxd
// watches. Label: privileged (with the rest of sandboxd_test).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "protocol/client.h"
#include "sandboxd/sandboxd_harness.h"

namespace asb::sandboxd::testing {
namespace {

using protocol::ChannelEvent;
using protocol::FileWatchEvent;

// An open file.watch channel and the NDJSON it has delivered so far, decoded.
struct Watch {
  std::shared_ptr<protocol::Channel> ch;
  protocol::FileWatchArmed armed;
  std::string partial;
  std::vector<FileWatchEvent> events;
  std::optional<ChannelEvent> terminal;

  // Reads until `done(events)` holds, the channel ends, or `timeout_ms` passes.
  void ReadUntil(const std::function<bool(const std::vector<FileWatchEvent>&)>& done,
                 int64_t timeout_ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!terminal && !done(events)) {
      int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                         deadline - std::chrono::steady_clock::now())
                         .count();
      if (left <= 0) return;
      auto ev = ch->Next(left);
      if (!ev) return;
      if (ev->kind == ChannelEvent::Kind::kData) {
        partial += ev->payload;
        size_t nl;
        while ((nl = partial.find('\n')) != std::string::npos) {
          auto e = protocol::DecodeFileWatchEvent(std::string_view(partial).substr(0, nl));
          EXPECT_TRUE(e) << partial.substr(0, nl);
          if (e) events.push_back(*e);
          partial.erase(0, nl + 1);
        }
      } else if (ev->terminal()) {
        terminal = std::move(*ev);
      }
    }
  }
  // Reads for `quiet_ms` more and returns everything seen.
  const std::vector<FileWatchEvent>& Settle(int64_t quiet_ms = 300) {
    ReadUntil([](const auto&) { return false; }, quiet_ms);
    return events;
  }
};

bool Has(const std::vector<FileWatchEvent>& evs, const std::string& type, const std::string& path) {
  for (const auto& e : evs) {
    if (e.type == type && e.path == path) return true;
  }
  return false;
}

class SandboxdWatchTest : public SandboxdTest {
 protected:
  Result<Watch> Open(const std::string& path, bool recursive, uint32_t max_queue = 0) {
    protocol::FileWatchRequest req;
    req.path = path;
    req.recursive = recursive;
    req.max_queue = max_queue;
    Watch w;
    ASB_ASSIGN_OR_RETURN(w.ch, conn_->Open(protocol::EncodeFileWatchRequest(req)));
    ASB_ASSIGN_OR_RETURN(ChannelEvent first, w.ch->Next(10000));
    if (first.kind == ChannelEvent::Kind::kError) return Fail(*first.error);
    if (first.kind != ChannelEvent::Kind::kInfo) return Fail(Error::Backend("no INFO first"));
    ASB_ASSIGN_OR_RETURN(w.armed, protocol::DecodeFileWatchArmed(first.payload));
    return w;
  }
  void Put(const std::string& rel, const std::string& data) { std::ofstream(Ws(rel)) << data; }
};

TEST_F(SandboxdWatchTest, ReportsEachKindOfChangeOfDirectEntries) {
  ASSERT_EQ(mkdir(Ws("sub").c_str(), 0755), 0);
  auto w = Open(".", /*recursive=*/false);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->armed.path, proc_->workspace());
  EXPECT_EQ(w->armed.watches, 1u);

  Put("a.txt", "one");
  ASSERT_EQ(chmod(Ws("a.txt").c_str(), 0600), 0);
  ASSERT_EQ(rename(Ws("a.txt").c_str(), Ws("b.txt").c_str()), 0);
  Put("sub/deep.txt", "not reported: sub is not watched without recursive");
  ASSERT_EQ(unlink(Ws("b.txt").c_str()), 0);
  ASSERT_EQ(mkdir(Ws("newdir").c_str(), 0755), 0);
  // A write through the protocol (temp file, then rename) shows as its own name only.
  protocol::FileWriteRequest wr;
  wr.path = "written.txt";
  ASSERT_TRUE(protocol::WriteFile(*conn_, wr, "via file.write"));
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("written.txt")); });
  const auto& evs = w->Settle();
  EXPECT_TRUE(Has(evs, "create", Ws("a.txt")));
  EXPECT_TRUE(Has(evs, "write", Ws("a.txt")));
  EXPECT_TRUE(Has(evs, "chmod", Ws("a.txt")));
  EXPECT_TRUE(Has(evs, "rename", Ws("a.txt")));  // moved away from this name
  EXPECT_TRUE(Has(evs, "create", Ws("b.txt")));  // ... and into this one
  EXPECT_TRUE(Has(evs, "remove", Ws("b.txt")));
  EXPECT_TRUE(Has(evs, "create", Ws("newdir")));
  for (const auto& e : evs) {
    EXPECT_EQ(e.path.find("deep.txt"), std::string::npos) << e.path;
    EXPECT_EQ(e.path.find(".asb-"), std::string::npos) << e.path;  // file.write's temp file
    if (e.path == Ws("newdir")) {
      EXPECT_TRUE(e.dir);
    }
  }
  ASSERT_TRUE(w->ch->Cancel());
  w->ReadUntil([](const auto&) { return false; });
  ASSERT_TRUE(w->terminal);
  EXPECT_EQ(w->terminal->error->code(), ErrorCode::kCancelled);
}

TEST_F(SandboxdWatchTest, RecursiveFollowsNewAndMovedDirectories) {
  ASSERT_EQ(mkdir(Ws("src").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Ws("src/old").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(Ws("outside").c_str(), 0755), 0);
  auto w = Open("src", /*recursive=*/true);
  ASSERT_TRUE(w) << w.error().message();
  EXPECT_EQ(w->armed.watches, 2u);

  // mkdir -p and a file at once: the file lands before the new directories are watched, and
  // the scan of each new directory still reports it.
  ASSERT_EQ(system(("mkdir -p " + Ws("src/a/b/c") + " && echo x > " + Ws("src/a/b/c/f")).c_str()),
            0);
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("src/a/b/c/f")); });
  EXPECT_TRUE(Has(w->events, "create", Ws("src/a")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/a/b")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/a/b/c")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/a/b/c/f")));

  // Moved within the tree: events below it carry the new path.
  ASSERT_EQ(rename(Ws("src/old").c_str(), Ws("src/a/renamed").c_str()), 0);
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("src/a/renamed")); });
  Put("src/a/renamed/g", "y");
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("src/a/renamed/g")); });
  EXPECT_TRUE(Has(w->events, "rename", Ws("src/old")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/a/renamed/g")));

  // Moved out of the tree: what happens there is no longer reported.
  ASSERT_EQ(rename(Ws("src/a/b").c_str(), Ws("outside/b").c_str()), 0);
  Put("outside/b/c/h", "z");
  Put("src/last", "marker");
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("src/last")); });
  const auto& evs = w->Settle();
  EXPECT_TRUE(Has(evs, "rename", Ws("src/a/b")));
  for (const auto& e : evs) {
    EXPECT_FALSE(e.path.size() >= 2 && e.path.compare(e.path.size() - 2, 2, "/h") == 0) << e.path;
  }

  // A directory tree moved in is watched too, and what it holds is reported as created here.
  ASSERT_EQ(system(("mkdir -p " + Ws("outside/t/u")).c_str()), 0);
  ASSERT_EQ(rename(Ws("outside/t").c_str(), Ws("src/t").c_str()), 0);
  Put("src/t/u/v", "w");
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("src/t/u/v")); });
  EXPECT_TRUE(Has(w->events, "create", Ws("src/t")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/t/u")));
  EXPECT_TRUE(Has(w->events, "create", Ws("src/t/u/v")));
}

TEST_F(SandboxdWatchTest, SlowReaderGetsBoundedQueueAndOverflowCount) {
  ASSERT_EQ(mkdir(Ws("many").c_str(), 0755), 0);
  auto w = Open("many", false, /*max_queue=*/16);
  ASSERT_TRUE(w) << w.error().message();
  // Not reading: the client's queue fills the 256 KiB stdout window (~3,000 lines), then
  // sandboxd holds 16 events and counts the rest.
  constexpr int kFiles = 6000;
  for (int i = 0; i < kFiles; ++i) {
    int fd = open(Ws("many/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  w->Settle(1500);  // reading opens the window again
  int fd = open(Ws("many/z-last").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  close(fd);
  w->ReadUntil([&](const auto& evs) { return Has(evs, "create", Ws("many/z-last")); });
  const auto& evs = w->events;
  uint64_t creates = 0, dropped = 0, overflows = 0;
  for (const auto& e : evs) {
    if (e.type == "create") ++creates;
    if (e.type == "overflow") {
      ++overflows;
      dropped += e.dropped;
    }
  }
  EXPECT_GE(overflows, 1u);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(creates + dropped, static_cast<uint64_t>(kFiles) + 1);  // none lost uncounted
  EXPECT_LT(creates, static_cast<uint64_t>(kFiles));
  EXPECT_TRUE(Has(evs, "create", Ws("many/z-last")));  // the watch goes on after an overflow
}

TEST_F(SandboxdWatchTest, EndsWhenTheWatchedDirectoryIsRemoved) {
  ASSERT_EQ(mkdir(Ws("gone").c_str(), 0755), 0);
  auto w = Open("gone", true);
  ASSERT_TRUE(w) << w.error().message();
  Put("gone/x", "1");
  ASSERT_EQ(system(("rm -rf " + Ws("gone")).c_str()), 0);
  w->ReadUntil([](const auto&) { return false; });
  ASSERT_TRUE(w->terminal);
  ASSERT_EQ(w->terminal->kind, ChannelEvent::Kind::kResult);
  auto end = protocol::DecodeFileWatchEnd(w->terminal->payload);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->reason, "removed");
  EXPECT_TRUE(Has(w->events, "create", Ws("gone/x")));  // delivered before the end
  EXPECT_TRUE(Has(w->events, "remove", Ws("gone/x")));
}

TEST_F(SandboxdWatchTest, RefusesBadTargetsWithClearErrors) {
  Put("file", "x");
  ASSERT_EQ(symlink("/etc", Ws("etc-link").c_str()), 0);
  EXPECT_EQ(Open("missing", false).error().code(), ErrorCode::kNotFound);
  auto f = Open("file", false);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(f.error().message().find("not a directory"), std::string::npos);
  EXPECT_EQ(Open("etc-link", false).error().code(), ErrorCode::kInvalidArgument);  // outside
  EXPECT_EQ(Open("../", false).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Open(".", false, protocol::kWatchQueueMax));
  EXPECT_EQ(Open(".", false, protocol::kWatchQueueMax + 1).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(SandboxdWatchTest, AtMostMaxOpsWatchesAtOnce) {
  std::vector<Watch> open;
  for (uint32_t i = 0; i < protocol::kWatchMaxOps; ++i) {
    auto w = Open(".", false);
    ASSERT_TRUE(w) << i << ": " << w.error().message();
    open.push_back(std::move(*w));
  }
  auto over = Open(".", false);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kLimitExceeded);
  // Ending one frees its place.
  ASSERT_TRUE(open.back().ch->Cancel());
  open.back().ReadUntil([](const auto&) { return false; });
  open.pop_back();
  EXPECT_TRUE(Open(".", false));
}

}  // namespace
}  // namespace asb::sandboxd::testing
