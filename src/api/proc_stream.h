// The NDJSON body of GET /v1/sandboxes/{id}/processes/{pid}/stream (ADR 0011): a background
// process's output from now on (after an optional replay), one JSON object per line:
//   {"type":"stdout","data":"..."}  {"type":"stderr","data":"..."}   (a PTY has only stdout)
//   {"type":"skipped","bytes":N}    this reader fell behind and N bytes of output were lost
//   {"type":"keepalive"}            after stream_keepalive_ms of quiet; there is no idle limit
//   {"type":"exit","exit_code":0,"signal":0}                 when the process has exited; last
//   {"type":"error","code":"backend_error","message":"..."}  instead of exit, if it failed
// Text as in exec streams (api/exec_stream.h): UTF-8 with invalid bytes replaced, never split
// inside a character, or base64 of the raw bytes with encoding=base64. Closing the stream
// detaches; the process keeps running.
#pragma once

#include <memory>

#include "api/http_types.h"
#include "core/sandbox_manager.h"

namespace asb::api {

std::shared_ptr<StreamBody> MakeProcStreamBody(core::ProcessAttach attach, bool base64,
                                               int64_t keepalive_ms);

}  // namespace asb::api
