// Host-side calls for sandboxd's background processes (the proc.* operations of
// proc_messages.h; docs/design/sandbox-protocol.md section 7). Each opens one channel on
// `conn`, waits for its terminal frame (at most kProcAnswerMs) and decodes it. Errors are
// those sandboxd reports (kNotFound: no such process; kConflict: exited, no stdin, no PTY;
// kLimitExceeded: too many processes or a full stdin queue; kInvalidArgument: bad request),
// kBackend when the connection is lost, kTimeout when sandboxd does not answer in time.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "protocol/client.h"
#include "protocol/proc_messages.h"

namespace asb::protocol {

/// How long a proc.* call waits for sandboxd's answer, milliseconds (proc.kill may take up to
/// 10 s of re-scans inside sandboxd).
inline constexpr int64_t kProcAnswerMs = 30'000;

/// Starts a background process; returns once its program was exec'd.
Result<ProcInfo> StartProcess(Connection& conn, const ProcStartRequest& req);
/// The process table (running and recently exited), in start order.
Result<std::vector<ProcInfo>> ListProcesses(Connection& conn);
/// Opens a proc.attach channel: the caller drains INFO ProcInfo, DATA, INFO {"skipped"}, EOF
/// and a terminal RESULT ProcInfo (the process exited) or ERROR; it may Write() stdin when
/// req.stdin, Resize() and Signal(); Cancel() detaches.
Result<std::shared_ptr<Channel>> AttachProcess(Connection& conn, const ProcAttachRequest& req);
/// Writes `data` to the process's stdin. Returns the bytes accepted.
Result<uint64_t> WriteProcessStdin(Connection& conn, int pid, std::string_view data);
Status CloseProcessStdin(Connection& conn, int pid);
Status SignalProcess(Connection& conn, int pid, int signo);
Status ResizeProcess(Connection& conn, int pid, uint16_t cols, uint16_t rows);
/// Kills the process's whole tree; returns its final info once nothing of it is left.
Result<ProcInfo> KillProcess(Connection& conn, int pid);

}  // namespace asb::protocol
