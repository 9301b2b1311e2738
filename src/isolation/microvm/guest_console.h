// The guest's serial console, read by the server into memory of a fixed size
// (docs/adr/0025-microvm-backend.md). QEMU offers the console on a unix socket (a socket
// chardev): a file would grow without bound, since root in the guest can write to its console
// forever. Here the server keeps only what it needs: the last bytes (for error messages and
// the log), the last line carrying each mark it looks for (a kernel panic, our init's failure)
// and a count of the guest kernel's OOM kills. Nothing reads the rest, so a flood costs the
// host a bounded buffer and the reading; when the server does not read (between a restart and
// the adoption of the VM), QEMU drops what the guest writes or stalls the guest's UART, never
// the host.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.h"
#include "common/unique_fd.h"

namespace asb::isolation::microvm {

/// What the console's lines said so far. Pure: fed bytes in any split, it finds the same.
/// Guest text throughout: the guest can forge any line, which only misreports its own VM.
class ConsoleScanner {
 public:
  /// The marks whose last line is kept (LastLine). A line longer than kMaxLine is judged by
  /// its first kMaxLine bytes (the kernel prints every mark near a line's start).
  static constexpr std::string_view kPanicMark = "Kernel panic - not syncing:";
  static constexpr std::string_view kInitFailureMark = "asb-init:";
  /// The guest kernel's OOM kill line (mm/oom_kill.c: "Out of memory: Killed process N" and
  /// "Memory cgroup out of memory: Killed process N"; KERN_ERR, so `quiet` still prints it).
  static constexpr std::string_view kOomKillMark = "ut of memory: Killed process";
  static constexpr size_t kMaxLine = 1024;
  /// How much of the console's end is kept (Tail).
  static constexpr size_t kTailBytes = 64 << 10;

  /// Takes the next bytes of the console.
  void Feed(std::string_view bytes);
  /// The last complete line that contained `mark` (kPanicMark or kInitFailureMark), from the
  /// mark to the line's end, at most 200 bytes, without trailing CR or spaces; "" if none.
  std::string LastLine(std::string_view mark) const;
  uint64_t oom_kills() const { return oom_kills_; }
  uint64_t bytes_seen() const { return bytes_seen_; }
  /// The console's last bytes (at most kTailBytes).
  std::string Tail() const;

 private:
  void EndLine();

  std::string line_;  // the line being read, up to kMaxLine bytes
  std::string last_panic_, last_init_failure_;
  std::string tail_;  // grows to 2 * kTailBytes, then keeps its last kTailBytes
  uint64_t oom_kills_ = 0;
  uint64_t bytes_seen_ = 0;
};

/// Reads one VM's console socket on a thread of its own until QEMU closes it (the VM ended) or
/// this object is destroyed. Thread-safe.
class GuestConsole {
 public:
  /// Connects to QEMU's console socket at `path` (QEMU listens; a refused connect is retried
  /// until `timeout_ms` passes, as QEMU binds a moment before it listens) and starts reading.
  /// Errors: kTimeout, or the connect's errno.
  static Result<std::unique_ptr<GuestConsole>> Connect(const std::string& path, int64_t timeout_ms);
  /// Reads `fd` (a connected stream socket; owned from here).
  explicit GuestConsole(UniqueFd fd);
  ~GuestConsole();  // stops reading (shutdown of the socket) and joins the thread
  GuestConsole(const GuestConsole&) = delete;
  GuestConsole& operator=(const GuestConsole&) = delete;

  /// See ConsoleScanner. Each returns what was read so far.
  std::string LastLine(std::string_view mark) const;
  uint64_t oom_kills() const;
  uint64_t bytes_seen() const;
  /// The last non-empty line of the console ("no output" when there is none), at most 200
  /// bytes: guest text for error messages.
  std::string LastOutputLine() const;
  /// Waits until the reader saw the socket's end (QEMU exited) or `timeout_ms` passed; true on
  /// the end. So that a VM's last words are read before its failure is reported.
  bool WaitClosed(int64_t timeout_ms) const;

 private:
  void ReadLoop();

  UniqueFd fd_;
  mutable std::mutex mu_;
  ConsoleScanner scanner_;  // guarded by mu_
  bool closed_ = false;     // guarded by mu_
  mutable std::condition_variable closed_cv_;
  std::thread reader_;  // last: started after every member it uses
};

}  // namespace asb::isolation::microvm
