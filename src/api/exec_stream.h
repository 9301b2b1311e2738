// The NDJSON body of POST /v1/sandboxes/{id}/exec/stream (ADR 0007):
// one JSON object per line, in the order the command wrote:
//   {"type":"stdout","data":"..."}  {"type":"stderr","data":"..."}
//   {"type":"keepalive"}            after stream_keepalive_ms of quiet
//   {"type":"exit","exit_code":0,"signal":0,"timed_out":false,"duration_ms":12,
//    "oom_killed":false,"pids_limited":false,"truncated":false,"stdout_truncated":false,
//    "stderr_truncated":false}   exactly one, last; truncated = either stream was cut
//   {"type":"error","code":"backend_error","message":"..."}  instead of exit, if it failed
// Text is UTF-8 with invalid bytes replaced and characters never split across events (each
// stream has its own Utf8Stream); with encoding "base64" data is base64 of the raw bytes.
#pragma once

#include <memory>

#include "api/http_types.h"
#include "core/sandbox_manager.h"

namespace asb::api {

/// A StreamBody over a started exec. Cancel() (the client went away) cancels the command.
std::shared_ptr<StreamBody> MakeExecStreamBody(core::ExecStream exec, bool base64,
                                               int64_t keepalive_ms);

}  // namespace asb::api
