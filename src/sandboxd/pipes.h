// The two pipe pumps shared by exec and tar operations, both non-blocking and driven by the
// event loop:
//   OutputPipe  a command's stdout/stderr (or a tar writer) -> DATA frames, under the host's
//               flow-control window and the operation's output caps;
//   InputPipe   host DATA frames (stdin, an uploaded tar) -> a pipe, granting the host window
//               as bytes enter the pipe (docs/design/sandbox-protocol.md, section 6).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "protocol/frame.h"
#include "sandboxd/event_loop.h"

namespace asb::sandboxd {

class OutputPipe {
 public:
  /// What the owning operation decides and receives.
  class Owner {
   public:
    virtual ~Owner() = default;
    /// How many more bytes of `stream` may be kept (sent); UINT64_MAX when uncapped. Bytes
    /// beyond it are read and discarded.
    virtual uint64_t Keepable(protocol::Stream stream) = 0;
    /// `kept` is to be sent as DATA (may be empty); `read` counts every byte read.
    virtual void Deliver(protocol::Stream stream, std::string_view kept, size_t read) = 0;
    /// The pipe reached EOF (or a read error) and has been closed.
    virtual void Closed(protocol::Stream stream) = 0;
  };

  OutputPipe(EventLoop& loop, protocol::Stream stream, UniqueFd fd, Owner* owner);
  ~OutputPipe();
  OutputPipe(const OutputPipe&) = delete;
  OutputPipe& operator=(const OutputPipe&) = delete;

  /// Makes the fd non-blocking and starts watching it.
  Status Start();
  /// The host granted `bytes` more window.
  void AddWindow(uint64_t bytes);
  /// Reads what may be read now (bounded per call for fairness) and updates the poll set.
  void Pump();
  /// True after EOF/close.
  bool closed() const { return !fd_; }
  /// True if the pipe is still open but holds no unread bytes right now (FIONREAD).
  bool Empty() const;
  /// Bytes waiting in the pipe right now (FIONREAD); 0 when closed.
  size_t Available() const;
  /// Stops watching and gives the fd away (to be drained into the void).
  UniqueFd Detach();

 private:
  void UpdateInterest();

  EventLoop& loop_;
  protocol::Stream stream_;
  UniqueFd fd_;
  Owner* owner_;
  uint64_t window_ = protocol::kInitialWindow;
  bool watching_ = false;
  uint32_t interest_ = 0;
};

class InputPipe {
 public:
  /// `grant(n)` is called as n bytes enter the pipe (or are discarded because the reader is
  /// gone); the operation turns it into a WINDOW frame.
  InputPipe(EventLoop& loop, UniqueFd fd, std::function<void(uint32_t)> grant);
  ~InputPipe();
  InputPipe(const InputPipe&) = delete;
  InputPipe& operator=(const InputPipe&) = delete;

  /// Queues bytes for the pipe and writes what fits now.
  void Write(std::string&& bytes);
  /// EOF from the host: close the pipe once the queue is written.
  void CloseWhenDrained();
  /// Closes the pipe now, crediting whatever is still queued.
  void CloseNow();
  bool closed() const { return !fd_; }

 private:
  void Drain();
  void SetWatch(bool want);

  EventLoop& loop_;
  UniqueFd fd_;
  std::function<void(uint32_t)> grant_;
  std::deque<std::string> queue_;
  size_t front_pos_ = 0;
  bool eof_ = false;
  bool watching_ = false;
  bool broken_ = false;  // the reader closed its end (EPIPE): discard from now on
};

}  // namespace asb::sandboxd
