// The host side of the sandbox protocol: one Connection per sandbox (a connected stream socket
// to its sandboxd), carrying many concurrent operations, each on its own Channel.
//
// Threading: a Connection owns one reader thread that demultiplexes incoming frames into the
// channels' queues. Channel methods are thread-safe. A consumer either blocks in Next(), or
// registers a notifier (called from the reader thread, must not block) and drains with
// TryNext() — the second style is how the asio-based API layer integrates without tying up a
// thread per stream.
//
// Flow control (docs/design/sandbox-protocol.md): each data stream starts with
// kInitialWindow bytes of credit. Incoming DATA is queued; when the consumer takes it out of the
// queue the connection returns the credit to sandboxd (batched, at half a window). A consumer
// that stops reading therefore stalls only its own channel. Outgoing DATA (stdin, uploads)
// waits for credit granted by sandboxd.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace asb::protocol {

/// One thing that happened on a channel, in arrival order.
struct ChannelEvent {
  enum class Kind {
    kData,    // `payload` holds bytes of `stream`
    kEof,     // `stream` ended
    kInfo,    // `payload` holds INFO JSON
    kResult,  // `payload` holds RESULT JSON; terminal
    kError,   // `error` holds the operation's error; terminal (also when the connection dies)
  };
  Kind kind = Kind::kData;
  Stream stream = Stream::kNone;
  std::string payload;
  std::optional<Error> error;
  bool terminal() const { return kind == Kind::kResult || kind == Kind::kError; }
};

class Connection;

class Channel {
 public:
  virtual ~Channel() = default;
  virtual uint32_t id() const = 0;

  /// Waits for the next event, up to `timeout_ms` milliseconds (-1 = forever). Errors:
  /// kTimeout when nothing arrived in time. After a terminal event, further calls return
  /// kConflict ("channel closed").
  virtual Result<ChannelEvent> Next(int64_t timeout_ms = -1) = 0;
  /// Returns the next event if one is queued, without waiting.
  virtual std::optional<ChannelEvent> TryNext() = 0;
  /// Registers a callback run (on the reader thread) whenever an event is queued or write
  /// window opens. It must not block; typically it posts a wake-up to an executor.
  virtual void SetNotify(std::function<void()> notify) = 0;

  /// Sends bytes on `stream` (normally kStdin), waiting for window as needed, up to
  /// `timeout_ms` (-1 = forever). Errors: kTimeout, kBackend (connection lost), kConflict
  /// (channel already closed).
  virtual Status Write(std::string_view data, int64_t timeout_ms = -1) = 0;
  /// Sends as much of `data` as the current window allows without waiting; returns the count
  /// accepted (0 when the window is closed — wait for the notifier and try again).
  virtual Result<size_t> TryWrite(std::string_view data) = 0;
  /// Sends EOF on stdin (closes the command's stdin / ends an upload).
  virtual Status CloseWrite() = 0;
  /// Delivers a signal (e.g. SIGTERM) to the exec's process group.
  virtual Status Signal(int signo) = 0;
  /// Resizes the exec's PTY.
  virtual Status Resize(uint16_t cols, uint16_t rows) = 0;
  /// Asks sandboxd to abandon the operation (an exec's process group is killed). The channel
  /// still ends with a terminal event.
  virtual Status Cancel() = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;

  /// Performs the HELLO handshake on `fd` (a connected SOCK_STREAM socket) within
  /// `timeout_ms` milliseconds and starts the reader thread. Errors: kBackend (no common
  /// version, malformed answer, connection closed), kTimeout.
  static Result<std::shared_ptr<Connection>> Establish(UniqueFd fd, int64_t timeout_ms);

  /// Connects to a unix socket at `path` and then Establish()es. Errors as Establish, plus
  /// kNotFound/kUnavailable when nothing listens there.
  static Result<std::shared_ptr<Connection>> Dial(const std::string& path, int64_t timeout_ms);

  /// Opens a channel with an OPEN frame carrying `open_json` ({"op": ..., ...}).
  /// Errors: kBackend when the connection is down.
  virtual Result<std::shared_ptr<Channel>> Open(std::string_view open_json) = 0;

  /// The protocol version agreed in the handshake, and the peer's software string.
  virtual uint32_t version() const = 0;
  virtual const std::string& peer_software() const = 0;

  /// False once the connection is lost (sandboxd died or closed it). All open channels then
  /// end with a kError event of code kBackend.
  virtual bool alive() const = 0;

  /// Bytes read from sandboxd since the handshake, any channel's. A peer whose count moves is
  /// alive even while one answer waits (the microvm backend's heartbeat: a guest busy starting
  /// 200 commands is slow, not hung).
  virtual uint64_t bytes_received() const = 0;

  /// Closes the connection; open channels end with kError (kCancelled).
  virtual void Close() = 0;
};

// ---- convenience calls built on channels (client_ops.cc) -------------------------------------

/// A finished exec with its output collected in memory.
struct CollectedExec {
  ExecResult result;
  std::string stdout_data;
  std::string stderr_data;
};

/// Runs `req` to completion and collects its output (honouring the request's caps). `stdin_data`
/// is written then closed when req.stdin_pipe is true. Errors: those of sandboxd (kNotFound for
/// a missing cwd, ...), kBackend if the connection is lost. `abandoned` (optional) is polled
/// every 200 ms: once true (the caller went away) the exec is cancelled (sandboxd kills its
/// session) and the result is kCancelled.
Result<CollectedExec> ExecCollect(Connection& conn, const ExecRequest& req,
                                  std::string_view stdin_data = {},
                                  const std::atomic<bool>* abandoned = nullptr);

/// Reads a whole file into memory. Errors: kNotFound, kInvalidArgument (a directory), ...
Result<std::string> ReadFile(Connection& conn, const FileReadRequest& req);
/// Writes `data` as a whole file (atomically unless req.append). Returns the new file's stat.
Result<FileStat> WriteFile(Connection& conn, const FileWriteRequest& req, std::string_view data);
/// Collects a listing. Enforces req.max_entries (kLimitExceeded) and req.max_bytes (kTooLarge,
/// ListingBytes summed) itself too, so a hostile sandboxd cannot make the host hold more.
Result<std::vector<FileStat>> ListFiles(Connection& conn, const FileListRequest& req);
Result<FileStat> StatFile(Connection& conn, const FileStatRequest& req);
Result<FileStat> MakeDir(Connection& conn, const FileMkdirRequest& req);
Status RemoveFile(Connection& conn, const FileRemoveRequest& req);
Result<FileStat> MoveFile(Connection& conn, const FileMoveRequest& req);
/// Kills every process in the sandbox except sandboxd. Returns how many were killed.
Result<uint64_t> KillAll(Connection& conn);

}  // namespace asb::protocol
