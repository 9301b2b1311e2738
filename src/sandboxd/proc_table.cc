#include "sandboxd/proc_table.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "common/clock.h"
#include "sandboxd/daemon.h"
#include "sandboxd/launch.h"
#include "sandboxd/proc_scan.h"

namespace asb::sandboxd {

using protocol::Stream;

namespace {
constexpr size_t kMaxChunkBytes = 64 * 1024;  // consecutive output of one stream is merged
// Memory a ring chunk holds beyond its bytes: the Chunk in the deque (48 bytes) and the heap
// block header of its string, rounded up.
constexpr uint64_t kChunkOverhead = 64;
constexpr uint64_t kUnlimitedWindow = 1ull << 62;
constexpr int kExitDrainRounds = 16;

int64_t NowUnixMs() { return SystemClock::Instance().NowUnixMs(); }

// Copies the watcher set: a watcher may remove itself while being told.
template <typename Fn>
void ForEachWatcher(const std::set<ProcWatcher*>& watchers, Fn fn) {
  std::vector<ProcWatcher*> copy(watchers.begin(), watchers.end());
  for (ProcWatcher* w : copy) {
    if (watchers.count(w)) fn(w);
  }
}
}  // namespace

// ---- BgProcess -------------------------------------------------------------------------------

BgProcess::BgProcess(Daemon& daemon, protocol::ProcInfo info, uint64_t ring_cap)
    : daemon_(daemon), info_(std::move(info)), ring_cap_(ring_cap) {}

BgProcess::~BgProcess() {
  if (running()) daemon_.ForgetChild(info_.pid);
  ReleasePipes();
}

void BgProcess::Attach(UniqueFd stdout_read, UniqueFd stderr_read, UniqueFd stdin_write,
                       UniqueFd pty) {
  pty_master_ = std::move(pty);
  UniqueFd fds[3] = {UniqueFd(), std::move(stdout_read), std::move(stderr_read)};
  for (int i = 1; i <= 2; ++i) {
    if (!fds[i]) continue;
    out_[i] = std::make_unique<OutputPipe>(daemon_.loop(), static_cast<Stream>(i),
                                           std::move(fds[i]), this);
    if (!out_[i]->Start()) {
      out_[i].reset();
      continue;
    }
    out_[i]->AddWindow(kUnlimitedWindow);  // a background process never waits for a reader
  }
  if (stdin_write) {
    info_.stdin_open = true;
    in_ = std::make_unique<InputPipe>(daemon_.loop(), std::move(stdin_write), [this](uint32_t n) {
      stdin_queued_ -= std::min<uint64_t>(stdin_queued_, n);
    });
  }
}

uint64_t BgProcess::Keepable(Stream) { return std::numeric_limits<uint64_t>::max(); }

void BgProcess::Deliver(Stream stream, std::string_view kept, size_t) {
  if (kept.empty()) return;
  // Chunks never exceed the ring, and their strings are kept tight (at most 1/8 spare), so
  // that the bytes counted are the memory held (ProcTable::kRingBudgetBytes counts caps).
  const uint64_t chunk_limit = std::min<uint64_t>(kMaxChunkBytes, ring_cap_);
  if (!ring_.empty() && ring_.back().stream == stream &&
      ring_.back().bytes.size() + kept.size() <= chunk_limit) {
    std::string& back = ring_.back().bytes;
    const size_t need = back.size() + kept.size();
    if (need > back.capacity()) {
      std::string grown;
      grown.reserve(static_cast<size_t>(std::min<uint64_t>(chunk_limit, need + need / 8)));
      grown.append(back);
      back.swap(grown);
    }
    back.append(kept);
  } else {
    ring_.push_back(Chunk{info_.output_bytes, stream, std::string(kept)});
  }
  info_.output_bytes += kept.size();
  ring_kept_ += kept.size();
  // Each chunk also costs its bookkeeping: output in many small pieces (interleaved stdout and
  // stderr writes) keeps fewer bytes rather than more memory.
  const uint64_t mem_limit = ring_cap_ + ring_cap_ / 8 + 4 * kChunkOverhead;
  auto over_memory = [&] { return ring_kept_ + ring_.size() * kChunkOverhead > mem_limit; };
  while (!ring_.empty() && (ring_kept_ > ring_cap_ || over_memory())) {
    Chunk& front = ring_.front();
    uint64_t excess = ring_kept_ > ring_cap_ ? ring_kept_ - ring_cap_ : 0;
    if (excess == 0 || excess >= front.bytes.size()) {
      ring_kept_ -= front.bytes.size();
      ring_.pop_front();
    } else {
      front.bytes.erase(0, static_cast<size_t>(excess));
      front.offset += excess;
      ring_kept_ -= excess;
      const size_t size = front.bytes.size();
      if (front.bytes.capacity() > size + size / 8 + kChunkOverhead) {
        std::string(front.bytes).swap(front.bytes);  // give back what the erase freed
      }
    }
  }
  ring_start_ = ring_.empty() ? info_.output_bytes : ring_.front().offset;
  ForEachWatcher(watchers_, [](ProcWatcher* w) { w->OnProcOutput(); });
}

void BgProcess::Closed(Stream) {}

std::string_view BgProcess::Peek(uint64_t offset, Stream* stream) const {
  // Attachers read near the end: search from the back.
  for (auto it = ring_.rbegin(); it != ring_.rend(); ++it) {
    if (offset >= it->offset && offset < it->offset + it->bytes.size()) {
      *stream = it->stream;
      return std::string_view(it->bytes).substr(static_cast<size_t>(offset - it->offset));
    }
  }
  return {};
}

Status BgProcess::WriteStdin(std::string&& bytes) {
  if (!in_ || in_->closed() || !info_.stdin_open) {
    return Fail(Error::Conflict("process " + std::to_string(info_.pid) + " has no open stdin"));
  }
  if (stdin_queued_ + bytes.size() > ProcTable::kMaxStdinQueue) {
    return Fail(Error::LimitExceeded("process " + std::to_string(info_.pid) +
                                     " is not reading its stdin: over 1 MiB waits already"));
  }
  if (uint64_t all = daemon_.procs().StdinQueued();
      all + bytes.size() > ProcTable::kStdinBudgetBytes) {
    return Fail(Error::LimitExceeded("stdin of background processes would exceed " +
                                     std::to_string(ProcTable::kStdinBudgetBytes) +
                                     " bytes waiting in total (" + std::to_string(all) +
                                     " waiting); let the processes read it or close their stdin"));
  }
  stdin_queued_ += bytes.size();
  in_->Write(std::move(bytes));
  if (in_->closed()) info_.stdin_open = false;  // the reader is gone (EPIPE)
  return {};
}

Status BgProcess::CloseStdin() {
  if (!in_ || !info_.stdin_open) {
    return Fail(Error::Conflict("process " + std::to_string(info_.pid) + " has no open stdin"));
  }
  info_.stdin_open = false;
  if (pty_master_) {
    // A terminal has no EOF of its own: ^D ends the line discipline's input (termios(3)).
    stdin_queued_ += 1;
    in_->Write(std::string(1, '\x04'));
  } else {
    in_->CloseWhenDrained();
  }
  return {};
}

Status BgProcess::Resize(uint16_t cols, uint16_t rows) {
  if (!pty_master_) {
    return Fail(Error::Conflict("process " + std::to_string(info_.pid) + " has no terminal"));
  }
  if (!running()) {
    return Fail(Error::Conflict("process " + std::to_string(info_.pid) + " has exited"));
  }
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = rows;
  if (ioctl(pty_master_.get(), TIOCSWINSZ, &ws) != 0) return FailErrno("TIOCSWINSZ");
  return {};
}

Status BgProcess::Signal(int signo) {
  if (!running()) {
    return Fail(Error::Conflict("process " + std::to_string(info_.pid) + " has exited"));
  }
  NoteSessions();
  if (kill(-info_.pid, signo) != 0) return FailErrno("kill");
  return {};
}

void BgProcess::NoteSessions() {
  if (!running()) return;
  for (pid_t sid : DescendantSessions(info_.pid, info_.pid)) {
    if (std::find(sessions_.begin(), sessions_.end(), sid) == sessions_.end()) {
      sessions_.push_back(sid);
    }
  }
}

int BgProcess::KillTreeOnce() {
  NoteSessions();
  int left = 0;
  if (running()) {
    kill(-info_.pid, SIGKILL);
    left += kill(info_.pid, SIGKILL) == 0 ? 1 : 0;
  }
  left += SignalSession(info_.pid, SIGKILL);
  for (pid_t sid : sessions_) left += SignalSession(sid, SIGKILL);
  return left;
}

void BgProcess::OnLeaderExit(int status, int64_t now_ms) {
  // What the process wrote before it exited is in the pipes: take it now.
  for (int i = 1; i <= 2; ++i) {
    for (int round = 0; round < kExitDrainRounds && out_[i] && !out_[i]->closed(); ++round) {
      if (out_[i]->Empty()) break;
      out_[i]->Pump();
    }
  }
  info_.state = "exited";
  info_.ended_at_ms = now_ms;
  if (WIFEXITED(status)) {
    info_.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info_.signal = WTERMSIG(status);
    info_.exit_code = 128 + info_.signal;
  }
  exit_total_ = info_.output_bytes;
  info_.stdin_open = false;
  if (in_) in_->CloseNow();
  ForEachWatcher(watchers_, [](ProcWatcher* w) { w->OnProcExit(); });
}

void BgProcess::ReleasePipes() {
  for (int i = 1; i <= 2; ++i) {
    if (out_[i] && !out_[i]->closed()) daemon_.DrainIntoVoid(out_[i]->Detach());
    out_[i].reset();
  }
  if (in_) in_->CloseNow();
  in_.reset();
}

void BgProcess::Forget() {
  ReleasePipes();
  std::deque<Chunk>().swap(ring_);
  ring_kept_ = 0;
  ring_start_ = info_.output_bytes;
  ForEachWatcher(watchers_, [](ProcWatcher* w) { w->OnProcOutput(); });
}

// ---- ProcTable -------------------------------------------------------------------------------

ProcTable::~ProcTable() {
  for (auto& s : starting_) {
    if (s.error_fd) daemon_.loop().Remove(s.error_fd.get());
  }
}

Status ProcTable::Start(const protocol::ProcStartRequest& req, StartDone done) {
  if (req.tag.size() > kMaxTagBytes) {
    return Fail(Error::InvalidArgument("proc.start: tag is longer than 256 bytes"));
  }
  if (req.ring_bytes > protocol::kProcRingMaxBytes) {
    return Fail(Error::InvalidArgument("proc.start: ring_bytes is over 4 MiB"));
  }
  size_t running = starting_.size();
  for (const auto& p : procs_) running += p->running() ? 1 : 0;
  if (running >= kMaxRunning) {
    return Fail(Error::LimitExceeded("too many background processes (at most 256 running)"));
  }
  const uint64_t ring_cap = req.ring_bytes ? req.ring_bytes : protocol::kProcRingDefaultBytes;
  ASB_TRY(ReserveRing(ring_cap));
  protocol::ExecRequest exec;
  exec.argv = req.argv;
  exec.command = req.command;
  exec.env = req.env;
  exec.cwd = req.cwd;
  exec.user = req.user;
  exec.stdin_pipe = req.stdin_pipe;
  exec.pty = req.pty;
  ASB_ASSIGN_OR_RETURN(LaunchedCommand l, LaunchCommand(daemon_, exec));

  protocol::ProcInfo info;
  info.pid = l.pid;
  info.tag = req.tag;
  info.argv = req.argv;
  info.command = req.command;
  info.started_at_ms = NowUnixMs();
  info.state = "running";
  info.pty = req.pty.has_value();
  auto proc = std::make_shared<BgProcess>(daemon_, std::move(info), ring_cap);
  std::weak_ptr<BgProcess> weak = proc;
  daemon_.WatchChild(l.pid, [this, weak](int status) {
    if (auto p = weak.lock()) OnExit(p, status);
  });
  proc->Attach(std::move(l.stdout_read), std::move(l.stderr_read), std::move(l.stdin_write),
               std::move(l.pty_master));
  int pid = l.pid;
  int efd = l.error_fd.get();
  starting_.push_back(Starting{proc, std::move(l.error_fd), std::move(done)});
  if (auto st = daemon_.loop().Add(efd, EPOLLIN, [this, pid](uint32_t) { OnStartReport(pid); });
      !st) {
    starting_.pop_back();
    proc->KillTreeOnce();
    daemon_.KillSessionUntilGone(pid);
    return st;
  }
  return {};
}

void ProcTable::OnStartReport(int pid) {
  auto it = std::find_if(starting_.begin(), starting_.end(),
                         [pid](const Starting& s) { return s.proc->pid() == pid; });
  if (it == starting_.end()) return;
  Starting s = std::move(*it);
  starting_.erase(it);
  daemon_.loop().Remove(s.error_fd.get());
  std::optional<Error> failure = ReadChildFailure(s.error_fd.get());
  if (failure) {
    // The child exits on its own (125); it is reaped and ignored.
    daemon_.ForgetChild(pid);
    s.proc->info_.state = "exited";  // so that ~BgProcess does not forget it again
    s.done(Fail(*failure));
    return;
  }
  // A process of the same pid that exited earlier is no longer addressable: forget it.
  auto reused = [pid](const auto& p) { return p->pid() == pid && !p->running(); };
  for (const auto& p : procs_) {
    if (reused(p)) p->Forget();
  }
  procs_.erase(std::remove_if(procs_.begin(), procs_.end(), reused), procs_.end());
  procs_.push_back(s.proc);
  s.done(s.proc->info());
}

void ProcTable::OnExit(const std::shared_ptr<BgProcess>& p, int status) {
  p->OnLeaderExit(status, NowUnixMs());
  Trim();
}

void ProcTable::Trim() {
  size_t exited = 0;
  for (const auto& p : procs_) exited += p->running() ? 0 : 1;
  for (auto it = procs_.begin(); exited > kMaxExitedKept && it != procs_.end();) {
    if (!(*it)->running()) {
      (*it)->Forget();
      it = procs_.erase(it);
      --exited;
    } else {
      ++it;
    }
  }
}

Status ProcTable::ReserveRing(uint64_t cap) {
  uint64_t pinned = 0;  // rings of starting and running processes: cannot be forgotten
  uint64_t exited = 0;
  for (const auto& s : starting_) pinned += s.proc->ring_cap_;
  for (const auto& p : procs_) (p->running() ? pinned : exited) += p->ring_cap_;
  if (pinned + cap > kRingBudgetBytes) {
    return Fail(Error::LimitExceeded(
        "output buffers of background processes would exceed " + std::to_string(kRingBudgetBytes) +
        " bytes (" + std::to_string(pinned) +
        " in use by running processes); use a smaller ring_bytes or stop running processes"));
  }
  for (auto it = procs_.begin(); pinned + exited + cap > kRingBudgetBytes && it != procs_.end();) {
    if ((*it)->running()) {
      ++it;
      continue;
    }
    exited -= (*it)->ring_cap_;
    (*it)->Forget();
    it = procs_.erase(it);
  }
  return {};
}

uint64_t ProcTable::StdinQueued() const {
  uint64_t all = 0;
  for (const auto& p : procs_) all += p->stdin_queued_;
  return all;
}

std::vector<protocol::ProcInfo> ProcTable::List() const {
  std::vector<protocol::ProcInfo> out;
  out.reserve(procs_.size());
  for (const auto& p : procs_) out.push_back(p->info());
  return out;
}

Result<std::shared_ptr<BgProcess>> ProcTable::Find(int pid) const {
  std::shared_ptr<BgProcess> found;
  for (const auto& p : procs_) {
    if (p->pid() != pid) continue;
    if (p->running()) return p;
    found = p;
  }
  if (found) return found;
  return Fail(Error::NotFound("process " + std::to_string(pid) + " not found"));
}

}  // namespace asb::sandboxd
