// Seed A's wire format (vivek1504/agent-sandbox: src/routes/exec.ts, the guest's
// minimal-rootfs/runtime/runtime.js, sdk/typescript/src/session.ts), shared by the seed A routes
// of api/handlers_seed_a.cc:
//   a result    {exitCode, signal?, duration} (+ ours: timedOut, truncated); exitCode is -1
//               and signal a name ("SIGKILL") when a signal ended the command, as node's
//               child_process reports it; signal is absent when it exited
//   a stream    application/x-ndjson, one line per output chunk as it arrives,
//               {"type":"stream","stream":"stdout"|"stderr","data":"...","ts":<unix ms>},
//               then exactly one {"type":"result",...the result} or {"type":"error",
//               "error":"message","code":"..."}; a blank line after keepalive_ms of quiet
//               (seed A's SDK skips blank lines; a reader learns the connection is alive)
//   an error    {"error":"message","code":"not_found"}: seed A's {"error": string} (its SDK
//               takes `error` as the message of its SandboxError) plus our error code
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "api/http_types.h"
#include "api/router.h"
#include "common/clock.h"
#include "core/sandbox_manager.h"

namespace asb::api {

/// Adds seed A's result fields of `r` to `o` (see the file comment).
void AddSeedAResult(const core::ExecResult& r, boost::json::object* o);

/// A StreamBody of seed A's framing over a started exec; `clock` stamps each chunk's ts and
/// must outlive the body. Cancel() (the client went away) cancels the command.
std::shared_ptr<StreamBody> MakeSeedAExecStreamBody(core::ExecStream exec, int64_t keepalive_ms,
                                                    const Clock& clock);

/// The JSON text {"error":"<message>","code":"<code>"}.
std::string SeedAErrorJson(std::string_view code, std::string_view message);

/// `inner` with every route under /exec answering its errors in seed A's shape: an answer of
/// status >= 400 in our shape {"error":{"code","message"}} is rewritten (status and headers
/// kept). Wraps the auth layer's router, so 401, 403 and 429 are rewritten too.
Router WithSeedAErrorShape(const Router& inner);

}  // namespace asb::api
