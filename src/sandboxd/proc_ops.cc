#include "sandboxd/proc_ops.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "protocol/proc_messages.h"
#include "sandboxd/daemon.h"
#include "sandboxd/proc_table.h"
#include "sandboxd/sync_op.h"

namespace asb::sandboxd {

using protocol::Stream;

namespace {

constexpr size_t kListBatch = 32;           // ProcInfos per INFO frame of proc.list
constexpr long kKillRescanNs = 10'000'000;  // proc.kill re-scans every 10 ms
constexpr int kKillMaxRounds = 1000;        // ~10 s, then ERROR with what is left

Error BadRequest(const Error& e) { return Error::InvalidArgument(e.detail()); }

template <typename Req>
Result<Req> Decode(Result<Req> r) {
  if (!r) return Fail(BadRequest(r.error()));
  return r;
}

// proc.start: RESULT once the program was exec'd. If the channel goes away first, the process
// still starts and is listed.
class ProcStartOp final : public Operation {
 public:
  ProcStartOp(Daemon& d, Connection& c, uint32_t ch, protocol::ProcStartRequest req)
      : Operation(d, c, ch), req_(std::move(req)), alive_(std::make_shared<bool>(true)) {}
  ~ProcStartOp() override { *alive_ = false; }
  void Start() override {
    std::weak_ptr<bool> alive = alive_;
    auto st = daemon_.procs().Start(req_, [this, alive](Result<protocol::ProcInfo> r) {
      auto a = alive.lock();
      if (!a || !*a || finished()) return;
      if (r) {
        Succeed(protocol::EncodeProcInfo(*r));
      } else {
        FailWith(r.error());
      }
    });
    if (!st) FailWith(st.error());
  }
  void OnCancel() override { FailWith(Error::Cancelled("proc.start cancelled (it still runs)")); }

 private:
  protocol::ProcStartRequest req_;
  std::shared_ptr<bool> alive_;
};

// proc.stdin: host DATA -> the process's stdin queue, credited at once (the queue is bounded).
class ProcStdinOp final : public Operation {
 public:
  ProcStdinOp(Daemon& d, Connection& c, uint32_t ch, int pid) : Operation(d, c, ch), pid_(pid) {}
  void Start() override {
    auto p = daemon_.procs().Find(pid_);
    if (!p) {
      FailWith(p.error());
      return;
    }
    if (!(*p)->info().stdin_open) {
      FailWith(Error::Conflict("process " + std::to_string(pid_) + " has no open stdin"));
      return;
    }
    proc_ = *p;
  }
  void OnData(std::string&& bytes) override {
    uint32_t n = static_cast<uint32_t>(bytes.size());
    if (!failure_) {
      if (auto st = proc_->WriteStdin(std::move(bytes)); !st) {
        failure_ = st.error();
      } else {
        written_ += n;
      }
    }
    SendWindow(n);
  }
  void OnEof() override {
    if (failure_) {
      FailWith(*failure_);
    } else {
      Succeed("{\"bytes\":" + std::to_string(written_) + "}");
    }
  }

 private:
  int pid_;
  std::shared_ptr<BgProcess> proc_;
  uint64_t written_ = 0;
  std::optional<Error> failure_;
};

// proc.attach: replay from the ring, then follow; ends with the process (RESULT ProcInfo).
class ProcAttachOp final : public Operation, public ProcWatcher {
 public:
  ProcAttachOp(Daemon& d, Connection& c, uint32_t ch, protocol::ProcAttachRequest req)
      : Operation(d, c, ch), req_(req) {}
  ~ProcAttachOp() override { Detach(); }

  void Start() override {
    auto p = daemon_.procs().Find(req_.pid);
    if (!p) {
      FailWith(p.error());
      return;
    }
    proc_ = *p;
    uint64_t total = proc_->total();
    uint64_t from = total > req_.replay_bytes ? total - req_.replay_bytes : 0;
    cursor_ = std::max(from, proc_->ring_start());
    SendInfo(protocol::EncodeProcInfo(proc_->info()));
    proc_->AddWatcher(this);
    Pump();
  }
  void OnWindow(Stream s, uint32_t bytes) override {
    window_[static_cast<int>(s)] += bytes;
    Pump();
  }
  void OnData(std::string&& bytes) override {
    uint32_t n = static_cast<uint32_t>(bytes.size());
    if (req_.stdin && proc_ && !finished()) {
      auto st = proc_->WriteStdin(std::move(bytes));
      if (!st && st.error().code() == ErrorCode::kLimitExceeded) {
        SendWindow(n);
        Detach();
        FailWith(st.error());
        return;
      }
    }
    SendWindow(n);  // queued (bounded) or discarded: either way consumed (rule 5)
  }
  void OnEof() override {
    if (req_.stdin && proc_ && proc_->info().stdin_open) (void)proc_->CloseStdin();
  }
  void OnResize(uint16_t cols, uint16_t rows) override {
    if (proc_) (void)proc_->Resize(cols, rows);
  }
  void OnSignal(int signo) override {
    if (proc_) (void)proc_->Signal(signo);
  }
  void OnCancel() override {
    Detach();
    FailWith(Error::Cancelled("detached"));
  }
  void Abandon() override { Detach(); }

  void OnProcOutput() override { Pump(); }
  void OnProcExit() override { Pump(); }

 private:
  void Detach() {
    if (proc_) proc_->RemoveWatcher(this);
  }

  void Pump() {
    if (finished() || !proc_) return;
    if (cursor_ < proc_->ring_start()) {
      uint64_t skipped = proc_->ring_start() - cursor_;
      cursor_ = proc_->ring_start();
      SendInfo("{\"skipped\":" + std::to_string(skipped) + "}");
    }
    uint64_t end = proc_->running() ? proc_->total() : proc_->exit_total();
    while (cursor_ < end) {
      Stream s = Stream::kStdout;
      std::string_view bytes = proc_->Peek(cursor_, &s);
      if (bytes.empty()) break;
      uint64_t& win = window_[static_cast<int>(s)];
      size_t n = static_cast<size_t>(
          std::min<uint64_t>({bytes.size(), win, protocol::kDataChunkSize, end - cursor_}));
      if (n == 0) return;  // wait for WINDOW
      SendData(s, bytes.substr(0, n));
      win -= n;
      cursor_ += n;
    }
    if (!proc_->running() && cursor_ >= end) {
      SendEof(Stream::kStdout);
      SendEof(Stream::kStderr);
      Detach();
      Succeed(protocol::EncodeProcInfo(proc_->info()));
    }
  }

  protocol::ProcAttachRequest req_;
  std::shared_ptr<BgProcess> proc_;
  uint64_t cursor_ = 0;
  uint64_t window_[3] = {0, protocol::kInitialWindow, protocol::kInitialWindow};
};

// proc.kill: SIGKILL the process's session and the sessions its descendants made, again every
// 10 ms, until the leader is reaped and none of them has a live process.
class ProcKillOp final : public Operation {
 public:
  ProcKillOp(Daemon& d, Connection& c, uint32_t ch, int pid) : Operation(d, c, ch), pid_(pid) {}
  ~ProcKillOp() override {
    if (timer_fd_) daemon_.loop().Remove(timer_fd_.get());
  }
  void Start() override {
    auto p = daemon_.procs().Find(pid_);
    if (!p) {
      FailWith(p.error());
      return;
    }
    proc_ = *p;
    if (!proc_->running()) {
      // Its leader is gone; its session may live on (background children), unless the pid
      // was reused by a process now running under that number.
      FinishIfGone(true);
      return;
    }
    timer_fd_.Reset(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (!timer_fd_) {
      FailWith(Error::FromErrno(errno, "proc.kill: timerfd_create"));
      return;
    }
    if (auto st = daemon_.loop().Add(timer_fd_.get(), EPOLLIN, [this](uint32_t) { OnTimer(); });
        !st) {
      FailWith(st.error());
      return;
    }
    itimerspec its{};
    its.it_value.tv_nsec = kKillRescanNs;
    its.it_interval.tv_nsec = kKillRescanNs;
    timerfd_settime(timer_fd_.get(), 0, &its, nullptr);
    proc_->KillTreeOnce();
  }
  void Abandon() override {
    // The tree still dies: hand what is left to the daemon.
    if (proc_) {
      proc_->NoteSessions();
      daemon_.KillSessionUntilGone(pid_);
    }
  }

 private:
  void OnTimer() {
    uint64_t ticks;
    while (read(timer_fd_.get(), &ticks, sizeof ticks) > 0) {
    }
    if (finished()) return;
    FinishIfGone(false);
  }
  void FinishIfGone(bool once) {
    bool pid_reused = false;
    if (!proc_->running()) {
      auto cur = daemon_.procs().Find(pid_);
      pid_reused = cur && (*cur)->running();
    }
    int left = pid_reused ? 0 : proc_->KillTreeOnce();
    if (left == 0 && !proc_->running()) {
      Succeed(protocol::EncodeProcInfo(proc_->info()));
      return;
    }
    if (once) {
      // Exited leader, session still busy: let the daemon finish it off, answer now.
      daemon_.KillSessionUntilGone(pid_);
      Succeed(protocol::EncodeProcInfo(proc_->info()));
      return;
    }
    if (++rounds_ > kKillMaxRounds) {
      FailWith(Error::Internal("proc.kill: processes still alive after 10 s"));
    }
  }

  int pid_;
  std::shared_ptr<BgProcess> proc_;
  UniqueFd timer_fd_;
  int rounds_ = 0;
};

}  // namespace

Result<std::unique_ptr<Operation>> MakeProcOperation(Daemon& d, Connection& c, uint32_t ch,
                                                     std::string_view op, std::string_view json) {
  ProcTable& table = d.procs();
  std::unique_ptr<Operation> out;
  if (op == "proc.start") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcStartRequest(json)));
    out = std::make_unique<ProcStartOp>(d, c, ch, std::move(req));
  } else if (op == "proc.list") {
    out = std::make_unique<SyncOp>(d, c, ch, [&table](SyncOp& self) -> Result<std::string> {
      std::vector<protocol::ProcInfo> all = table.List();
      for (size_t i = 0; i < all.size(); i += kListBatch) {
        std::vector<protocol::ProcInfo> part(
            all.begin() + static_cast<std::ptrdiff_t>(i),
            all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + kListBatch)));
        self.Info(protocol::EncodeProcInfoList(part));
      }
      return "{\"count\":" + std::to_string(all.size()) + "}";
    });
  } else if (op == "proc.attach") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcAttachRequest(json)));
    out = std::make_unique<ProcAttachOp>(d, c, ch, req);
  } else if (op == "proc.stdin") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcPidRequest(json)));
    out = std::make_unique<ProcStdinOp>(d, c, ch, req.pid);
  } else if (op == "proc.close_stdin") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcPidRequest(json)));
    out = std::make_unique<SyncOp>(d, c, ch, [&table, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto p, table.Find(req.pid));
      ASB_TRY(p->CloseStdin());
      return std::string("{}");
    });
  } else if (op == "proc.signal") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcSignalRequest(json)));
    if (req.signal < 1 || req.signal > 64) {
      return Fail(Error::InvalidArgument("proc.signal: signal must be 1..64"));
    }
    out = std::make_unique<SyncOp>(d, c, ch, [&table, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto p, table.Find(req.pid));
      ASB_TRY(p->Signal(req.signal));
      return std::string("{}");
    });
  } else if (op == "proc.resize") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcResizeRequest(json)));
    if (req.cols == 0 || req.rows == 0) {
      return Fail(Error::InvalidArgument("proc.resize: cols and rows must be at least 1"));
    }
    out = std::make_unique<SyncOp>(d, c, ch, [&table, req](SyncOp&) -> Result<std::string> {
      ASB_ASSIGN_OR_RETURN(auto p, table.Find(req.pid));
      ASB_TRY(p->Resize(req.cols, req.rows));
      return std::string("{}");
    });
  } else if (op == "proc.kill") {
    ASB_ASSIGN_OR_RETURN(auto req, Decode(protocol::DecodeProcPidRequest(json)));
    out = std::make_unique<ProcKillOp>(d, c, ch, req.pid);
  } else {
    return Fail(Error::InvalidArgument("unknown op \"" + std::string(op) + "\""));
  }
  return out;
}

}  // namespace asb::sandboxd
