#include "cli/run_leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/microvm_options.h"
#include "cli/run_support.h"
#include "common/ids.h"
#include "common/log.h"
#include "isolation/microvm/microvm_backend.h"
#include "isolation/ns/state.h"

namespace asb::cli {
namespace {

constexpr std::string_view kOwnerSuffix = ".owner";

// What the watcher's pipe said, passed to `run-watch --event`: run handed its sandbox over
// (its command ended), or the pipe ended without a word (run died).
constexpr char kWatchEventHandOff = 'h';
constexpr char kWatchEventDied = 'x';

std::string OwnerPath(const std::string& state_dir, const std::string& id) {
  return state_dir + "/" + id + std::string(kOwnerSuffix);
}

// The pid a claim names, or -1.
int ClaimedPid(int fd) {
  char buf[64] = {};
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::atoi(buf) : -1;
}

// True when `pid` (with its start time, "pid starttime" in the claim) still runs.
bool ClaimantRuns(int fd) {
  char buf[64] = {};
  if (::pread(fd, buf, sizeof(buf) - 1, 0) <= 0) return false;
  unsigned long long start = 0;
  int pid = -1;
  if (std::sscanf(buf, "%d %llu", &pid, &start) != 2 || pid <= 0) return false;
  auto now = isolation::ns::ProcessStartTime(pid);
  return now && *now == start && isolation::ns::ProcessIsRunning(pid);
}

}  // namespace

isolation::ns::NsBackendOptions RunBackendOptions(const std::string& data_dir,
                                                  const std::string& sandboxd) {
  isolation::ns::NsBackendOptions bo;
  // Apart from a server's sandboxes (<data>/sandboxes, cgroup agent-sandbox-<hash>): a server
  // that starts while we run must not take our sandbox for an orphan and destroy it.
  bo.state_dir = data_dir + "/run";
  bo.cgroup_name = "agent-sandbox-run";
  bo.sandboxd_path = sandboxd;
  bo.workspace_pool_size = 0;  // one sandbox, once: nothing to pool
  return bo;
}

std::string RunStateDir(const std::string& name, const std::string& data_dir) {
  return name == "microvm" ? data_dir + "/run-microvm" : data_dir + "/run";
}

Result<RunBackend> MakeRunBackend(const std::string& name, const std::string& data_dir,
                                  const std::string& sandboxd) {
  RunBackend out;
  out.state_dir = RunStateDir(name, data_dir);
  if (name == "ns") {
    ASB_ASSIGN_OR_RETURN(out.backend,
                         isolation::ns::MakeNsBackend(RunBackendOptions(data_dir, sandboxd)));
    return out;
  }
  if (name != "microvm") {
    return Fail(Error::InvalidArgument("--backend: unknown backend \"" + name +
                                       "\"; run knows ns and microvm"));
  }
  const isolation::microvm::MicrovmOptions mo =
      MicrovmOptionsFor(data_dir, sandboxd, out.state_dir, "agent-sandbox-run-vm");
  ASB_ASSIGN_OR_RETURN(out.backend, isolation::microvm::MakeMicrovmBackend(mo));
  return out;
}

Result<std::unique_ptr<RunClaim>> RunClaim::Start(const std::string& data_dir,
                                                  const std::string& backend,
                                                  const std::string& id) {
  std::unique_ptr<RunClaim> c(new RunClaim());
  const std::string state_dir = RunStateDir(backend, data_dir);
  if (::mkdir(state_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailErrno("mkdir " + state_dir);
  }
  c->path_ = OwnerPath(state_dir, id);
  // Locked under a temporary name, then renamed: a sweeper never sees an unlocked claim.
  const std::string temp = c->path_ + ".tmp";
  c->lock_ = UniqueFd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!c->lock_) return FailErrno("create " + temp);
  if (::flock(c->lock_.get(), LOCK_EX) != 0) return FailErrno("flock " + temp);
  auto start = isolation::ns::ProcessStartTime(::getpid());
  std::string line = std::to_string(::getpid()) + " " + std::to_string(start ? *start : 0) + "\n";
  if (!WriteAll(c->lock_.get(), line.data(), line.size())) return FailErrno("write " + temp);
  if (::rename(temp.c_str(), c->path_.c_str()) != 0) return FailErrno("rename " + temp);

  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return FailErrno("pipe");
  UniqueFd done_r(p[0]);
  c->done_w_ = UniqueFd(p[1]);
  // Everything the child needs is made before fork: it only calls async-signal-safe functions
  // (run has threads by now). It waits as a plain fork of run and execs `run-watch` only once
  // there is a sandbox to destroy, so loading this executable again (~5 ms of a CPU) is never
  // on the path of a run that is still going; its one argument left open is what the pipe said.
  const int lock_num = c->lock_.get();
  const int pipe_num = done_r.get();
  std::string lock_fd = std::to_string(lock_num);
  std::string event = "?";  // rewritten in place by the child: kWatchEventHandOff or ...Died
  std::vector<std::string> args = {"agent-sandbox", "run-watch", "--data-dir", data_dir,
                                   "--backend",     backend,     "--id",       id,
                                   "--lock-fd",     lock_fd,     "--event",    event};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* const event_arg = argv[argv.size() - 2];
  pid_t pid = ::fork();
  if (pid < 0) return FailErrno("fork watcher");
  if (pid == 0) {
    ::setsid();  // out of run's process group and terminal
    ::prctl(PR_SET_NAME, "run-watch");
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(s, SIG_IGN);
    // Only the claim's lock and the pipe's read end stay: run's other fds (the pipe's write
    // end, whose copy would hide run's death, a uid range's lock, its sandbox's socket) are
    // not the watcher's to hold.
    const unsigned lo = static_cast<unsigned>(std::min(lock_num, pipe_num));
    const unsigned hi = static_cast<unsigned>(std::max(lock_num, pipe_num));
    ::syscall(SYS_close_range, 3u, lo - 1, 0u);
    ::syscall(SYS_close_range, lo + 1, hi - 1, 0u);
    ::syscall(SYS_close_range, hi + 1, ~0u, 0u);
    ::fcntl(lock_num, F_SETFD, 0);
    // Not even stderr: a caller that reads run's output to its end must not wait for the
    // watcher, which may outlive run (HandOff). A destroy it cannot finish leaves the claim,
    // which the next run or serve sweeps (and logs).
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      ::dup2(null, STDIN_FILENO), ::dup2(null, STDOUT_FILENO), ::dup2(null, STDERR_FILENO);
    }
    char byte = 0;
    ssize_t n;
    while ((n = ::read(pipe_num, &byte, 1)) < 0 && errno == EINTR) {
    }
    if (n == 1 && byte == 'd') ::_exit(0);  // run cleaned up itself
    // run handed the teardown over ('h': its command ended and its exit code is out), or died
    // (EOF): either way the sandbox is ours to destroy.
    event_arg[0] = n == 1 && byte == 'h' ? kWatchEventHandOff : kWatchEventDied;
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  c->watcher_ = pid;
  return c;
}

bool RunClaim::HandOff() {
  // A watcher that is gone (killed) cannot take it: the write fails (EPIPE; SIGPIPE is ignored
  // by run) and the caller destroys the sandbox itself, as before.
  if (!done_w_ || ::write(done_w_.get(), "h", 1) != 1) return false;
  done_w_.Reset();
  path_.clear();  // the watcher removes it after the destroy
  watcher_ = -1;  // and outlives us: init reaps it
  return true;
}

RunClaim::~RunClaim() {
  // The sandbox is gone (the caller destroyed it): drop the claim, then tell the watcher.
  if (!path_.empty()) ::unlink(path_.c_str());
  if (done_w_) (void)!::write(done_w_.get(), "d", 1);
  done_w_.Reset();
  if (watcher_ > 0) {
    while (::waitpid(watcher_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

int RemoveDeadRunLeftovers(isolation::Backend& backend, const std::string& state_dir) {
  DIR* d = ::opendir(state_dir.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > kOwnerSuffix.size() && n.ends_with(kOwnerSuffix)) names.push_back(n);
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& n : names) {
    std::string id = n.substr(0, n.size() - kOwnerSuffix.size());
    if (!IsValidId(id, "sb_")) continue;
    std::string path = state_dir + "/" + n;
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) continue;
    // Held by a live run or its watcher: not a leftover.
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;
    if (ClaimantRuns(fd.get())) continue;  // belt and braces: the named run still runs
    spdlog::info("removing sandbox {} of a run that died (pid {})", id, ClaimedPid(fd.get()));
    if (auto st = backend.Destroy(id); !st) {
      spdlog::warn("leftover sandbox {}: {}", id, st.error().detail());
      continue;
    }
    ::unlink(path.c_str());
    ++removed;
  }
  return removed;
}

void RemoveDeadRunLeftovers(const std::string& data_dir, const std::string& sandboxd) {
  for (std::string_view name : kRunBackends) {
    // No run of this backend ever used this data dir: nothing to make a backend for.
    if (::access(RunStateDir(std::string(name), data_dir).c_str(), F_OK) != 0) continue;
    auto run = MakeRunBackend(std::string(name), data_dir, sandboxd);
    if (!run) {
      spdlog::warn("run leftovers ({}): {}", name, run.error().detail());
      continue;
    }
    RemoveDeadRunLeftovers(*run->backend, run->state_dir);
  }
}

namespace {

struct WatchFlags {
  std::string data_dir, backend = "ns", id, event;
  int lock_fd = -1;
};

// The watcher, exec'd by RunClaim's child once run handed its sandbox over or died (`event`
// says which; the destroy is the same): destroys the sandbox and removes the claim.
int Watch(const WatchFlags& f) {
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(s, SIG_IGN);
  UniqueFd lock(f.lock_fd);  // shared with run: the claim stays held while we live
  ::fcntl(f.lock_fd, F_SETFD, FD_CLOEXEC);
  if (f.event == std::string(1, kWatchEventDied)) {
    spdlog::info("run-watch: the run of sandbox {} died; destroying it", f.id);
  }
  auto sandboxd = FindSandboxd();
  auto run = MakeRunBackend(f.backend, f.data_dir, sandboxd ? *sandboxd : "");
  if (!run) return ReportError(run.error().WithContext("run-watch"));
  if (auto st = run->backend->Destroy(f.id); !st) {
    return ReportError(st.error().WithContext("run-watch: destroy " + f.id));
  }
  ::unlink(OwnerPath(run->state_dir, f.id).c_str());
  return 0;
}

}  // namespace

void RegisterRunWatchCommand(CLI::App& app) {
  auto f = std::make_shared<WatchFlags>();
  CLI::App* sub = app.add_subcommand("run-watch", "");  // hidden: started by run itself
  sub->group("");
  sub->add_option("--data-dir", f->data_dir)->required();
  sub->add_option("--backend", f->backend);
  sub->add_option("--id", f->id)->required();
  sub->add_option("--lock-fd", f->lock_fd)->required();
  sub->add_option("--event", f->event)->required();
  SetAction(sub, [f] { return Watch(*f); });
}

}  // namespace asb::cli
