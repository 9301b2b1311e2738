// The WebSocket of GET /v1/sandboxes/{id}/processes/{pid}/ws (ADR 0011): a terminal for a
// background process, both directions on one connection.
//
// Server -> client:
//   binary frames   the process's output bytes, raw (stdout and stderr in arrival order; a PTY
//                   has one stream)
//   text frames     JSON events: {"type":"skipped","bytes":N} (this reader fell behind),
//                   {"type":"exit","exit_code":0,"signal":0} (then the server closes with 1000),
//                   {"type":"error","code":"...","message":"..."} (then close 1000)
// Client -> server:
//   binary frames   bytes for the process's stdin (discarded if it has no open stdin)
//   text frames     JSON control messages:
//                   {"type":"resize","cols":120,"rows":40}   PTY size, each in [1, 10000]
//                   {"type":"signal","signal":"SIGINT"}      to the process group
//                   {"type":"stdin","data":"text"}            text for stdin
//                   {"type":"close_stdin"}                    EOF (^D on a PTY)
//                   anything else closes the WebSocket with 1008 and the reason.
// Closing the WebSocket detaches; the process keeps running. Replay: ?replay_bytes=N.
#pragma once

#include <memory>

#include "api/http_types.h"
#include "core/sandbox_manager.h"

namespace asb::api {

std::shared_ptr<WebSocketSession> MakeProcWebSocket(core::ProcessAttach attach);

}  // namespace asb::api
