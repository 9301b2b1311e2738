// The messages of the background-process operations (ADR 0011; docs/design/sandbox-protocol.md,
// section 7 "proc.*"): a process table kept by sandboxd, whose entries outlive the channel and
// the connection that started them. Kept apart from messages.h so that other operations can be
// added there without touching these.
//
//   proc.start        OPEN ProcStartRequest; RESULT ProcInfo (once the program was exec'd).
//   proc.list         OPEN {}; INFO {"processes":[ProcInfo...]}...; RESULT {"count"}.
//   proc.attach       OPEN ProcAttachRequest; INFO ProcInfo; DATA stdout/stderr (replay, then
//                     live); INFO {"skipped":N} when this attacher fell behind the ring; host
//                     DATA stdin (if "stdin":true) goes to the process; at its exit: EOF both,
//                     RESULT ProcInfo. CANCEL detaches (the process keeps running).
//   proc.stdin        OPEN ProcPidRequest; host DATA stdin...; EOF; RESULT {"bytes":N}.
//   proc.close_stdin  OPEN ProcPidRequest; RESULT {}.
//   proc.signal       OPEN ProcSignalRequest; RESULT {}: the signal goes to the process group.
//   proc.kill         OPEN ProcPidRequest; RESULT ProcInfo once no process of its tree is left.
//   proc.resize       OPEN ProcResizeRequest; RESULT {}.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "protocol/messages.h"

namespace asb::protocol {

/// Ring buffer of a process's output: default and largest size, bytes.
inline constexpr uint64_t kProcRingDefaultBytes = 256 * 1024;
inline constexpr uint64_t kProcRingMaxBytes = 4 * 1024 * 1024;

struct ProcStartRequest {
  /// As ExecRequest: exactly one of argv / command ("/bin/sh -c command").
  std::vector<std::string> argv;
  std::optional<std::string> command;
  std::map<std::string, std::string> env;
  std::string cwd = "/workspace";
  std::string user = kUserSandbox;
  /// Free-form label shown in listings (at most 256 bytes).
  std::string tag;
  /// false: stdin is /dev/null. true: a pipe fed by proc.stdin / proc.attach with stdin.
  bool stdin_pipe = false;
  /// Bytes of recent output kept for replay (0 = kProcRingDefaultBytes; at most
  /// kProcRingMaxBytes).
  uint64_t ring_bytes = 0;
  /// Run on a pseudo-terminal (its input is the stdin pipe, always present then).
  std::optional<ExecRequest::Pty> pty;
};

/// One entry of the process table.
struct ProcInfo {
  int pid = 0;  // in the sandbox's pid namespace
  std::string tag;
  std::vector<std::string> argv;  // as requested (empty when `command` was given)
  std::optional<std::string> command;
  int64_t started_at_ms = 0;  // Unix epoch milliseconds
  int64_t ended_at_ms = 0;    // 0 while running
  std::string state;          // "running" or "exited"
  int exit_code = -1;         // exit status or 128+signal; -1 while running
  int signal = 0;             // terminating signal, 0 if it exited
  bool pty = false;
  bool stdin_open = false;    // a stdin pipe exists and has not been closed
  uint64_t output_bytes = 0;  // bytes the process has written so far (both streams)
};

struct ProcAttachRequest {
  int pid = 0;
  /// Replay up to this many bytes of the most recent output before going live (0 = none).
  uint64_t replay_bytes = 0;
  /// Host DATA stdin on this channel goes to the process's stdin (WebSocket terminals).
  bool stdin = false;
};

/// proc.stdin, proc.close_stdin and proc.kill.
struct ProcPidRequest {
  int pid = 0;
};

struct ProcSignalRequest {
  int pid = 0;
  int signal = 0;  // 1..64
};

struct ProcResizeRequest {
  int pid = 0;
  uint16_t cols = 80;
  uint16_t rows = 24;
};

std::string EncodeProcStartRequest(const ProcStartRequest& m);  // op "proc.start"
Result<ProcStartRequest> DecodeProcStartRequest(std::string_view json);
std::string EncodeProcInfo(const ProcInfo& m);
Result<ProcInfo> DecodeProcInfo(std::string_view json);
/// INFO payload of proc.list: {"processes":[...]}.
std::string EncodeProcInfoList(const std::vector<ProcInfo>& procs);
Result<std::vector<ProcInfo>> DecodeProcInfoList(std::string_view json);
std::string EncodeProcAttachRequest(const ProcAttachRequest& m);  // op "proc.attach"
Result<ProcAttachRequest> DecodeProcAttachRequest(std::string_view json);
/// `op` is one of "proc.stdin", "proc.close_stdin", "proc.kill".
std::string EncodeProcPidRequest(std::string_view op, const ProcPidRequest& m);
Result<ProcPidRequest> DecodeProcPidRequest(std::string_view json);
std::string EncodeProcSignalRequest(const ProcSignalRequest& m);  // op "proc.signal"
Result<ProcSignalRequest> DecodeProcSignalRequest(std::string_view json);
std::string EncodeProcResizeRequest(const ProcResizeRequest& m);  // op "proc.resize"
Result<ProcResizeRequest> DecodeProcResizeRequest(std::string_view json);

}  // namespace asb::protocol
