// Privileged tests of the idmap helpers under concurrency. The server creates sandboxes on many
// threads at once; every helper child forked by one create inherits the pipes another create has
// open at that moment. A helper that waits for EOF on a pipe (or a parent that waits for EOF
// from its helper) then waits on a process that belongs to someone else, and two such waits
// deadlock each other: ten concurrent creates once hung the whole server this way.
#include "isolation/ns/idmap.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace asb::isolation::ns {
namespace {

// Kills every process whose parent is this test process (the helpers a hang left behind), so
// that a failing run leaves nothing on the machine.
void KillOurChildren() {
  const std::string me = std::to_string(::getpid());
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return;
  while (dirent* e = ::readdir(proc)) {
    const std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::string state, ppid;
    std::istringstream rest(line.substr(close_paren + 2));
    rest >> state >> ppid;
    if (ppid == me) ::kill(std::stoi(pid), SIGKILL);
  }
  ::closedir(proc);
}

TEST(IdmapConcurrencyTest, ConcurrentUsernsHelpersNeverWaitOnEachOther) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root (writes another user namespace's maps)";
  constexpr int kThreads = 6;
  constexpr int kRounds = 40;
  std::atomic<int> made{0};
  std::atomic<int> failed{0};
  std::atomic<bool> stop{false};
  auto work = std::async(std::launch::async, [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kRounds && !stop; ++i) {
          auto ns = MakeIdmapUserns(1'500'000'000u + static_cast<uint32_t>(t) * 65536u);
          if (!ns) {
            ++failed;
            continue;
          }
          struct stat st;
          if (::fstat(ns->get(), &st) == 0) ++made;
        }
      });
    }
    for (auto& th : threads) th.join();
  });
  if (work.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    ADD_FAILURE() << "concurrent MakeIdmapUserns hung: " << made.load() << " of "
                  << kThreads * kRounds << " done after 60 s";
    // Unblock the hung helpers until every thread has seen `stop` and returned.
    stop = true;
    while (work.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      KillOurChildren();
    }
    return;
  }
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(made.load(), kThreads * kRounds);
}

}  // namespace
}  // namespace asb::isolation::ns
