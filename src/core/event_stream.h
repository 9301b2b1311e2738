// EventStream: a running operation's events as core hands them to the layers above (a streamed
// exec, a process attachment, a streamed file read or write). It wraps one channel to the
// sandbox's sandboxd and decodes what sandboxd sends into core's types, so api/ and mcp/ relay
// events without knowing the sandbox protocol (ADR 0018).
//
// Events, in order: kOutput chunks of stdout/stderr and each stream's kEnd; for a process
// attachment kInfo events with skipped_bytes; then exactly one terminal
// event: kDone (with exec_result, process or file as the operation has one) or kError.
// Flow control is the channel's: a reader that stops reading stops the producer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "core/sandbox_types.h"

namespace asb::core {

enum class OutputStream { kStdout, kStderr };

struct StreamEvent {
  enum class Kind {
    kOutput,  // `data` holds bytes of `stream`
    kEnd,     // `stream` ended
    kInfo,    // `skipped_bytes`, or `process` where sandboxd sends its state (see ProcessAttach)
    kDone,    // terminal: the operation finished; see exec_result / process / file
    kError,   // terminal: `error` says why (also when the sandbox went away)
  };
  Kind kind = Kind::kOutput;
  OutputStream stream = OutputStream::kStdout;
  std::string data;
  /// kInfo of an attachment: output bytes the replay ring no longer held (0 = none).
  uint64_t skipped_bytes = 0;
  std::optional<ExecResult> exec_result;  // kDone of an exec (oom_killed filled in)
  std::optional<ProcessInfo> process;     // kInfo/kDone of a process attachment
  std::optional<FileStat> file;           // kDone of a file write
  std::optional<Error> error;             // kError

  bool terminal() const { return kind == Kind::kDone || kind == Kind::kError; }
};

class EventStream {
 public:
  virtual ~EventStream() = default;

  /// Waits up to `timeout_ms` milliseconds (-1 = forever) for the next event. Errors: kTimeout
  /// when nothing came in time; kConflict after the terminal event.
  virtual Result<StreamEvent> Next(int64_t timeout_ms = -1) = 0;
  /// The next event if one is queued, without waiting.
  virtual std::optional<StreamEvent> TryNext() = 0;
  /// Registers a callback run whenever an event is queued or the write window opens (nullptr
  /// clears it). It runs on the connection's reader thread and must not block.
  virtual void SetNotify(std::function<void()> notify) = 0;

  /// Writes to the operation's input (a command's stdin, a file being uploaded), waiting for
  /// window up to `timeout_ms` (-1 = forever). Errors: kTimeout, kConflict (ended), kBackend.
  virtual Status Write(std::string_view data, int64_t timeout_ms = -1) = 0;
  /// Writes as much as the window allows now; returns the count accepted (0: wait for notify).
  virtual Result<size_t> TryWrite(std::string_view data) = 0;
  /// Ends the input (EOF on stdin, the end of an upload).
  virtual Status CloseWrite() = 0;
  /// Sends signal `signo` to the command's process group.
  virtual Status Signal(int signo) = 0;
  /// Resizes the command's terminal, in columns and rows.
  virtual Status Resize(uint16_t cols, uint16_t rows) = 0;
  /// Abandons the operation (a command's process group is killed); a terminal event follows.
  virtual Status Cancel() = 0;
};

}  // namespace asb::core
