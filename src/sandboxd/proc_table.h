// ProcTable: sandboxd's table of background processes (ADR 0011; protocol "proc.*" ops in
// docs/design/sandbox-protocol.md). Unlike an exec, a background process belongs to the daemon,
// not to the channel or the connection that started it: it keeps running when they go away,
// and any later connection can list it, attach to its output, write to its stdin, signal,
// resize or kill it.
//
// Per process sandboxd keeps its output in a bounded ring (the last ring_bytes bytes, default
// 256 KiB, at most 4 MiB) which attachers replay from and follow. The process is never slowed
// by its attachers: output is read as it comes; an attacher whose host does not keep up (its
// window stays closed while the ring moves past its position) skips the lost bytes and is told
// how many ({"skipped":N}). Stdin is a pipe (or the PTY) fed through a bounded queue: at most
// kMaxStdinQueue bytes may wait for a process that does not read, and kStdinBudgetBytes for all
// of them together; more is limit_exceeded.
//
// Bounds: at most kMaxRunning running processes (more: limit_exceeded); exited processes stay
// listed with their exit code, the kMaxExitedKept most recent ones (older are forgotten).
// Ring memory is bounded per daemon too: the sum of the ring caps of every kept process
// (starting, running or exited) stays within kRingBudgetBytes. A start whose ring does not fit
// first forgets exited processes oldest-first; if running ones alone leave no room it is
// limit_exceeded (REST 429). Caps, not current fill, are counted, so the bound holds however
// the rings fill: a ring's memory, bookkeeping included, stays within 1.125 x ring_bytes +
// 256 (output in many small pieces, e.g. interleaved stdout/stderr writes, keeps fewer bytes).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "protocol/proc_messages.h"
#include "sandboxd/pipes.h"

namespace asb::sandboxd {

class Daemon;

/// Implemented by proc.attach operations: told when the process has more output or exited.
class ProcWatcher {
 public:
  virtual ~ProcWatcher() = default;
  virtual void OnProcOutput() = 0;
  virtual void OnProcExit() = 0;
};

class BgProcess final : public OutputPipe::Owner {
 public:
  BgProcess(Daemon& daemon, protocol::ProcInfo info, uint64_t ring_cap);
  ~BgProcess() override;
  BgProcess(const BgProcess&) = delete;
  BgProcess& operator=(const BgProcess&) = delete;

  const protocol::ProcInfo& info() const { return info_; }
  int pid() const { return info_.pid; }
  bool running() const { return info_.state == "running"; }

  /// Offsets are counts of output bytes since the start (both streams, in arrival order).
  uint64_t ring_start() const { return ring_start_; }
  uint64_t total() const { return info_.output_bytes; }
  /// Output total when the leader exited (attachers end there); valid once !running().
  uint64_t exit_total() const { return exit_total_; }
  /// The bytes at `offset` up to the end of their chunk (offset in [ring_start, total)).
  /// The view is valid until the ring next changes.
  std::string_view Peek(uint64_t offset, protocol::Stream* stream) const;

  void AddWatcher(ProcWatcher* w) { watchers_.insert(w); }
  void RemoveWatcher(ProcWatcher* w) { watchers_.erase(w); }

  /// Queues bytes for stdin. Errors: kConflict (no stdin, or closed), kLimitExceeded (more
  /// than kMaxStdinQueue bytes would wait).
  Status WriteStdin(std::string&& bytes);
  /// EOF for stdin (with a PTY: ^D, the terminal's end of input). Errors: kConflict.
  Status CloseStdin();
  /// Errors: kConflict (no PTY, or exited).
  Status Resize(uint16_t cols, uint16_t rows);
  /// kill(-pid, signo): the process group. Errors: kConflict (exited).
  Status Signal(int signo);
  /// Adds the sessions the leader's descendants created (setsid) to the kill list.
  void NoteSessions();
  /// SIGKILLs the process's session and every noted session once; returns how many live
  /// processes were signalled (0: the tree is gone).
  int KillTreeOnce();

 private:
  friend class ProcTable;
  struct Chunk {
    uint64_t offset;
    protocol::Stream stream;
    std::string bytes;
  };

  // OutputPipe::Owner
  uint64_t Keepable(protocol::Stream stream) override;
  void Deliver(protocol::Stream stream, std::string_view kept, size_t read) override;
  void Closed(protocol::Stream stream) override;

  /// Takes the launched command's fds and starts reading its output.
  void Attach(UniqueFd stdout_read, UniqueFd stderr_read, UniqueFd stdin_write, UniqueFd pty);
  void OnLeaderExit(int status, int64_t now_ms);
  /// Gives still-open output pipes (held by descendants) to the daemon's void drain.
  void ReleasePipes();
  /// The table forgets this exited process: its ring is freed at once, even while attachers
  /// still hold it (they are told what they skipped and end), so that forgotten rings cannot
  /// outlive the ring budget; output still coming goes to the void drain.
  void Forget();

  Daemon& daemon_;
  protocol::ProcInfo info_;
  uint64_t ring_cap_;
  uint64_t ring_start_ = 0;
  uint64_t ring_kept_ = 0;
  uint64_t exit_total_ = 0;
  std::deque<Chunk> ring_;
  std::unique_ptr<OutputPipe> out_[3];
  std::unique_ptr<InputPipe> in_;
  uint64_t stdin_queued_ = 0;
  UniqueFd pty_master_;
  std::vector<pid_t> sessions_;  // escaped sessions, killed with the process's own
  std::set<ProcWatcher*> watchers_;
};

class ProcTable {
 public:
  static constexpr size_t kMaxRunning = 256;
  static constexpr size_t kMaxExitedKept = 64;
  static constexpr uint64_t kMaxStdinQueue = 1 << 20;
  static constexpr size_t kMaxTagBytes = 256;
  /// Total ring capacity (bytes) of all kept processes. sandboxd's memory is charged to the
  /// sandbox cgroup, whose limit is the work limit + kDaemonMemoryHeadroom (32 MiB,
  /// isolation/ns/cgroup.h): half of that headroom is left for rings so that output a tenant
  /// cannot free never OOM-kills the daemon (ADR 0014; security review W2).
  static constexpr uint64_t kRingBudgetBytes = 16 << 20;
  /// Stdin bytes that may wait in sandboxd for all processes together (each at most
  /// kMaxStdinQueue): 256 processes x 1 MiB also OOM-killed sandboxd. Rings (16 MiB, x1.125)
  /// and this stay well inside the 32 MiB headroom.
  static constexpr uint64_t kStdinBudgetBytes = 4 << 20;

  explicit ProcTable(Daemon& daemon) : daemon_(daemon) {}
  ~ProcTable();

  using StartDone = std::function<void(Result<protocol::ProcInfo>)>;
  /// Launches the process; `done` runs once the program was exec'd (with its info) or failed
  /// to start (ERROR as for exec: not_found for a missing cwd, ...). Validation errors are
  /// returned at once and `done` is not called.
  Status Start(const protocol::ProcStartRequest& req, StartDone done);
  /// Every listed process, in start order.
  std::vector<protocol::ProcInfo> List() const;
  /// The process `pid` (a running one before an exited one of the same pid). Errors:
  /// kNotFound.
  Result<std::shared_ptr<BgProcess>> Find(int pid) const;
  /// Stdin bytes waiting in sandboxd for all listed processes.
  uint64_t StdinQueued() const;

 private:
  struct Starting {
    std::shared_ptr<BgProcess> proc;
    UniqueFd error_fd;
    StartDone done;
  };
  void OnStartReport(int pid);
  void OnExit(const std::shared_ptr<BgProcess>& p, int status);
  void Trim();
  /// Makes room for a new ring of `cap` bytes within kRingBudgetBytes by forgetting exited
  /// processes oldest-first. Errors: kLimitExceeded (running ones alone leave no room; then
  /// nothing is forgotten).
  Status ReserveRing(uint64_t cap);

  Daemon& daemon_;
  std::vector<std::shared_ptr<BgProcess>> procs_;  // listed, in start order
  std::vector<Starting> starting_;
};

}  // namespace asb::sandboxd
