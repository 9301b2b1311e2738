// Private to core/: the sandboxd request of a command, shared by exec, background processes and
// PTYs (exec_service.cc, process_service.cc), so that they apply one set of rules.
#pragma once

#include "common/result.h"
#include "core/config.h"
#include "core/sandbox_registry.h"
#include "core/sandbox_types.h"
#include "core/template_defaults.h"
#include "protocol/messages.h"

namespace asb::core {

/// How an exec's output reaches its caller, which decides its default output cap.
enum class ExecDelivery {
  /// Collected in memory and answered at the end: each stream keeps at most
  /// min(o.max_output_bytes, lim.max_exec_output_bytes) and flags what it dropped.
  kCollected,
  /// Streamed to a reader with flow control (the channel's window is the backpressure): no cap
  /// unless the caller asks for one with o.max_output_bytes, which is then honoured as given.
  kStreamed,
};

/// The sandboxd request of an exec: command/argv, env, workdir and user checked, timeout and
/// output cap from `lim` and `delivery`. An empty o.workdir / o.user takes `defaults` (the
/// sandbox's, SandboxInfo::default_workdir/default_user): the one place exec, background
/// processes and PTYs get them. Errors: kInvalidArgument naming the field.
Result<protocol::ExecRequest> BuildExecRequest(const Limits& lim, const ExecOptions& o,
                                               const CommandDefaults& defaults,
                                               ExecDelivery delivery = ExecDelivery::kCollected);
/// The command defaults recorded for the sandbox of `e`.
CommandDefaults DefaultsOf(const Entry& e);

}  // namespace asb::core
