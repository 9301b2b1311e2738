// Operation: one protocol operation (exec, file.read, ...) running on one channel of a host
// connection. The connection routes the channel's incoming frames to it; the operation sends
// frames back through the helpers below and ends with exactly one terminal frame (RESULT or
// ERROR), after which the connection destroys it (deferred, never while its methods run).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/error.h"
#include "protocol/frame.h"

namespace asb::sandboxd {

class Connection;
class Daemon;

class Operation {
 public:
  Operation(Daemon& daemon, Connection& conn, uint32_t channel)
      : daemon_(daemon), conn_(conn), channel_(channel) {}
  virtual ~Operation() = default;
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  /// Begins the operation; may finish it at once (e.g. a synchronous file.stat).
  virtual void Start() = 0;

  // Host frames for this channel. Defaults ignore them (protocol section 5); DATA that an
  // operation does not consume is credited back at once (flow-control rule 5).
  virtual void OnData(std::string&& bytes);
  virtual void OnEof() {}
  virtual void OnWindow(protocol::Stream stream, uint32_t bytes) {}
  virtual void OnSignal(int signo) {}
  virtual void OnResize(uint16_t cols, uint16_t rows) {}
  /// CANCEL: stop, clean up, end with ERROR cancelled. Default: just the ERROR.
  virtual void OnCancel();
  /// The connection is gone: release everything, send nothing. Called once, before the
  /// destructor, only if the operation had not finished.
  virtual void Abandon() {}

  /// Called by the connection when it goes away: Abandon(), then the operation counts as
  /// finished, so deferred work that checks finished() stops and nothing more is sent.
  void AbandonByConnection() {
    if (finished_) return;
    Abandon();
    finished_ = true;
  }

  bool finished() const { return finished_; }
  uint32_t channel() const { return channel_; }

 protected:
  /// Sends DATA (caller respects the stream's window and kDataChunkSize).
  void SendData(protocol::Stream stream, std::string_view bytes);
  void SendEof(protocol::Stream stream);
  /// Grants the host `bytes` more stdin window.
  void SendWindow(uint32_t bytes);
  void SendInfo(const std::string& json);
  /// Terminal: RESULT with `json`, then the operation is destroyed after the current batch.
  void Succeed(const std::string& json);
  /// Terminal: ERROR, then destroyed after the current batch.
  void FailWith(const Error& error);

  Daemon& daemon_;
  Connection& conn_;
  const uint32_t channel_;

 private:
  bool finished_ = false;
};

}  // namespace asb::sandboxd
