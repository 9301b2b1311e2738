// Connection: one host connection accepted on the listen socket. It owns the frame decoder,
// the HELLO handshake, the channel table (channel id -> Operation) and the outgoing byte queue,
// and enforces the protocol's connection-level rules (docs/design/sandbox-protocol.md,
// sections 3-6): odd, strictly increasing channel ids; frame direction and stream checks;
// the host's stdin windows; at most kMaxChannels concurrent operations.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/unique_fd.h"
#include "protocol/frame.h"
#include "sandboxd/operation.h"

namespace asb::sandboxd {

class Daemon;

class Connection {
 public:
  /// Concurrent operations per connection; more OPENs get ERROR limit_exceeded (section 9).
  static constexpr size_t kMaxChannels = 1024;

  Connection(Daemon& daemon, UniqueFd fd);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Registers the socket with the event loop.
  Status Start();

  /// Queues one frame for sending (flushed after the current batch of events).
  void SendFrame(uint32_t channel, protocol::FrameType type, protocol::Stream stream,
                 std::string_view payload);
  /// Called by an operation after its terminal frame: forgets the channel and destroys the
  /// operation once the current batch of events is done.
  void FinishChannel(uint32_t channel);
  /// Records that `bytes` of stdin window were granted to the host on `channel`.
  void GrantedStdin(uint32_t channel, uint32_t bytes);

  /// Bytes queued but not yet written to the socket.
  size_t queued() const { return out_.size() - out_pos_; }

 private:
  struct ChannelState {
    std::unique_ptr<Operation> op;
    uint64_t stdin_window = protocol::kInitialWindow;  // what the host may still send
  };

  void OnEvents(uint32_t events);
  void ReadSome();
  void Flush();
  void ScheduleFlush();
  void HandleFrame(protocol::Frame&& f);
  void HandleHello(const protocol::Frame& f);
  void HandleOpen(protocol::Frame&& f);
  /// Drops the connection: abandons every operation; the daemon destroys this object later.
  void Close(std::string_view why);
  void ProtocolError(std::string_view why);

  Daemon& daemon_;
  UniqueFd fd_;
  protocol::FrameDecoder decoder_;
  std::string out_;
  size_t out_pos_ = 0;
  bool flush_scheduled_ = false;
  bool want_write_ = false;
  bool handshake_done_ = false;
  bool closed_ = false;
  uint32_t last_channel_ = 0;
  std::map<uint32_t, ChannelState> channels_;
};

}  // namespace asb::sandboxd
